package sim

import (
	"context"
	"fmt"
	"slices"
)

// The invariants of a lane that keeps its message groups in order
// (Lane.Groups).

// checkGroups checks, at the end, that no group is left parked (the
// operator released each) and the order of each group (checkOrder).
func (s *Sim) checkGroups() {
	parks, _ := s.groups.mem.List(context.Background())
	for _, p := range parks {
		s.violate("park-left", p.Group, fmt.Sprintf("still parked at the end behind head %s (%s, %s in the %s queue): parked %d, moved %d, settled %d of %d, round %v",
			s.subject(p.Head, s.sqs.pubOf(p.Head)), p.Reason, fmtOffset(p.Since.Sub(s.start)), p.Queue, p.Parked, p.Moved, p.Settled, p.Sent, p.Releasing != ""))
	}
	s.checkOrder()
}

// checkOrder checks the order invariant of a lane that keeps its groups
// in order: in each message group, the valid orders are first invoiced (the
// tax service's first effect for the order) in the order they were
// published. Exempt are the heads a lane that skips went on without
// (parked alone): they are invoiced later, when an operator brings them
// back, or never. An order never invoiced is another invariant's. It
// reports, for each group out of order, its first inversion, and counts the
// groups.
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
	g := s.groups
	g.mu.Lock()
	skipped := g.skipped
	for _, pubs := range byGroup {
		for _, p := range pubs {
			if skipped[p.N] {
				g.stats.Skipped++
			}
		}
	}
	g.mu.Unlock()
	for _, group := range groups {
		var first *Publication // of the earlier orders, the one invoiced last
		firstSeq, inversions := 0, 0
		var report []string
		for _, p := range byGroup[group] {
			effects := s.tax.effectsOf(p.OrderID)
			if skipped[p.N] || len(effects) == 0 {
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
		g.count(func(st *GroupStats) { st.OutOfOrder++ })
		s.violate("out-of-order", group+" "+report[0]+" "+report[1], fmt.Sprintf(
			"the later %s was first invoiced before the earlier %s (%s); %d orders of the group invoiced before an order published earlier",
			report[1], report[0], report[2], inversions))
	}
}
