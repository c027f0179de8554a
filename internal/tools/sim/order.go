package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The invariants of a lane that holds its message groups (Lane.Groups).

// checkGroups checks, at the end, the order of each group (checkOrder) and
// that nothing is left held: every hold ended and every held record was
// applied, routed, or went back to the source as its group's head.
func (s *Sim) checkGroups() {
	g := s.groups
	holds, _ := g.mem.List(context.Background())
	for _, h := range holds {
		n, _ := g.mem.Count(context.Background(), h.Group)
		s.violate("hold-left", h.Group, fmt.Sprintf("still %s at the end behind head %s (%s), %d records held; parked %q",
			h.State, clip(h.Head, 60), s.subject("", s.sqs.pubOf(h.Head)), n, h.Parked))
	}
	g.mu.Lock()
	var left []heldRecord
	for _, recs := range g.held {
		for _, rec := range recs {
			left = append(left, rec)
		}
	}
	g.mu.Unlock()
	slices.SortFunc(left, func(a, b heldRecord) int { return strings.Compare(a.id, b.id) })
	for _, rec := range left {
		s.violate("held-left", s.subject(rec.id, rec.pub), "still held behind its group's hold at the end")
	}
	s.checkOrder()
}

// checkOrder checks the order invariant of a lane that holds its groups:
// in each message group, the valid orders are first invoiced (the tax
// service's first effect for the order) in the order they were published.
// Exempt are the heads a release went past (by the operator, or by a lane
// that skips): their group went on without them, and they are invoiced
// later (an operator brought them back from the parking queue) or never.
// An order never invoiced is another invariant's. It reports, for each
// group out of order, its first inversion, and counts the groups.
func (s *Sim) checkOrder() {
	byGroup := map[string][]*Publication{}
	var groups []string
	for _, p := range s.pubs[:s.next] {
		if p.Kind != KindValid {
			continue
		}
		if _, ok := byGroup[p.Group]; !ok {
			groups = append(groups, p.Group)
		}
		byGroup[p.Group] = append(byGroup[p.Group], p)
	}
	slices.Sort(groups)
	s.groups.mu.Lock()
	released := s.groups.released
	for _, pubs := range byGroup {
		for _, p := range pubs {
			if released[p.N] {
				s.groups.stats.ReleasedHeads++
			}
		}
	}
	s.groups.mu.Unlock()
	for _, group := range groups {
		var first *Publication // of the earlier orders, the one invoiced last
		firstSeq, inversions := 0, 0
		var report []string
		for _, p := range byGroup[group] {
			effects := s.tax.effectsOf(p.OrderID)
			if released[p.N] || len(effects) == 0 {
				continue
			}
			seq := effects[0].seq
			if seq < firstSeq {
				inversions++
				if report == nil {
					report = []string{s.subject("", first.N), s.subject("", p.N), fmt.Sprintf("invoice %d then %d", firstSeq, seq)}
				}
				continue
			}
			first, firstSeq = p, seq
		}
		if inversions == 0 {
			continue
		}
		s.groups.mu.Lock()
		s.groups.stats.OutOfOrder++
		s.groups.mu.Unlock()
		s.violate("out-of-order", group+" "+report[0]+" "+report[1], fmt.Sprintf(
			"the later %s was first invoiced before the earlier %s (%s); %d orders of the group invoiced before an order published earlier",
			report[1], report[0], report[2], inversions))
	}
}
