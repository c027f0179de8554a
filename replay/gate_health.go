package replay

import "context"

// healthGate closes the run's replays while the downstream health probe
// fails; it is skipped when none is configured.
type healthGate struct {
	probe func(context.Context) error
}

func (healthGate) name() string { return GateHealth }

func (h healthGate) decide(ctx context.Context, _ *pass) Gate {
	g := Gate{Name: GateHealth, Decision: GateOpen}
	switch {
	case h.probe == nil:
		g.Decision, g.Detail = GateSkipped, "no health probe configured"
	default:
		if err := h.probe(ctx); err != nil {
			g.Decision, g.Detail = GateClosed, err.Error()
		}
	}
	return g
}
