package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/homingdlq/homing/settings"
)

// Limits of a [Request]'s rate, as settings.Rate declares them (3000: SQS
// FIFO batched throughput per action). Read them; never assign.
var (
	MinRate = settings.Rate.Min
	MaxRate = settings.Rate.Max
)

// MaxVisibility is SQS's longest visibility timeout.
const MaxVisibility = 12 * time.Hour

// ErrInvalidRequest is wrapped by [Engine.Run] when the request is invalid;
// nothing has been done then.
var ErrInvalidRequest = errors.New("replay: invalid request")

// Route is one dead-letter queue with its source and parking queues, all of
// the same type (FIFO when the URLs end in settings.FIFOSuffix, ".fifo").
type Route struct {
	Name       string `json:"name"`
	DLQURL     string `json:"dlqUrl"`
	SourceURL  string `json:"sourceUrl"`
	ParkingURL string `json:"parkingUrl"`
}

// FIFO reports whether the route's queues are FIFO queues.
func (r Route) FIFO() bool { return settings.IsFIFO(r.DLQURL) }

// Validate reports every missing URL, a mix of queue types, and a name
// empty or longer than 256 bytes (the name travels in the metadata the
// engine seals, which must stay within its bounds to verify: see seal.go).
func (r Route) Validate() error {
	var errs []error
	switch {
	case r.Name == "":
		errs = append(errs, errors.New("route without a name"))
	case len(r.Name) > settings.MaxRouteNameBytes:
		errs = append(errs, fmt.Errorf("route name of %d bytes: want at most %d", len(r.Name), settings.MaxRouteNameBytes))
	}
	for _, f := range [...]struct{ key, url string }{{"dlqUrl", r.DLQURL}, {"sourceUrl", r.SourceURL}, {"parkingUrl", r.ParkingURL}} {
		switch {
		case f.url == "":
			errs = append(errs, fmt.Errorf("route %q: %s is required", r.Name, f.key))
		case settings.IsFIFO(f.url) != r.FIFO():
			errs = append(errs, fmt.Errorf("route %q: %s %s: all queues of a route must be FIFO, or none", r.Name, f.key, f.url))
		}
	}
	return errors.Join(errs...)
}

// Filter selects the messages an on-demand run considers; the zero value
// selects all. Every non-empty criterion must match.
type Filter struct {
	Reasons   []string      // the message's reason: ours, the invalid lane's, or ReasonDeadLettered
	OlderThan time.Duration // dead-lettered at least this long ago
	OrderIDs  []string      // the body's orderId
}

type filterJSON struct {
	Reasons   []string `json:"reasons,omitempty"`
	OlderThan string   `json:"olderThan,omitempty"`
	OrderIDs  []string `json:"orderIds,omitempty"`
}

// MarshalJSON writes OlderThan as a Go duration string ("1h0m0s").
func (f Filter) MarshalJSON() ([]byte, error) {
	j := filterJSON{Reasons: f.Reasons, OrderIDs: f.OrderIDs}
	if f.OlderThan != 0 {
		j.OlderThan = f.OlderThan.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads OlderThan as a Go duration string ("90m"). Unknown
// fields are an error: a misspelt criterion must not widen a run.
func (f *Filter) UnmarshalJSON(b []byte) error {
	var j filterJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	*f = Filter{Reasons: j.Reasons, OrderIDs: j.OrderIDs}
	if j.OlderThan != "" {
		d, err := time.ParseDuration(j.OlderThan)
		if err != nil {
			return fmt.Errorf("olderThan %q: not a duration like 90m or 24h", j.OlderThan)
		}
		f.OlderThan = d
	}
	return nil
}

func (f Filter) empty() bool { return len(f.Reasons) == 0 && f.OlderThan == 0 && len(f.OrderIDs) == 0 }

func (f Filter) match(m message, now time.Time) bool {
	return (len(f.Reasons) == 0 || slices.Contains(f.Reasons, m.reason)) &&
		(f.OlderThan == 0 || now.Sub(m.firstDeadLettered()) >= f.OlderThan) &&
		(len(f.OrderIDs) == 0 || m.orderID != "" && slices.Contains(f.OrderIDs, m.orderID))
}

// MaxFilterValues bounds each list of a [Filter].
const MaxFilterValues = 100

// Request is one run.
type Request struct {
	Routes []Route
	DryRun bool    // decide and report, move and write nothing
	Max    int     // cap on messages moved (replayed + parked); 0 means Options.MaxPerRun
	Rate   float64 // messages sent per second; 0 means Options.Rate
	Filter Filter
	RunID  string // "" means a random id
	// ResetCount restarts the replay count of every message the run
	// examines: the count in its metadata and the order's earlier replays
	// in the ledger are ignored, and the metadata sent records the reset
	// (Metadata.ResetAt), so later runs count only the replays after it.
	// For an operator who fixed the cause of messages that exhausted their
	// replays and brings them back from the parking queue.
	ResetCount bool
}

// Validate reports every problem of the request.
func (r Request) Validate() error {
	var errs []error
	if len(r.Routes) == 0 {
		errs = append(errs, errors.New("no routes"))
	}
	names := map[string]bool{}
	for _, rt := range r.Routes {
		if err := rt.Validate(); err != nil {
			errs = append(errs, err)
		}
		if names[rt.Name] {
			errs = append(errs, fmt.Errorf("route %q appears twice", rt.Name))
		}
		names[rt.Name] = true
	}
	if r.Max < 0 {
		errs = append(errs, fmt.Errorf("max %d: want >= 0", r.Max))
	}
	if r.Rate != 0 && (r.Rate < MinRate || r.Rate > MaxRate || math.IsNaN(r.Rate)) {
		errs = append(errs, fmt.Errorf("rate %g: want %g..%g messages per second", r.Rate, MinRate, MaxRate))
	}
	if r.Filter.OlderThan < 0 {
		errs = append(errs, fmt.Errorf("filter olderThan %s: want >= 0", r.Filter.OlderThan))
	}
	if len(r.RunID) > 128 {
		errs = append(errs, errors.New("runId longer than 128 characters"))
	}
	// The filter is part of the run's summary, a DynamoDB item of at most
	// 400 KB: its lists are bounded.
	for name, list := range map[string][]string{"orderIds": r.Filter.OrderIDs, "reasons": r.Filter.Reasons} {
		if len(list) > MaxFilterValues {
			errs = append(errs, fmt.Errorf("filter %s: %d values, want at most %d", name, len(list), MaxFilterValues))
		}
		if i := slices.IndexFunc(list, func(v string) bool { return len(v) > MaxKeyID }); i >= 0 {
			errs = append(errs, fmt.Errorf("filter %s: value %d is %d bytes, want at most %d", name, i, len(list[i]), MaxKeyID))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}
