package sim

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// The terminal places of a publication.
const (
	placeAcknowledged = "acknowledged" // the consumer acknowledged it: its order is invoiced
	placeInvalid      = "invalid"      // in the invalid queue
	placeParked       = "parked"       // in the parking queue
	placeResolved     = "resolved"     // a replay run removed it from the DLQ: its order was done with its payload
)

// check evaluates the invariants once the simulation has ended; quiet says
// whether it quiesced.
func (s *Sim) check(quiet bool) {
	if !quiet {
		sv, sf := s.sqs.counts(s.sqs.source)
		dv, df := s.sqs.counts(s.sqs.dlq)
		s.violate("not-quiescent", "", fmt.Sprintf("after %s (%s past the drain limits, the engine's pace for what was left): source %d visible + %d in flight, DLQ %d + %d, releases under way: %d",
			fmtOffset(s.clock.Now().Sub(s.start)), s.extended, sv, sf, dv, df, len(s.groups.jobs)))
	}
	for _, m := range s.sqs.q.Messages(s.sqs.dlq) {
		id := aws.ToString(m.MessageId)
		s.violate("left-in-dlq", s.subject(id, s.sqs.pubOf(id)), "still in the DLQ at the end")
	}
	if s.cfg.Lane.Groups != "" {
		s.checkGroups()
	}
	s.groups.mu.Lock()
	s.stats.Groups = s.groups.stats
	s.groups.mu.Unlock()
	for _, id := range s.sqs.vanished() {
		s.violate("expired-unseen", s.subject(id, s.sqs.pubOf(id)), "sent by "+s.sqs.sender(id)+", never deleted, no longer in any queue: retention expired")
	}

	invalidAt := map[int][]string{}
	// What the operator's reviews took from the invalid queue counts as
	// what is still in it.
	for _, m := range append(s.reviewed, s.sqs.q.Messages(s.sqs.invalid)...) {
		id := aws.ToString(m.MessageId)
		meta, _, _, err := invalid.Read(m.MessageAttributes)
		reason := meta.Reason
		if err != nil {
			reason = "unreadable: " + err.Error()
		}
		if n := s.sqs.pubOf(id); n >= 0 {
			invalidAt[n] = append(invalidAt[n], reason)
			for name := range m.MessageAttributes {
				if _, sent := s.pubs[n].Attrs[name]; !sent && !strings.HasPrefix(name, "homing") {
					s.stats.InjectedAttributes++
					s.violate("attribute-injected", s.subject(id, n), "forwarded with attribute "+name+", which the producer did not send")
				}
			}
		}
		s.stats.InvalidQueued++
	}
	parkedAt := map[int][]string{}
	// What the operator set aside from the parking queue counts as what is
	// still in it.
	for _, m := range append(slices.Clone(s.setAsideMsgs), s.sqs.q.Messages(s.sqs.parking)...) {
		id := aws.ToString(m.MessageId)
		meta, _, _, _ := replay.Read(m.MessageAttributes)
		n := s.sqs.pubOf(id)
		if meta.Reason == "" {
			s.violate("parked-without-reason", s.subject(id, n), "in the parking queue without a reason")
		}
		if n >= 0 {
			parkedAt[n] = append(parkedAt[n], meta.Reason)
		}
		s.stats.ParkedAtEnd++
	}

	for _, c := range s.resetSends {
		if c > 1 {
			s.stats.ResetDuplicates++
		}
	}

	// Every publication in exactly one terminal place.
	places := make([][]string, len(s.pubs))
	s.archivedAt(invalidAt, parkedAt)
	for _, p := range s.pubs {
		at := s.placesOf(p, invalidAt, parkedAt)
		places[p.N] = at
		switch {
		case p.N >= s.next:
			s.violate("never-published", s.subject("", p.N), "the run ended before the producer sent it")
		case len(at) == 0:
			s.violate("lost", s.subject("", p.N), fmt.Sprintf("%s publication in no terminal place", p.Kind))
		case len(at) > 1:
			s.violate("several-places", s.subject("", p.N), strings.Join(at, " and "))
		}
	}

	// Valid orders: invoiced exactly once, with a payload that was
	// published; the other payloads of the order are conflicts.
	byOrder := map[string][]*Publication{}
	var orders []string
	for _, p := range s.pubs {
		if p.Kind == KindValid || p.Kind == KindDuplicate || p.Kind == KindConflict {
			if _, ok := byOrder[p.OrderID]; !ok {
				orders = append(orders, p.OrderID)
			}
			byOrder[p.OrderID] = append(byOrder[p.OrderID], p)
		}
	}
	s.stats.ValidOrders = len(orders)
	for _, id := range orders {
		pubs := byOrder[id]
		effects := s.tax.effectsOf(id)
		s.stats.ServiceCalls += s.tax.callsOf(id)
		if len(effects) == 0 {
			s.violate("not-invoiced", s.pubSubject(pubs), "a valid order was never invoiced")
			continue
		}
		s.stats.Invoiced++
		for _, e := range effects[1:] {
			if e.inDoubt {
				s.stats.InDoubtDoubles++
				s.trace.add(s.clock.Now(), "invariant", "in-doubt double", id, e.number)
			}
		}
		invoiced := effects[0].request
		if !slices.ContainsFunc(pubs, func(p *Publication) bool { return p.Request == invoiced }) {
			s.violate("invoiced-unknown-payload", s.pubSubject(pubs), "the invoice's request matches no payload of the order")
			continue
		}
		for _, p := range pubs {
			at := places[p.N]
			switch {
			case p.Request == invoiced:
				if len(at) == 1 && at[0] != placeAcknowledged && at[0] != placeResolved && !strings.HasPrefix(at[0], placeParked) {
					s.violate("invoiced-payload-not-acknowledged", s.subject("", p.N), "its payload was invoiced but it ended "+at[0])
				}
			case s.cfg.Lane.NoRecords && slices.Equal(at, []string{placeAcknowledged}):
				// A consumer without records cannot tell a conflict: the
				// service answered it with the order's first invoice,
				// and issued none.
			case !slices.Contains(invalidAt[p.N], string(order.ReasonConflictingDuplicate)):
				s.violate("conflict-not-routed", s.subject("", p.N), fmt.Sprintf("another payload of the order was invoiced; it ended %v", at))
			}
		}
	}

	s.checkPoison(parkedAt, places)
	s.checkRecords()

	// Invalid orders: in the invalid queue with their reason, never invoiced.
	for _, p := range s.pubs {
		if p.Kind != KindInvalid && p.Kind != KindRejected {
			continue
		}
		if !slices.Contains(invalidAt[p.N], p.WantReason) {
			s.violate("invalid-not-queued", s.subject("", p.N), fmt.Sprintf("want the invalid queue with reason %s; it ended %v %v", p.WantReason, places[p.N], invalidAt[p.N]))
		}
		if p.OrderID != "" && len(byOrder[p.OrderID]) == 0 {
			if e := s.tax.effectsOf(p.OrderID); len(e) > 0 {
				s.violate("invalid-invoiced", s.subject("", p.N), fmt.Sprintf("an invalid order was invoiced %d times", len(e)))
			}
		}
	}
}

// placesOf returns the places publication p ended in, of those its
// messages in the invalid and parking queues (invalidAt, parkedAt) and the
// simulation's books say.
func (s *Sim) placesOf(p *Publication, invalidAt, parkedAt map[int][]string) []string {
	var at []string
	if s.ackedPubs[p.N] {
		at = append(at, placeAcknowledged)
	}
	if len(invalidAt[p.N]) > 0 {
		at = append(at, placeInvalid)
	}
	if len(parkedAt[p.N]) > 0 {
		at = append(at, placeParked+"("+strings.Join(parkedAt[p.N], ",")+")")
	}
	if s.removed[p.N] && len(at) == 0 && p.Hash != "" && s.completedWith(p.OrderID) == p.Hash {
		at = append(at, placeResolved)
	}
	return at
}

// checkRecords checks, from the runs' summaries, what the lane's routes
// said of the protections that read the consumer's completion records. On
// a lane whose consumer writes none, every canary gate a route reports
// reads no completions (its breaker reads the DLQ: replay.SignalDLQ), is
// skipped unless that breaker decides, nothing is removed as already
// applied (the engine cannot know), and some run said the canary was
// skipped. On a lane that writes them, with a completions reader, no
// canary gate is skipped unless the route reports the records missing
// (RecordsMissing: then it says so). It counts the removals.
func (s *Sim) checkRecords() {
	lane := map[string]bool{s.sqs.route().Name: true, s.sqs.parkingRoute().Name: true}
	said := false
	for _, r := range s.runRecords {
		for _, rs := range r.Summary.Routes {
			if !lane[rs.Route] {
				continue
			}
			s.stats.Applied += rs.Applied
			if rs.RecordsMissing {
				s.stats.RecordsMissing++
			}
			subject := rs.Route + " " + r.ID
			if s.cfg.Lane.NoRecords && rs.Applied > 0 {
				s.violate("applied-without-records", subject, fmt.Sprintf("%d dead letters removed as applied on a lane whose consumer writes no records", rs.Applied))
			}
			for _, g := range rs.Gates {
				if g.Name != replay.GateCanary {
					continue
				}
				skipped := g.Decision == replay.GateSkipped
				switch {
				case s.cfg.Lane.NoRecords && rs.BreakerSignal != replay.SignalDLQ:
					s.violate("canary-without-records", subject, fmt.Sprintf("canary gate %s (%s), breaker on %q, on a lane whose consumer writes no records", g.Decision, g.Detail, rs.BreakerSignal))
				case s.cfg.Lane.NoRecords && !skipped && rs.Breaker == nil:
					s.violate("canary-without-records", subject, fmt.Sprintf("canary gate %s (%s) with no breaker, on a lane whose consumer writes no records", g.Decision, g.Detail))
				case s.cfg.Lane.NoRecords:
					said = said || skipped
				case skipped && s.cfg.Replay.Canary && !rs.RecordsMissing:
					s.violate("canary-skipped", subject, "canary gate skipped on a lane whose consumer writes records: "+g.Detail)
				}
			}
		}
	}
	if s.cfg.Lane.NoRecords && !said && s.stats.Runs > 0 {
		s.violate("records-off-unsaid", "", fmt.Sprintf("no run of %d on a lane whose consumer writes no records reported its canary gate skipped", s.stats.Runs))
	}
}

// checkPoison checks the orders that can never succeed (the tax service
// fails them for ever, or never answers): never invoiced, and parked in
// the end (their replays bounded: see lineage).
func (s *Sim) checkPoison(parkedAt map[int][]string, places [][]string) {
	for _, p := range s.pubs {
		if !p.Kind.hopeless() || p.N >= s.next {
			continue
		}
		if e := s.tax.effectsOf(p.OrderID); len(e) > 0 {
			s.violate("poison-invoiced", s.subject("", p.N), fmt.Sprintf("invoiced %d times although the service never applies it", len(e)))
		}
		if len(parkedAt[p.N]) == 0 {
			s.violate("poison-not-parked", s.subject("", p.N), fmt.Sprintf("an order the service always fails ended %v, not in the parking queue", places[p.N]))
		}
	}
}

// pubSubject names the publications of an order.
func (s *Sim) pubSubject(pubs []*Publication) string {
	parts := []string{clip(pubs[0].OrderID, 60)}
	for _, p := range pubs {
		parts = append(parts, fmt.Sprintf("pub#%d", p.N))
	}
	return strings.Join(parts, " ")
}

// completedWith returns the payload hash the consumer's idempotency record
// of order holds once COMPLETED, or "": what the replay's removal of an
// already-applied dead letter reads (the consumer may have completed it in
// an invocation whose acknowledgement was lost).
func (s *Sim) completedWith(orderID string) string {
	r, ok := s.store.MemoryStore.Get(idempotency.Key(consumerName, orderID))
	if !ok || r.Status != idempotency.Completed {
		return ""
	}
	return r.PayloadHash
}

// coverageRuns is how many later runs of the route may leave a message
// unexamined after the pass it was in the DLQ at the start of (a pass that
// stopped at its cap or deadline leaves some for a later run).
const coverageRuns = 3

// coverage checks, while the simulation runs, that the replay covers its
// DLQ (DESIGN, "Scheduled replay" 7): every message in the DLQ when a pass
// starts, visible or not, is examined (the engine logs its "replay message"
// line) by that pass or by one of the next coverageRuns runs of the route,
// unless it left the DLQ meanwhile; and none expires there. A message the
// engine hid as delayed (its backoff) is exempt until its hide ends, and on
// a FIFO DLQ so are the messages of its group, which SQS does not deliver
// behind it. It is safe for concurrent use.
type coverage struct {
	mu      sync.Mutex
	seq     int                    // runs of the route started
	pending map[string]*obligation // DLQ message id -> the pass it is owed to
	present map[string]bool        // the DLQ at the latest pass start
	hidden  map[string]time.Time   // DLQ message id -> until when a run's latest receive or visibility change hides it
	delayed map[string]time.Time   // DLQ message id -> until when a run hid it as delayed
	runs    map[string]int         // run id -> its seq, while it runs
}

// obligation is a message a pass owes an examination.
type obligation struct {
	seq    int      // of the pass it was in the DLQ at the start of
	missed []string // the runs that ended without examining it
}

func newCoverage() *coverage {
	return &coverage{pending: map[string]*obligation{}, present: map[string]bool{}, hidden: map[string]time.Time{},
		delayed: map[string]time.Time{}, runs: map[string]int{}}
}

// start notes the DLQ as run finds it and returns how many messages it
// holds, visible or not.
func (c *coverage) start(s *Sim, run string) int {
	now := s.clock.Now()
	msgs := s.sqs.q.Messages(s.sqs.dlq)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.runs[run] = c.seq
	present := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		present[aws.ToString(m.MessageId)] = true
	}
	for id := range c.present {
		if !present[id] && s.sqs.isLive(id) {
			s.violate("expired-in-dlq", s.subject(id, s.sqs.pubOf(id)), "it left the DLQ without being deleted: its retention expired")
		}
	}
	for id := range c.pending {
		if !present[id] {
			delete(c.pending, id) // it left the DLQ
		}
	}
	heads := map[string]bool{} // FIFO: the groups whose first message is behind
	for _, m := range msgs {
		id := aws.ToString(m.MessageId)
		if s.sqs.fifo {
			// SQS FIFO hands out a group's messages in order, none while
			// an earlier one stays: only the first of each group can be
			// received until it leaves.
			group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
			if heads[group] {
				continue
			}
			heads[group] = true
		}
		if _, owed := c.pending[id]; owed || c.delayed[id].After(now) {
			continue
		}
		c.pending[id] = &obligation{seq: c.seq}
	}
	c.present = present
	return len(msgs)
}

// examined notes the engine's line about a message of the DLQ.
func (c *coverage) examined(id, outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, id)
	if outcome == string(replay.OutcomeDelayed) {
		c.delayed[id] = c.hidden[id]
	}
}

// hide notes the visibility a receive gave messages of the DLQ.
func (c *coverage) hide(msgs []types.Message, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.hidden[aws.ToString(m.MessageId)] = until
	}
}

// hideID notes a visibility change of a message of the DLQ.
func (c *coverage) hideID(id string, until time.Time) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hidden[id] = until
}

// end notes that run ended: a message owed to it or to an earlier pass,
// still unexamined, is missed once more; past coverageRuns later runs it is
// a violation.
func (c *coverage) end(s *Sim, run string, sum replay.Summary) {
	detail, failed := run, false
	for _, r := range sum.Routes {
		if r.Route == s.sqs.route().Name {
			detail = fmt.Sprintf("%s (stop=%s, examined %d of depth %d)", run, r.StopReason, r.Examined, r.Depth)
			// A pass that a fault ended (an injected error, a crash) is no
			// choice of the engine's: it does not count.
			failed = r.StopReason == replay.StopError || r.StopReason == replay.StopCanceled
		}
	}
	c.mu.Lock()
	seq := c.runs[run]
	delete(c.runs, run)
	if failed {
		c.mu.Unlock()
		return
	}
	var late []string
	for id, ob := range c.pending {
		if ob.seq > seq {
			continue
		}
		ob.missed = append(ob.missed, detail)
		if len(ob.missed) > coverageRuns {
			late = append(late, id)
		}
	}
	misses := map[string][]string{}
	for _, id := range late {
		misses[id] = c.pending[id].missed
		delete(c.pending, id) // owed again from the next pass on
	}
	c.mu.Unlock()
	slices.Sort(late)
	for _, id := range late {
		s.violate("not-covered", s.subject(id, s.sqs.pubOf(id)), fmt.Sprintf(
			"in the DLQ when %d runs of the route started, examined by none of them: %s", len(misses[id]), strings.Join(misses[id], ", ")))
	}
}
