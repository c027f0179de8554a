package replay

import (
	"encoding/json"
	"fmt"
)

// The stored formats of earlier versions that the engine still reads: a
// run's summary lives in the ledger for the record lifetime, and the next
// run's gates read it, so an upgrade must not lose what the run before it
// wrote.

// UnmarshalJSON reads a route summary, and its replayed keys also under
// "replayedOrders", the name earlier versions stored them under (the next
// run's canary reads them).
func (r *RouteSummary) UnmarshalJSON(b []byte) error {
	type plain RouteSummary // without this method
	var v struct {
		plain
		ReplayedOrders []string `json:"replayedOrders"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("route summary: %w", err)
	}
	*r = RouteSummary(v.plain)
	if r.ReplayedKeys == nil {
		r.ReplayedKeys = v.ReplayedOrders
	}
	return nil
}
