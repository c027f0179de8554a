package replay

import (
	"fmt"
	"slices"
	"time"
)

// Breaker is a route's circuit breaker, as the route's latest [RouteSummary]
// left it. It opens when almost every key a run replayed failed; while open,
// the route replays only a probe of CanaryLimit messages once ProbeAt has
// passed, and it closes when enough of a probe's keys complete. Thresholds
// and refunds: docs/PACKAGES.md#replay-the-breaker.
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
	// Probe is, on the DLQ signal, the latest probe: its replays and the
	// most of them a pass saw back; ProbeSent, when they were out. The
	// gate judges the probe by them once it is no longer among the recent
	// runs it reads, however long the wait for a pass that can tell.
	Probe     *Return   `json:"probe,omitempty"`
	ProbeSent time.Time `json:"probeSent,omitzero"`
	// FailedRuns are the latest runs (at most maxFailedRuns) whose replays
	// almost all failed, oldest first.
	FailedRuns []string `json:"failedRuns,omitempty"`
}

// noRecords is the detail of the canary gate on a route whose consumer
// writes no completion records ([Route.Records] false): nothing reads
// completions there, neither the canary, nor the breaker, nor the removal
// of dead letters already applied.
const noRecords = "the lane's consumer writes no completion records"

// maxFailedRuns bounds Breaker.FailedRuns.
const maxFailedRuns = 20

// minEvidence is the number of distinct keys a run must have replayed,
// almost all failing, for the failure to be taken for the system's.
const minEvidence = 2

// maxSuspects bounds the replaying runs the canary looks back through for
// a run almost none of whose keys completed. A replay comes back to the DLQ only
// after maxReceiveCount × the source's visibility timeout, which can span
// several runs of the schedule.
const maxSuspects = 5

// trip opens the breaker, with its first probe at probeAt.
func (b *Breaker) trip(probeAt time.Time) {
	b.Open = true
	b.Trips = 1
	b.ProbeAt = probeAt
	b.Probe = nil
	b.ProbeSent = time.Time{}
}

// close closes the breaker: the route replays as usual.
func (b *Breaker) close() {
	b.Open = false
	b.Trips = 0
	b.ProbeAt = time.Time{}
	b.Probe = nil
	b.ProbeSent = time.Time{}
}

func (b *Breaker) clone() *Breaker {
	c := *b
	c.FailedRuns = slices.Clone(b.FailedRuns)
	if b.Probe != nil {
		probe := *b.Probe
		c.Probe = &probe
	}
	return &c
}

// failed reports whether run's replays almost all failed. A nil breaker has
// seen no failed run.
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

// completionsSignal is the breaker on [SignalCompletions].
type completionsSignal struct {
	o *Options
}

// watch trips the breaker when a batch holds a message that a suspect run
// (almost none of whose keys completed) replayed, and that was no known
// failure then: it came back, so the replays fail whatever the message.
// From then on the route replays nothing, and the suspect runs' replays
// are given back to their messages. It returns why it tripped, or "".
func (s completionsSignal) watch(p *pass, items []*item, now time.Time) string {
	i := slices.IndexFunc(items, func(it *item) bool {
		return backFrom(it.msg, p.knownRuns) && slices.Contains(p.suspects, it.msg.meta.RunID)
	})
	if i < 0 {
		return ""
	}
	back := items[i].msg.meta.RunID
	b := p.rs.Breaker
	if b == nil {
		b = &Breaker{}
		p.rs.Breaker = b
	}
	b.trip(now.Add(s.o.Policy.ceiling(0)))
	for _, run := range slices.Backward(p.suspects) {
		b.addFailed(run)
	}
	detail := fmt.Sprintf(
		"breaker open: a message run %s replayed is back in the DLQ and almost none of the keys of the latest %d replaying runs has completed; next probe at %s",
		back, len(p.suspects), b.ProbeAt.UTC().Format(time.RFC3339))
	p.suspects = nil
	return detail
}
