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

// sealGate reads the seal keys into the run; it closes when no key can be
// read (see [GateSeal]), and says what the run cannot do with the keys it
// has.
func (r *run) sealGate(ctx context.Context) Gate {
	keys, err := r.e.sealKeys(ctx)
	if err != nil {
		return Gate{Name: GateSeal, Decision: GateClosed, Detail: err.Error()}
	}
	r.key = keys.sealer
	return Gate{Name: GateSeal, Decision: GateOpen, Detail: keys.note}
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

// canaryGate limits the replays of a route while some keys the latest
// replaying run (replayed[0]) sent back have not completed, and keeps the
// route's [Breaker]: closed while it is open and no probe is due. On a
// route whose consumer writes no completion records it reads nothing and
// is skipped.
func (r *run) canaryGate(ctx context.Context, p *pass, replayed []routeRun, last *RouteSummary, prevErr error) Gate {
	switch {
	case !p.route.Records:
		return r.dlqGate(p, noRecords)
	case r.e.opts.Completions == nil:
		return Gate{Name: GateCanary, Decision: GateSkipped, Detail: "no completions reader configured"}
	}
	p.rs.BreakerSignal = SignalCompletions
	in := r.canaryInput(ctx, replayed, prevErr)
	if last != nil && last.RecordsMissing && in.completed <= 0 {
		// The consumer consumes the replays but records none: the route
		// runs as one without records until a replayed key completes.
		p.rs.RecordsMissing = true
		p.rs.Unrecorded = last.Unrecorded
		p.rs.RecordsMissingDetail = r.recordsGone(p)
		r.warnRecordsMissing(ctx, p)
		return r.dlqGate(p, p.rs.RecordsMissingDetail)
	}
	if g, held := r.breakerGate(p, in); held {
		return g
	}
	switch {
	case len(replayed) == 0 && prevErr == nil:
		return Gate{Name: GateCanary, Decision: GateOpen, Detail: in.why}
	case in.completed < 0:
		return r.limited(in.why)
	case in.completed == len(in.keys):
		return Gate{Name: GateCanary, Decision: GateOpen, Detail: fmt.Sprintf("all %d keys replayed by the previous run completed", len(in.keys))}
	case in.completed == 0:
		p.suspects = r.suspects(ctx, replayed)
		// Held with no completion: evidence of missing records, unless
		// the replays come back to the DLQ (see noteUnrecorded).
		p.unrecorded = len(in.keys) >= minEvidence
	}
	return r.limited(fmt.Sprintf("%d of %d keys replayed by the previous run have not completed", len(in.keys)-in.completed, len(in.keys)))
}

// canary is what the canary gate reads: the latest replaying run's keys,
// and how many of them completed (-1: unknown, why says why).
type canary struct {
	latest    routeRun // the latest replaying run; zero when none
	probe     bool     // it was a probe of the open breaker
	keys      []string
	completed int
	why       string
}

// canaryInput reads the completions of the latest replaying run's keys.
func (r *run) canaryInput(ctx context.Context, replayed []routeRun, prevErr error) canary {
	in := canary{completed: -1}
	switch {
	case prevErr != nil:
		in.why = "previous run unknown: " + prevErr.Error()
		return in
	case len(replayed) == 0:
		in.why = "the previous run replayed no keys on this route"
		return in
	}
	in.latest, in.probe, in.keys = replayed[0], replayed[0].rs.Probe, replayed[0].rs.ReplayedKeys
	done, err := r.e.opts.Completions.Completed(ctx, in.keys)
	if err != nil {
		in.why = "cannot read completions: " + err.Error()
		return in
	}
	in.completed = 0
	for _, id := range in.keys {
		if _, ok := done[id]; ok {
			in.completed++
		}
	}
	return in
}

// limited is the canary gate limiting the route to CanaryLimit replays.
func (r *run) limited(detail string) Gate {
	return Gate{Name: GateCanary, Decision: GateLimited, Detail: detail, Limit: r.e.opts.CanaryLimit}
}

// breakerGate moves the route's open breaker on what the canary read: it
// closes when a replayed key completed, or when its probe found too few
// keys to be evidence; otherwise it holds the route (held) until a probe
// is due, then limits it to the probe.
func (r *run) breakerGate(p *pass, in canary) (g Gate, held bool) {
	b := p.rs.Breaker
	if b == nil || !b.Open {
		return Gate{}, false
	}
	switch {
	case in.completed > 0, in.completed == 0 && in.probe && len(in.keys) < minEvidence:
		// A replay completed: the system works again. Or the probe found
		// fewer keys to replay than the evidence of an outage needs, and
		// they failed: no evidence either way (as for a run that replayed
		// a single key), so that messages failing on their own are parked
		// after their replays instead of being held behind probes that
		// only they answer.
		b.close()
		return Gate{}, false
	}
	// No completion since it opened (or none can be seen): it stays open,
	// whatever else the history says.
	detail := "breaker open: " + in.why
	if in.completed == 0 {
		if len(in.keys) >= minEvidence {
			b.addFailed(in.latest.runID)
		}
		detail = fmt.Sprintf("breaker open: none of the %d keys run %s replayed has completed", len(in.keys), in.latest.runID)
	}
	if r.now().Before(b.ProbeAt) {
		return Gate{Name: GateCanary, Decision: GateClosed, Detail: detail + "; next probe at " + b.ProbeAt.UTC().Format(time.RFC3339)}, true
	}
	b.Trips++
	b.ProbeAt = r.now().Add(r.e.opts.Policy.ceiling(b.Trips - 1))
	p.rs.Probe = true
	return r.limited(detail + "; probing"), true
}

// suspects returns the latest replaying runs (up to maxSuspects) none of
// whose keys has completed, stopping at the first run with a completion
// (or whose completions cannot be read); replayed[0] is known to have none.
// Only runs that replayed at least minEvidence keys are suspects.
func (r *run) suspects(ctx context.Context, replayed []routeRun) []string {
	var out []string
	for i, h := range replayed[:min(len(replayed), maxSuspects)] {
		keys := h.rs.ReplayedKeys
		if i > 0 {
			done, err := r.e.opts.Completions.Completed(ctx, keys)
			if err != nil || len(done) > 0 {
				break
			}
		}
		if len(keys) >= minEvidence {
			out = append(out, h.runID)
		}
	}
	return out
}
