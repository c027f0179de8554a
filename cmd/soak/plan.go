package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/homingdlq/homing/internal/tools/drill"
)

// phases of the soak, in order; each publishes a third of the orders.
const (
	phaseOutage = iota
	phaseFlaky
	phaseRecovery
	phases
)

// plan is what the soak publishes and what it must find at the end.
type plan struct {
	run        string              // marks every orderId: "ORD-S<run>-..."
	bodies     [phases][]string    // messages per phase, shuffled
	valid      []string            // orderIds to invoice exactly once
	duplicates int                 // second deliveries of valid orders, same payload
	conflicts  int                 // second payloads under a valid orderId
	rejects    []string            // orderIds the tax service refuses (422)
	invalid    map[string]int      // reason -> messages expected in the invalid queue
	never      map[string]struct{} // orderIds that must never be invoiced
}

// Shares of the orders, as producers and their bugs would make them.
const (
	duplicateShare = 0.05
	conflictShare  = 0.01
	invalidShare   = 0.02
	rejectShare    = 0.005
)

func (p plan) prefix() string { return "ORD-S" + p.run + "-" }

func (p plan) messages() int {
	n := 0
	for _, b := range p.bodies {
		n += len(b)
	}
	return n
}

// newPlan builds n valid orders spread over the phases, with producer
// duplicates (the same payload again), conflicting duplicates (the same
// orderId, another payload), orders the tax service refuses, and invalid
// orders of every reason (one payload-too-large), shuffled within each
// phase by rng.
func newPlan(run string, n int, rng *rand.Rand) plan {
	p := plan{run: run, invalid: map[string]int{}, never: map[string]struct{}{}}
	id := func(i int) string { return fmt.Sprintf("%s%06d", p.prefix(), i) }
	phaseOf := func(i, of int) int { return i * phases / of }
	for i := range n {
		p.bodies[phaseOf(i, n)] = append(p.bodies[phaseOf(i, n)], drill.Encode(drill.Order(id(i), i)))
		p.valid = append(p.valid, id(i))
	}
	picked := rng.Perm(n)
	p.duplicates = int(float64(n) * duplicateShare)
	for _, i := range picked[:p.duplicates] {
		p.bodies[phaseOf(i, n)] = append(p.bodies[phaseOf(i, n)], drill.Encode(drill.Order(id(i), i)))
	}
	p.conflicts = int(float64(n) * conflictShare)
	for _, i := range picked[p.duplicates : p.duplicates+p.conflicts] {
		p.bodies[phaseOf(i, n)] = append(p.bodies[phaseOf(i, n)], drill.Encode(drill.Conflicting(drill.Order(id(i), i))))
		p.invalid["conflicting-duplicate"]++
	}
	rejects := max(phases, int(float64(n)*rejectShare))
	for k := range rejects {
		rid := fmt.Sprintf("%sREJECT-%04d", p.prefix(), k)
		p.bodies[phaseOf(k, rejects)] = append(p.bodies[phaseOf(k, rejects)], drill.Encode(drill.Order(rid, k)))
		p.rejects = append(p.rejects, rid)
		p.never[rid] = struct{}{}
		p.invalid["rejected-by-tax-service"]++
	}
	// Every reason at least once; a single oversized payload (300 KiB).
	reasons := make([]string, 0, len(drill.InvalidReasons))
	for _, r := range drill.InvalidReasons {
		if r != "payload-too-large" {
			reasons = append(reasons, r)
		}
	}
	invalids := 1 + max(len(reasons), int(float64(n)*invalidShare))
	for k := range invalids {
		bid := fmt.Sprintf("%sBAD-%04d", p.prefix(), k)
		reason := "payload-too-large"
		if k > 0 {
			reason = reasons[(k-1)%len(reasons)]
		}
		p.bodies[phaseOf(k, invalids)] = append(p.bodies[phaseOf(k, invalids)], drill.Invalid(reason, bid))
		p.never[bid] = struct{}{}
		p.invalid[reason]++
	}
	for _, b := range p.bodies {
		rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	}
	return p
}
