package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/order"
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
		s.violate("not-quiescent", "", fmt.Sprintf("after %s: source %d visible + %d in flight, DLQ %d + %d", fmtOffset(s.clock.Now().Sub(s.start)), sv, sf, dv, df))
	}
	for _, m := range s.sqs.q.Messages(s.sqs.dlq) {
		id := aws.ToString(m.MessageId)
		s.violate("left-in-dlq", s.subject(id, s.sqs.pubOf(id)), "still in the DLQ at the end")
	}
	for _, id := range s.sqs.vanished() {
		s.violate("expired-unseen", s.subject(id, s.sqs.pubOf(id)), "sent by "+s.sqs.sender(id)+", never deleted, no longer in any queue: retention expired")
	}

	invalidAt := map[int][]string{}
	for _, m := range s.sqs.q.Messages(s.sqs.invalid) {
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
	for _, m := range s.sqs.q.Messages(s.sqs.parking) {
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
	for _, p := range s.pubs {
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
		if s.removed[p.N] && !s.ackedPubs[p.N] && p.Hash != "" && s.completedWith(p.OrderID) == p.Hash && len(at) == 0 {
			at = append(at, placeResolved)
		}
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
			case !slices.Contains(invalidAt[p.N], string(order.ReasonConflictingDuplicate)):
				s.violate("conflict-not-routed", s.subject("", p.N), fmt.Sprintf("another payload of the order was invoiced; it ended %v", at))
			}
		}
	}

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
