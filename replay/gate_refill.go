package replay

import (
	"context"
	"fmt"
	"time"
)

// refillGate watches a route's DLQ grow since the previous run (prev, nil
// when no run read the route; prevErr, why the recent runs are unknown).
type refillGate struct {
	threshold int // Options.RefillThreshold
	prev      *RouteSummary
	prevErr   error
}

func (refillGate) name() string { return GateRefill }

// decide closes when the previous run is unknown. When the DLQ holds more
// than the threshold more messages than the previous run left in it (its
// depth at the start, visible and in flight, minus what it moved), it stays
// open but watches the pass: it closes once more than the threshold of
// them are replays that came back, almost all of their runs' (see watch).
// A burst of new dead letters (one producer's failing messages, say) does
// not hold the replay of the others: the canary judges their replays.
func (f refillGate) decide(_ context.Context, p *pass) Gate {
	g := Gate{Name: GateRefill, Decision: GateOpen}
	rs, limit, prev := p.rs, f.threshold, f.prev
	switch {
	case f.prevErr != nil:
		g.Decision, g.Detail = GateClosed, "previous run unknown: "+f.prevErr.Error()
	case prev == nil:
		g.Detail = "no previous run read this route"
	default:
		left := max(0, prev.Depth+prev.InFlight-prev.Replayed-prev.ParkedTotal()-prev.Recovered-prev.Applied)
		growth := rs.Depth + rs.InFlight - left
		g.Detail = fmt.Sprintf("DLQ grew by %d since the previous run (threshold %d)", growth, limit)
		if growth > limit {
			p.refill = true
			g.Detail += fmt.Sprintf("; it closes if more than %d of them are replays back, almost all of their runs'", limit)
		}
	}
	return g
}

// watch closes the refill gate of a pass that watches the DLQ's growth
// once more than the threshold of replays came back since the previous
// run, and they are almost all (three quarters: see [broken]) of the
// replays of the runs they came from: the replays fail en masse. The first
// returns of a burst of one kind of failure are a share of their run's,
// and the canary judges them.
func (f refillGate) watch(_ context.Context, p *pass, _ []*item, _ time.Time) string {
	if !p.refill || p.gated {
		return ""
	}
	n, seen, replayed := p.backSince()
	if n > f.threshold && broken(replayed, replayed-seen) {
		p.refill = false
		return fmt.Sprintf("%d replays came back to the DLQ since the previous run (threshold %d), %d of the %d their runs replayed", n, f.threshold, seen, replayed)
	}
	return ""
}
