package replay

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Breaker is a route's circuit breaker. It opens when none of the keys a
// run replayed has completed, the run replayed at least two keys
// ([minEvidence]), and one of its messages is back in the DLQ: every replay
// failed, so the failure is the system's (a downstream outage that the
// health probe does not see), not the messages'. While it is open, the
// route replays nothing but a probe of CanaryLimit messages once ProbeAt
// has passed; the wait doubles with each probe that fails (from
// BackoffBase up to BackoffMax), and the breaker closes when a key a
// probe replayed completes. The replays of the failed runs are given back
// to their messages: they do not count toward MaxReplays
// ([Metadata.Refunds] counts them), up to MaxReplays refunds per message,
// so that messages failing on their own while the breaker takes their
// failures for an outage are still parked in the end. A run that replayed a single key
// that failed is no evidence either way (a bad message, or an outage): it
// neither opens the breaker nor gives its replay back, so a message that
// keeps failing alone is parked after MaxReplays replays.
//
// That is the breaker on [SignalCompletions]. On a route whose consumer
// writes no completion records (or whose records are missing) it reads
// [SignalDLQ] instead: it opens when at least half of a recent run's
// replays, of at least minEvidence, are back in the DLQ, and a probe is
// judged, no sooner than ReturnAfter after it, by how many of its replays
// came back (see signal.go).
//
// Each run writes the breaker as it left it in its [RouteSummary]; the
// next run starts from the latest one of the route.
type Breaker struct {
	Open    bool      `json:"open"`
	Trips   int       `json:"trips"`            // probes since it opened, the opening included
	ProbeAt time.Time `json:"probeAt,omitzero"` // open: when a probe may go out
	// ReturnAfter is, on the DLQ signal, how long the replays that opened
	// it took to come back (from the start of the run that sent them to
	// the pass that saw them; in nanoseconds in JSON): a probe is judged
	// no sooner, so that replays still on their way are not taken for
	// replays that succeeded.
	ReturnAfter time.Duration `json:"returnAfter,omitempty"`
	// FailedRuns are the latest runs (at most maxFailedRuns) whose replays
	// all failed, oldest first.
	FailedRuns []string `json:"failedRuns,omitempty"`
}

// noRecords is the detail of the canary gate on a route whose consumer
// writes no completion records ([Route.Records] false): nothing reads
// completions there, neither the canary, nor the breaker, nor the removal
// of dead letters already applied.
const noRecords = "the lane's consumer writes no completion records"

// maxFailedRuns bounds Breaker.FailedRuns.
const maxFailedRuns = 20

// minEvidence is the number of distinct keys a run must have replayed, all
// failing, for the failure to be taken for the system's.
const minEvidence = 2

// maxSuspects bounds the replaying runs the canary looks back through for
// a run none of whose keys completed. A replay comes back to the DLQ only
// after maxReceiveCount × the source's visibility timeout, which can span
// several runs of the schedule.
const maxSuspects = 5

func (b *Breaker) clone() *Breaker {
	c := *b
	c.FailedRuns = slices.Clone(b.FailedRuns)
	return &c
}

// failed reports whether run's replays all failed. A nil breaker has seen
// no failed run.
func (b *Breaker) failed(run string) bool {
	return b != nil && run != "" && slices.Contains(b.FailedRuns, run)
}

func (b *Breaker) addFailed(run string) {
	if !slices.Contains(b.FailedRuns, run) {
		b.FailedRuns = append(b.FailedRuns, run)
	}
	if n := len(b.FailedRuns) - maxFailedRuns; n > 0 {
		b.FailedRuns = slices.Delete(b.FailedRuns, 0, n)
	}
}

// canaryGate limits the replays of a route while some keys the latest
// replaying run (replayed[0]) sent back have not completed, and keeps the
// route's [Breaker]: closed while it is open and no probe is due. On a
// route whose consumer writes no completion records it reads nothing and
// is skipped.
func (r *run) canaryGate(ctx context.Context, p *pass, replayed []routeRun, last *RouteSummary, prevErr error) Gate {
	g := Gate{Name: GateCanary, Decision: GateOpen}
	limited := func(detail string) Gate {
		g.Decision, g.Detail, g.Limit = GateLimited, detail, r.e.opts.CanaryLimit
		return g
	}
	switch {
	case !p.route.Records:
		return r.dlqGate(p, noRecords)
	case r.e.opts.Completions == nil:
		g.Decision, g.Detail = GateSkipped, "no completions reader configured"
		return g
	}
	p.rs.BreakerSignal = SignalCompletions
	// The latest replaying run's keys: how many completed (-1: unknown).
	completed, keys, why := -1, []string(nil), ""
	switch {
	case prevErr != nil:
		why = "previous run unknown: " + prevErr.Error()
	case len(replayed) == 0:
		why = "the previous run replayed no keys on this route"
	default:
		keys = replayed[0].rs.ReplayedKeys
		done, err := r.e.opts.Completions.Completed(ctx, keys)
		if err != nil {
			why = "cannot read completions: " + err.Error()
			break
		}
		completed = 0
		for _, id := range keys {
			if _, ok := done[id]; ok {
				completed++
			}
		}
	}
	if last != nil && last.RecordsMissing && completed <= 0 {
		// The consumer consumes the replays but records none: the route
		// runs as one without records until a replayed key completes.
		p.rs.RecordsMissing = true
		p.rs.Unrecorded = last.Unrecorded
		p.rs.RecordsMissingDetail = r.recordsGone(p)
		r.warnRecordsMissing(ctx, p)
		return r.dlqGate(p, p.rs.RecordsMissingDetail)
	}
	if b := p.rs.Breaker; b != nil && b.Open && completed == 0 && replayed[0].rs.Probe && len(keys) < minEvidence {
		// The probe found fewer keys to replay than the evidence of an
		// outage needs, and they failed: no evidence either way (as for a
		// run that replayed a single key). The breaker closes, so that
		// messages failing on their own are parked after their replays
		// instead of being held behind probes that only they answer.
		b.Open, b.Trips, b.ProbeAt = false, 0, time.Time{}
	}
	if b := p.rs.Breaker; b != nil && b.Open {
		if completed <= 0 {
			// No completion since it opened (or none can be seen): it
			// stays open, whatever else the history says.
			detail := "breaker open: " + why
			if completed == 0 {
				if len(keys) >= minEvidence {
					b.addFailed(replayed[0].runID)
				}
				detail = fmt.Sprintf("breaker open: none of the %d keys run %s replayed has completed", len(keys), replayed[0].runID)
			}
			if r.now().Before(b.ProbeAt) {
				g.Decision, g.Detail = GateClosed, detail+"; next probe at "+b.ProbeAt.UTC().Format(time.RFC3339)
				return g
			}
			b.Trips++
			b.ProbeAt = r.now().Add(r.e.opts.Policy.ceiling(b.Trips - 1))
			p.rs.Probe = true
			return limited(detail + "; probing")
		}
		// A replay completed: the system works again.
		b.Open, b.Trips, b.ProbeAt = false, 0, time.Time{}
	}
	switch {
	case len(replayed) == 0 && prevErr == nil:
		g.Detail = why
		return g
	case completed < 0:
		return limited(why)
	case completed == len(keys):
		g.Detail = fmt.Sprintf("all %d keys replayed by the previous run completed", len(keys))
		return g
	case completed == 0:
		p.suspects = r.suspects(ctx, replayed)
		// Held with no completion: evidence of missing records, unless
		// the replays come back to the DLQ (see noteUnrecorded).
		p.unrecorded = len(keys) >= minEvidence
	}
	return limited(fmt.Sprintf("%d of %d keys replayed by the previous run have not completed", len(keys)-completed, len(keys)))
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

// watch trips the breaker when a batch holds a message that a suspect run
// (none of whose keys has completed) replayed: it came back, so the
// replays fail whatever the message. From then on the route replays
// nothing, and the suspect runs' replays are given back to their messages.
func (r *run) watch(ctx context.Context, p *pass, items []*item, now time.Time) {
	p.countBack(items)
	if p.rs.BreakerSignal == SignalDLQ {
		r.watchDLQ(ctx, p, now)
		return
	}
	i := slices.IndexFunc(items, func(it *item) bool { return it.msg.hasMeta && slices.Contains(p.suspects, it.msg.meta.RunID) })
	if i < 0 {
		return
	}
	back := items[i].msg.meta.RunID
	b := p.rs.Breaker
	if b == nil {
		b = &Breaker{}
		p.rs.Breaker = b
	}
	b.Open, b.Trips, b.ProbeAt = true, 1, now.Add(r.e.opts.Policy.ceiling(0))
	for _, run := range slices.Backward(p.suspects) {
		b.addFailed(run)
	}
	g := Gate{Name: GateCanary, Decision: GateClosed, Detail: fmt.Sprintf(
		"breaker open: a message run %s replayed is back in the DLQ and none of the keys of the latest %d replaying runs has completed; next probe at %s",
		back, len(p.suspects), b.ProbeAt.UTC().Format(time.RFC3339))}
	if i := slices.IndexFunc(p.rs.Gates, func(g Gate) bool { return g.Name == GateCanary }); i >= 0 {
		p.rs.Gates[i] = g
	}
	r.logGate(ctx, p.route.DLQURL, g)
	p.suspects, p.replayLeft, p.gated = nil, 0, true
}
