package replay

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// The gates hold replays, never the expiry rescue: health for the run
// (here), refill and canary for each route (refill here, the canary and
// its breaker in breaker.go). Each gate's decision is a [Gate] in the
// summary and one log line.

// gateHistory is how many recent runs the gates look back through.
const gateHistory = 20

// routeRun is the part of an earlier run about one route.
type routeRun struct {
	runID     string
	startedAt time.Time
	rs        *RouteSummary
}

// routeRuns returns the summaries of route in runs (latest first) for which
// want holds, latest first.
func routeRuns(runs []Summary, route string, want func(RouteSummary) bool) []routeRun {
	var out []routeRun
	for _, s := range runs {
		if i := slices.IndexFunc(s.Routes, func(p RouteSummary) bool { return p.Route == route && want(p) }); i >= 0 {
			out = append(out, routeRun{runID: s.RunID, startedAt: s.StartedAt, rs: &s.Routes[i]})
		}
	}
	return out
}

func (r *run) healthGate(ctx context.Context) Gate {
	g := Gate{Name: GateHealth, Decision: GateOpen}
	switch {
	case r.e.opts.Health == nil:
		g.Decision, g.Detail = GateSkipped, "no health probe configured"
	default:
		if err := r.e.opts.Health(ctx); err != nil {
			g.Decision, g.Detail = GateClosed, err.Error()
		}
	}
	return g
}

// sealGate reads the seal key into the run; it closes when the key cannot
// be read (see [GateSeal]).
func (r *run) sealGate(ctx context.Context) Gate {
	key, err := r.e.sealKey(ctx)
	if err != nil {
		return Gate{Name: GateSeal, Decision: GateClosed, Detail: err.Error()}
	}
	r.key = key
	return Gate{Name: GateSeal, Decision: GateOpen}
}

// refillGate closes when the DLQ holds more than RefillThreshold messages
// more than the previous run left in it (its depth at the start, visible and
// in flight, minus what it moved).
func (r *run) refillGate(rs RouteSummary, prev *RouteSummary, prevErr error) Gate {
	g := Gate{Name: GateRefill, Decision: GateOpen}
	switch {
	case prevErr != nil:
		g.Decision, g.Detail = GateClosed, "previous run unknown: "+prevErr.Error()
	case prev == nil:
		g.Detail = "no previous run read this route"
	default:
		left := max(0, prev.Depth+prev.InFlight-prev.Replayed-prev.ParkedTotal()-prev.Recovered-prev.Applied)
		growth := rs.Depth + rs.InFlight - left
		g.Detail = fmt.Sprintf("DLQ grew by %d since the previous run (threshold %d)", growth, r.e.opts.RefillThreshold)
		if growth > r.e.opts.RefillThreshold {
			g.Decision = GateClosed
		}
	}
	return g
}

func (r *run) logGate(ctx context.Context, queue string, g Gate) {
	level := slog.LevelInfo
	if g.Decision == GateClosed || g.Decision == GateLimited {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("runId", r.id), slog.String("gate", g.Name), slog.String("decision", string(g.Decision)), slog.String("reason", g.Detail)}
	if queue != "" {
		attrs = append(attrs, slog.String("queue", queue))
	}
	r.e.opts.Logger.LogAttrs(ctx, level, "replay gate", attrs...)
}
