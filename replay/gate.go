package replay

import (
	"context"
	"log/slog"
	"slices"
	"time"
)

// The gates hold replays, never the expiry rescue: health and seal for the
// run (gate_health.go, gate_seal.go), refill and canary for each route
// (gate_refill.go, gate_canary.go; the canary's breaker reads one of two
// signals, breaker.go and signal.go). Each is a value behind [gate]; each
// decision is a [Gate] in the summary and one log line. A new gate is a new
// file: a type with these methods, added where the run or the route builds
// its gates.

// gate is one gate of a run or of a route's pass.
type gate interface {
	// name is the gate's name in the summary ([GateHealth], ...).
	name() string
	// decide returns the gate's decision at the start of pass p; p is nil
	// for the run's gates, decided once before any pass.
	decide(ctx context.Context, p *pass) Gate
}

// watcher is a gate of a route that sees each batch its pass reads and may
// close mid-pass: watch returns why it closes, or "". It is called under
// the run's lock.
type watcher interface {
	watch(ctx context.Context, p *pass, items []*item, now time.Time) string
}

// ender is a gate of a route with work once its pass's workers have ended
// (p.rs.StopReason is set).
type ender interface {
	end(ctx context.Context, p *pass)
}

// gateHistory is how many recent runs the gates look back through.
const gateHistory = 20

// routeRun is the part of an earlier run about one route.
type routeRun struct {
	runID      string
	startedAt  time.Time
	finishedAt time.Time
	rs         *RouteSummary
}

// routeRuns returns the summaries of route in runs (latest first) for which
// want holds, latest first.
func routeRuns(runs []Summary, route string, want func(RouteSummary) bool) []routeRun {
	var out []routeRun
	for _, s := range runs {
		if i := slices.IndexFunc(s.Routes, func(p RouteSummary) bool { return p.Route == route && want(p) }); i >= 0 {
			out = append(out, routeRun{runID: s.RunID, startedAt: s.StartedAt, finishedAt: s.FinishedAt, rs: &s.Routes[i]})
		}
	}
	return out
}

// watch shows a batch's items to the pass's gates, which may close.
// It holds the run's lock.
func (r *run) watch(ctx context.Context, p *pass, items []*item, now time.Time) {
	p.countBack(items)
	for _, g := range p.gates {
		if w, ok := g.(watcher); ok {
			if detail := w.watch(ctx, p, items, now); detail != "" {
				r.tripped(ctx, p, g.name(), detail)
			}
		}
	}
}

// tripped closes the pass's gate name mid-pass (detail says why): from
// then on the route replays nothing.
func (r *run) tripped(ctx context.Context, p *pass, name, detail string) {
	g := Gate{Name: name, Decision: GateClosed, Detail: detail}
	if i := slices.IndexFunc(p.rs.Gates, func(g Gate) bool { return g.Name == name }); i >= 0 {
		p.rs.Gates[i] = g
	}
	r.logGate(ctx, p.route.DLQURL, g)
	p.replayLeft = 0
	p.gated = true
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
