package replay

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// canaryGate judges a route by the runs that replayed on it lately
// (replayed, latest first), the latest run that read it (last, nil when
// none) and why the recent runs are unknown (prevErr). It keeps the route's
// [Breaker], on one of its two signals: completions (breaker.go) or the
// DLQ (signal.go).
type canaryGate struct {
	o           *Options
	runID       string
	replayed    []routeRun
	last        *RouteSummary
	prevErr     error
	completions completionsSignal
	dlq         dlqSignal
}

func newCanaryGate(o *Options, runID string, replayed []routeRun, last *RouteSummary, prevErr error) *canaryGate {
	return &canaryGate{o: o, runID: runID, replayed: replayed, last: last, prevErr: prevErr, completions: completionsSignal{o: o}, dlq: dlqSignal{o: o}}
}

func (*canaryGate) name() string { return GateCanary }

// decide limits the replays of a route while the latest judged run
// failed: more than half of the keys it replayed, known failures left
// out, have not completed (see [canary]). It keeps the route's [Breaker]:
// closed while it is open and no probe is due. On a route whose consumer
// writes no completion records it reads nothing and is skipped.
func (c *canaryGate) decide(ctx context.Context, p *pass) Gate {
	last, prevErr := c.last, c.prevErr
	switch {
	case !p.route.Records:
		return c.dlq.decide(p, noRecords)
	case c.o.Completions == nil:
		return c.dlq.decide(p, "no completions reader configured")
	}
	p.rs.BreakerSignal = SignalCompletions
	replayed := judged(c.replayed)
	in := c.input(ctx, replayed, prevErr)
	if last != nil && last.RecordsMissing && in.completed <= 0 {
		// The consumer consumes the replays but records none: the route
		// runs as one without records until a replayed key completes.
		p.rs.RecordsMissing = true
		p.rs.Unrecorded = last.Unrecorded
		p.rs.RecordsMissingDetail = c.recordsGone(p)
		c.warnRecordsMissing(ctx, p)
		return c.dlq.decide(p, p.rs.RecordsMissingDetail)
	}
	if g, decided := c.breaker(p, in); decided {
		return g
	}
	switch {
	case len(replayed) == 0 && prevErr == nil:
		return Gate{Name: GateCanary, Decision: GateOpen, Detail: in.why}
	case in.completed < 0:
		return c.limited(in.why)
	case !in.failed():
		return Gate{Name: GateCanary, Decision: GateOpen, Detail: in.String()}
	case in.completed == 0:
		// Held with no completion: evidence of missing records, unless
		// the replays come back to the DLQ (see noteUnrecorded).
		p.unrecorded = len(in.keys) >= minEvidence
	}
	if in.broken() {
		p.suspects = c.suspects(ctx, replayed)
	}
	p.knownLimit = in.latest.rs != nil && in.latest.rs.knownOnly()
	return c.limited(in.String())
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

// input reads the completions of the latest judged run's keys.
func (c *canaryGate) input(ctx context.Context, replayed []routeRun, prevErr error) canary {
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
	done, err := c.o.Completions.Completed(ctx, in.keys)
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
func (c *canaryGate) limited(detail string) Gate {
	return Gate{Name: GateCanary, Decision: GateLimited, Detail: detail, Limit: c.o.CanaryLimit}
}

// breaker moves the route's open breaker on what the canary read: it
// closes when the latest judged run is not broken (more than a quarter of
// its keys completed), or when its probe found too few keys to be
// evidence; otherwise it closes the gate until a probe is due, then limits
// it to the probe (decided: the breaker gave the decision).
func (c *canaryGate) breaker(p *pass, in canary) (g Gate, decided bool) {
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
	if c.o.Now().Before(b.ProbeAt) {
		return Gate{Name: GateCanary, Decision: GateClosed, Detail: detail + "; next probe at " + b.ProbeAt.UTC().Format(time.RFC3339)}, true
	}
	b.Trips++
	b.ProbeAt = c.o.Now().Add(c.o.Policy.ceiling(b.Trips - 1))
	p.rs.Probe = true
	return c.limited(detail + "; probing"), true
}

// suspects returns the latest judged runs (up to maxSuspects) that are
// broken (see [broken]), stopping at the first that is not (or whose
// completions cannot be read); replayed[0] is known to be broken. Only
// runs that replayed at least minEvidence keys, known failures' included,
// are suspects.
func (c *canaryGate) suspects(ctx context.Context, replayed []routeRun) []string {
	var out []string
	for i, h := range replayed[:min(len(replayed), maxSuspects)] {
		keys := h.rs.sample()
		if i > 0 {
			done, err := c.o.Completions.Completed(ctx, keys)
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

// watch trips the route's breaker on the signal it reads (see
// completionsSignal.watch and dlqSignal.watch).
func (c *canaryGate) watch(_ context.Context, p *pass, items []*item, now time.Time) string {
	if p.rs.BreakerSignal == SignalDLQ {
		return c.dlq.watch(p, now)
	}
	return c.completions.watch(p, items, now)
}

// end judges the probe this pass was held to judge, when it saw the whole
// DLQ (see dlqSignal.judge), keeps what it saw of the open breaker's probe,
// and counts the runs held with replays that neither completed nor came
// back (see noteUnrecorded).
func (c *canaryGate) end(ctx context.Context, p *pass) {
	if sawAll(p.rs.StopReason) {
		c.dlq.judge(p) // only a pass that saw the whole DLQ can tell
	}
	p.noteProbe()
	c.noteUnrecorded(ctx, p)
}

// sawAll reports whether a pass that stopped for reason saw its whole DLQ.
func sawAll(reason StopReason) bool {
	return reason == StopDrained || reason == StopPass || reason == StopGate
}
