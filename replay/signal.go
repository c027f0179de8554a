package replay

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The breaker's two signals, and the detection of a consumer that consumes
// its replays without recording them. Both read what the engine already
// sees: the sealed metadata of the messages its pass examines (the run that
// replayed each), counted per recent replaying run in bounded counters,
// and the run summaries the ledger keeps.

// The signals a route's breaker reads ([RouteSummary.BreakerSignal]).
const (
	// SignalCompletions: the consumer's completion records of the keys
	// the latest runs replayed, and one of their replays back in the DLQ.
	SignalCompletions = "completions"
	// SignalDLQ: how many of a run's replays come back to the DLQ, on a
	// route whose consumer writes no completion records (or whose records
	// are missing).
	SignalDLQ = "dlq"
)

// unrecordedRuns is how many consecutive runs the canary holds a route
// whose replays neither complete in the records nor come back to the DLQ
// before the engine reports the records missing and stops holding it, once
// the first of them started at least the time a failed replay takes to
// come back (maxReceiveCount × the source's visibility timeout) before:
// runs close together do not make that time, so a slow outage is not taken
// for missing records (and if it were, the route's breaker still reads the
// DLQ).
const unrecordedRuns = 3

// Return is what a run saw of an earlier run's replays on a route: how
// many it replayed, and how many of them its pass found back in the DLQ;
// known failures left out of both (see freshBack).
type Return struct {
	RunID    string `json:"runId"`
	Replayed int    `json:"replayed"`
	Back     int    `json:"back"`
}

// watched is a recent replaying run whose replays a pass counts back.
type watched struct {
	Return
	startedAt time.Time
	sent      time.Time // when its replays were out: its end (its start if unknown)
	probe     bool      // its replays probed an open breaker
	before    int       // the most of its replays an earlier pass saw back
	lookedAt  time.Time // the start of the latest pass since that counted its replays back
}

// lookedLate reports whether a pass since w counted its replays back at
// least after (the time a failed replay took to come back) after w's
// replays were out: only then does before say whether they failed. A
// pass sooner saw none of them back whatever became of them.
func (w *watched) lookedLate(after time.Duration) bool {
	return !w.lookedAt.IsZero() && w.lookedAt.Sub(w.sent) >= after
}

// seen is the most of w's replays any pass has seen back: this one's or an
// earlier one's. A message a pass leaves in the DLQ is seen by the next
// pass again, so counts of two passes are never added.
func (w *watched) seen() int { return max(w.Back, w.before) }

// failing reports whether most of w's replays came back: at least half,
// of at least minEvidence. Half, not all: a replay comes back only after
// maxReceiveCount × the source's visibility timeout, so when a pass meets
// the first ones others are still being retried; an outage that began
// during the run lets its first replays through; and a run's replays are
// counted once each, where SQS delivers at least once. A run whose
// messages fail on their own brings back a few, not half: those are
// parked after their replays. Should many fail on their own together, the
// breaker gives back at most MaxReplays replays to each, so they are
// parked in the end as well.
func (w *watched) failing() bool {
	return w.Replayed >= minEvidence && 2*w.seen() >= w.Replayed
}

// watchRuns returns the latest runs of a route (at most maxSuspects) that
// replayed messages other than known failures, latest first, with what
// the passes since each saw back.
func watchRuns(replaying []routeRun, all []routeRun) []watched {
	var out []watched
	for _, h := range replaying[:min(len(replaying), maxSuspects)] {
		replayed := h.rs.Replayed - h.rs.Retried
		if replayed <= 0 {
			replayed = h.rs.Replayed // known failures alone: they are its evidence
		}
		w := watched{Return: Return{RunID: h.runID, Replayed: replayed}, startedAt: h.startedAt, sent: h.startedAt, probe: h.rs.Probe}
		if h.finishedAt.After(h.startedAt) {
			w.sent = h.finishedAt // a run sends its replays until it ends
		}
		for _, o := range all {
			if i := slices.IndexFunc(o.rs.Returned, func(x Return) bool { return x.RunID == h.runID }); i >= 0 {
				w.before = max(w.before, o.rs.Returned[i].Back)
				if o.startedAt.After(w.lookedAt) {
					w.lookedAt = o.startedAt
				}
			}
		}
		out = append(out, w)
	}
	return out
}

// freshBack reports whether m is a replay of ours back in the DLQ that was
// no known failure when it was replayed: its first replay (after any
// refund, or an operator's reset of its count).
func freshBack(m message) bool { return m.hasMeta && m.meta.Reason == "" && m.meta.ReplayCount == 1 }

// backFrom reports whether m is a replay back in the DLQ that is evidence
// of its run: a first replay, or any replay of a run that replayed known
// failures alone (knownRuns).
func backFrom(m message, knownRuns []string) bool {
	return freshBack(m) || m.hasMeta && m.meta.Reason == "" && slices.Contains(knownRuns, m.meta.RunID)
}

// countBack counts, per watched run, the messages of items it replayed
// that were no known failures then. It holds the run's lock.
func (p *pass) countBack(items []*item) {
	for _, it := range items {
		if m := it.msg; m.hasMeta && m.meta.Reason == "" && m.class != "" {
			p.rs.BackClasses = tally(p.rs.BackClasses, m.class)
		}
		if !backFrom(it.msg, p.knownRuns) {
			continue
		}
		if i := slices.IndexFunc(p.watched, func(w watched) bool { return w.RunID == it.msg.meta.RunID }); i >= 0 {
			p.watched[i].Back++
		}
	}
}

// backSince returns how many replays the pass has seen back in the DLQ
// that no earlier pass saw (the DLQ's growth made of replays that came
// back since the previous run; known failures left out), and, of the runs
// they came from, how many replays were seen back in all and how many
// they replayed.
func (p *pass) backSince() (n, seen, replayed int) {
	for _, w := range p.watched {
		if d := w.Back - w.before; d > 0 {
			n += d
			seen += w.seen()
			replayed += w.Replayed
		}
	}
	return n, seen, replayed
}

// dlqSignal is the breaker on [SignalDLQ].
type dlqSignal struct {
	o *Options
}

// decide is the canary gate of a route whose breaker reads the DLQ: no
// canary (nothing tells a completed replay from one still on its way), and
// the breaker: open, it judges its latest probe (see latestProbe) as soon
// as a pass can tell, not at the next probe's time, and closes when most
// of the probe's replays did not come back; otherwise it holds the route
// until the next probe's time. A probe is judged only by a pass that
// started at least the time a failed replay took to come back when the
// breaker opened ([Breaker.ReturnAfter]) after the probe's replays went
// out (the probe run's end).
func (s dlqSignal) decide(p *pass, detail string) Gate {
	p.rs.BreakerSignal = SignalDLQ
	g := Gate{Name: GateCanary, Decision: GateSkipped, Detail: detail}
	b := p.rs.Breaker
	if b == nil || !b.Open {
		return g
	}
	probe := p.latestProbe()
	due := !s.o.Now().Before(b.ProbeAt)
	open := detail + "; breaker open on the DLQ signal"
	waiting := func() Gate {
		g.Decision, g.Detail = GateClosed, fmt.Sprintf("%s; next probe at %s", open, b.ProbeAt.UTC().Format(time.RFC3339))
		return g
	}
	switch {
	case probe == nil && !due:
		return waiting()
	case probe == nil:
	case probe.failing(), b.failed(probe.RunID):
		b.addFailed(probe.RunID)
		open = fmt.Sprintf("%s: %d of the %d replays of probe %s came back to the DLQ", open, probe.seen(), probe.Replayed, probe.RunID)
		if !due {
			return waiting()
		}
	case !probe.lookedLate(b.ReturnAfter) && s.o.Now().Sub(probe.sent) < b.ReturnAfter:
		// The probe's replays went out less than ReturnAfter ago: none
		// could be back yet. Hold; a later run judges.
		g.Decision, g.Detail = GateClosed, fmt.Sprintf("%s: the replays of probe %s cannot be back before %s", open, probe.RunID, probe.sent.Add(b.ReturnAfter).UTC().Format(time.RFC3339))
		return g
	case !probe.lookedLate(b.ReturnAfter):
		// No pass has looked at the DLQ since the probe late enough for
		// its replays to be back (this run came late: a cold start, a
		// missed tick, a paused schedule; or the passes since came before
		// the replays could return): nothing says they did not come back.
		// This pass holds replays, counts them back and judges the probe
		// at its end (judge).
		p.judgeProbe = true
		g.Decision, g.Detail = GateClosed, fmt.Sprintf("%s: this pass judges probe %s by its replays back in the DLQ", open, probe.RunID)
		return g
	default:
		// The probe's replays did not come back (or were too few to tell
		// an outage from a bad message): the system works again.
		b.close()
		g.Decision, g.Detail = GateOpen, fmt.Sprintf("%s; breaker closed: %d of the %d replays of probe %s came back to the DLQ", detail, probe.seen(), probe.Replayed, probe.RunID)
		return g
	}
	b.Trips++
	b.ProbeAt = s.o.Now().Add(max(s.o.Policy.ceiling(b.Trips-1), b.ReturnAfter))
	p.rs.Probe = true
	g.Decision, g.Detail, g.Limit = GateLimited, open+"; probing", s.o.CanaryLimit
	return g
}

// latestProbe returns the open breaker's latest probe among the runs the
// pass watches, nil when the latest replaying run was no probe. The breaker
// keeps it (Breaker.Probe), and puts it back among them, its replays seen
// back so far included, when the recent runs no longer hold it.
func (p *pass) latestProbe() *watched {
	b := p.rs.Breaker
	switch {
	case len(p.watched) > 0 && p.watched[0].probe:
		w := &p.watched[0]
		if b.Probe != nil && b.Probe.RunID == w.RunID {
			w.before = max(w.before, b.Probe.Back)
		}
		b.Probe = &Return{RunID: w.RunID, Replayed: w.Replayed, Back: w.seen()}
		b.ProbeSent = w.sent
		return w
	case b.Probe == nil || slices.ContainsFunc(p.watched, func(w watched) bool { return w.RunID == b.Probe.RunID }):
		return nil
	}
	w := watched{Return: Return{RunID: b.Probe.RunID, Replayed: b.Probe.Replayed}, startedAt: b.ProbeSent, sent: b.ProbeSent, probe: true, before: b.Probe.Back}
	p.watched = slices.Insert(p.watched, 0, w)
	return &p.watched[0]
}

// noteProbe keeps in the open breaker the most of its latest probe's
// replays that this pass saw back (see latestProbe).
func (p *pass) noteProbe() {
	b := p.rs.Breaker
	if b == nil || !b.Open || b.Probe == nil {
		return
	}
	if i := slices.IndexFunc(p.watched, func(w watched) bool { return w.RunID == b.Probe.RunID }); i >= 0 {
		b.Probe.Back = max(b.Probe.Back, p.watched[i].seen())
	}
}

// watch trips the breaker of a route on the DLQ signal when most of a
// watched run's replays are back (see [watched.failing]), and gives back
// the replays of every such run. It returns why it tripped, or "".
func (s dlqSignal) watch(p *pass, now time.Time) string {
	b := p.rs.Breaker
	var trip *watched
	for i := range p.watched {
		w := &p.watched[i]
		if !w.failing() || b.failed(w.RunID) {
			continue
		}
		if b == nil {
			b = &Breaker{}
			p.rs.Breaker = b
		}
		b.addFailed(w.RunID)
		if !b.Open && trip == nil {
			trip = w
		}
	}
	if trip == nil {
		return ""
	}
	b.ReturnAfter = max(0, now.Sub(trip.startedAt))
	b.trip(now.Add(max(s.o.Policy.ceiling(0), b.ReturnAfter)))
	return fmt.Sprintf(
		"breaker open on the DLQ signal: %d of the %d messages run %s replayed are back in the DLQ; next probe at %s",
		trip.seen(), trip.Replayed, trip.RunID, b.ProbeAt.UTC().Format(time.RFC3339))
}

// judge ends a pass that held replays to judge the probe no earlier
// pass had looked at late enough (see decide): the breaker stays open, its next probe
// a step of doubling later, when most of the probe's replays are back;
// otherwise it closes, and the next run replays. It holds no lock: the
// workers have ended.
func (s dlqSignal) judge(p *pass) {
	if !p.judgeProbe || len(p.watched) == 0 || p.rs.Breaker == nil || !p.rs.Breaker.Open {
		return
	}
	b, probe := p.rs.Breaker, &p.watched[0]
	if !probe.failing() && !b.failed(probe.RunID) {
		b.close()
		return
	}
	b.addFailed(probe.RunID)
	if s.o.Now().Before(b.ProbeAt) {
		return // judged before the next probe's time, which stands
	}
	b.Trips++
	b.ProbeAt = s.o.Now().Add(max(s.o.Policy.ceiling(b.Trips-1), b.ReturnAfter))
}

// maxBackClasses bounds the classes a summary names: the rest count as
// classOther.
const (
	maxBackClasses = 10
	classOther     = "other"
)

// tally counts class in m (made when nil): by name while m names fewer
// than maxBackClasses, else as classOther.
func tally(m map[string]int, class string) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	if _, named := m[class]; !named && len(m)-min(m[classOther], 1) >= maxBackClasses {
		class = classOther
	}
	m[class]++
	return m
}

// topClasses says the most frequent classes of m, at most n: "19
// tax-service-503, 1 panic".
func topClasses(m map[string]int, n int) string {
	names := slices.Collect(maps.Keys(m))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	parts := make([]string, 0, n)
	for _, c := range names[:min(n, len(names))] {
		parts = append(parts, strconv.Itoa(m[c])+" "+c)
	}
	return strings.Join(parts, ", ")
}
