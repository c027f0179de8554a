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

// refillGate closes when the previous run is unknown. When the DLQ holds
// more than RefillThreshold messages more than the previous run left in
// it (its depth at the start, visible and in flight, minus what it moved),
// it stays open but watches the pass: it closes once more than
// RefillThreshold of them are replays that came back, almost all of their
// runs' (see refillBack). A burst of new dead letters (one producer's
// failing messages, say) does not hold the replay of the others: the
// canary judges their replays.
func (r *run) refillGate(p *pass, prev *RouteSummary, prevErr error) Gate {
	g := Gate{Name: GateRefill, Decision: GateOpen}
	rs, limit := p.rs, r.e.opts.RefillThreshold
	switch {
	case prevErr != nil:
		g.Decision, g.Detail = GateClosed, "previous run unknown: "+prevErr.Error()
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

// refillBack closes the refill gate of a pass that watches the DLQ's
// growth once more than RefillThreshold replays came back since the
// previous run, and they are almost all (three quarters: see [broken]) of
// the replays of the runs they came from: the replays fail en masse. The
// first returns of a burst of one kind of failure are a share of their
// run's, and the canary judges them. It holds the run's lock.
func (r *run) refillBack(ctx context.Context, p *pass) {
	if !p.refill || p.gated {
		return
	}
	n, seen, replayed := p.backSince()
	if n > r.e.opts.RefillThreshold && broken(replayed, replayed-seen) {
		p.refill = false
		r.tripped(ctx, p, GateRefill, fmt.Sprintf("%d replays came back to the DLQ since the previous run (threshold %d), %d of the %d their runs replayed", n, r.e.opts.RefillThreshold, seen, replayed))
	}
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

// canaryGate limits the replays of a route while the latest judged run
// failed: more than half of the keys it replayed, known failures left
// out, have not completed (see [canary]). It keeps the route's [Breaker]:
// closed while it is open and no probe is due. On a route whose consumer
// writes no completion records it reads nothing and is skipped.
func (r *run) canaryGate(ctx context.Context, p *pass, replayed []routeRun, last *RouteSummary, prevErr error) Gate {
	switch {
	case !p.route.Records:
		return r.dlqGate(p, noRecords)
	case r.e.opts.Completions == nil:
		return r.dlqGate(p, "no completions reader configured")
	}
	p.rs.BreakerSignal = SignalCompletions
	replayed = judged(replayed)
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
	case !in.failed():
		return Gate{Name: GateCanary, Decision: GateOpen, Detail: in.String()}
	case in.completed == 0:
		// Held with no completion: evidence of missing records, unless
		// the replays come back to the DLQ (see noteUnrecorded).
		p.unrecorded = len(in.keys) >= minEvidence
	}
	if in.broken() {
		p.suspects = r.suspects(ctx, replayed)
	}
	p.knownLimit = in.latest.rs != nil && in.latest.rs.knownOnly()
	return r.limited(in.String())
}

// judged returns the replaying runs (latest first) whose outcome the gates
// judge: every run that replayed keys, judged by its keys that were not
// known failures, or by its known failures when it replayed nothing else
// (see [RouteSummary.knownOnly]).
func judged(replayed []routeRun) []routeRun {
	return slices.DeleteFunc(slices.Clone(replayed), func(h routeRun) bool { return len(h.rs.sample()) == 0 })
}

// sample returns the keys the gates judge the run by: its replayed keys
// but the known failures' (RetriedKeys).
func (rs *RouteSummary) sample() []string {
	if len(rs.RetriedKeys) == 0 || rs.knownOnly() {
		return rs.ReplayedKeys
	}
	return slices.DeleteFunc(slices.Clone(rs.ReplayedKeys), func(k string) bool { return slices.Contains(rs.RetriedKeys, k) })
}

// knownOnly reports whether the run replayed known failures alone: then
// they are its evidence (an outage that begins when the DLQ holds only
// dead letters replayed before must still be seen), and its replays back
// in the DLQ count as any run's (see backFrom).
func (rs *RouteSummary) knownOnly() bool {
	return len(rs.ReplayedKeys) > 0 && len(rs.RetriedKeys) == len(rs.ReplayedKeys)
}

// failing reports whether more than half of n keys failed: the share of
// failing keys at which the canary limits the next run. Below it, the
// failing keys are their messages' own (a failing producer, a poison
// key), and the lane replays as usual; a single key that failed alone is
// a failed run.
func failing(n, completed int) bool { return n > 0 && 2*(n-completed) > n }

// broken reports whether at least three quarters of n keys failed: the
// share at which the breaker takes a run's failures for the system's (an
// outage fails almost every key). Between the two, the canary samples
// the next run, and the breaker stays as it is.
func broken(n, completed int) bool { return n > 0 && 4*(n-completed) >= 3*n }

// canary is what the canary gate reads: the latest judged run's keys, and
// how many of them completed (-1: unknown, why says why).
type canary struct {
	latest    routeRun // the latest judged run; zero when none
	probe     bool     // it was a probe of the open breaker
	keys      []string // its sample (see [RouteSummary.sample])
	retried   int      // its known failures' keys, left out
	all       int      // its keys, known failures' included: the evidence
	completed int
	why       string
}

// failed reports whether most of the run's keys did not complete.
func (in canary) failed() bool { return in.completed >= 0 && failing(len(in.keys), in.completed) }

// broken reports whether almost all of the run's keys did not complete.
func (in canary) broken() bool { return in.completed >= 0 && broken(len(in.keys), in.completed) }

func (in canary) String() string {
	s := fmt.Sprintf("%d of %d keys replayed by run %s have not completed", len(in.keys)-in.completed, len(in.keys), in.latest.runID)
	if in.retried > 0 {
		s += fmt.Sprintf(" (%d keys of known failures left out)", in.retried)
	}
	return s
}

// canaryInput reads the completions of the latest judged run's keys.
func (r *run) canaryInput(ctx context.Context, replayed []routeRun, prevErr error) canary {
	in := canary{completed: -1}
	switch {
	case prevErr != nil:
		in.why = "previous run unknown: " + prevErr.Error()
		return in
	case len(replayed) == 0:
		in.why = "no recent run replayed keys on this route that were not known failures"
		return in
	}
	rs := replayed[0].rs
	in.latest, in.probe, in.keys, in.retried, in.all = replayed[0], rs.Probe, rs.sample(), len(rs.RetriedKeys), len(rs.ReplayedKeys)
	if rs.knownOnly() {
		in.retried = 0 // its known failures are its evidence, none left out
	}
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
// closes when the latest judged run is not broken (more than a quarter of
// its keys completed), or when its probe found too few keys to be
// evidence; otherwise it holds the route (held) until a probe is due, then limits it
// to the probe.
func (r *run) breakerGate(p *pass, in canary) (g Gate, held bool) {
	b := p.rs.Breaker
	if b == nil || !b.Open {
		return Gate{}, false
	}
	switch {
	case in.completed >= 0 && len(in.keys) > 0 && !in.broken(),
		in.completed >= 0 && in.probe && in.all < minEvidence:
		// Replays completed: the system works again (the canary
		// samples the next run if most failed). Or the probe
		// found fewer keys than the evidence of an outage needs, and
		// they failed: no evidence either
		// way (as for a run that replayed a single key), so that
		// messages failing on their own are parked after their replays
		// instead of being held behind probes that only they answer.
		b.close()
		return Gate{}, false
	}
	// Almost all keys failed since it opened (or nothing can be seen): it
	// stays open, whatever else the history says.
	detail := "breaker open: " + in.why
	if in.completed >= 0 {
		if in.all >= minEvidence {
			b.addFailed(in.latest.runID)
		}
		detail = "breaker open: " + in.String()
	}
	if r.now().Before(b.ProbeAt) {
		return Gate{Name: GateCanary, Decision: GateClosed, Detail: detail + "; next probe at " + b.ProbeAt.UTC().Format(time.RFC3339)}, true
	}
	b.Trips++
	b.ProbeAt = r.now().Add(r.e.opts.Policy.ceiling(b.Trips - 1))
	p.rs.Probe = true
	return r.limited(detail + "; probing"), true
}

// suspects returns the latest judged runs (up to maxSuspects) that are
// broken (see [broken]), stopping at the first that is not (or whose
// completions cannot be read); replayed[0] is known to be broken. Only
// runs that replayed at least minEvidence keys, known failures' included,
// are suspects.
func (r *run) suspects(ctx context.Context, replayed []routeRun) []string {
	var out []string
	for i, h := range replayed[:min(len(replayed), maxSuspects)] {
		keys := h.rs.sample()
		if i > 0 {
			done, err := r.e.opts.Completions.Completed(ctx, keys)
			if err != nil || !broken(len(keys), len(done)) {
				break
			}
		}
		if len(h.rs.ReplayedKeys) >= minEvidence {
			// Its known failures failed too: they count toward the
			// evidence of a run whose other keys are broken, and its
			// replays are given back with the others'.
			out = append(out, h.runID)
		}
	}
	return out
}
