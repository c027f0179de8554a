package sim

import (
	"fmt"
	"slices"
	"testing"
)

// determinismSeeds are lockstep seeds (see concurrentSeed) of each lane:
// the sample's (22), keyed at order.ref (3), with long keys (4), with
// integer keys (12), without records (31); of each choice of Groups: off
// (3, 12, 22), hold (4), skip (31); and of each fault of the schedule:
// late and missed ticks (3, 4, 31), a pause (12).
var determinismSeeds = []uint64{3, 4, 12, 22, 31}

// TestSimIsDeterministic runs a seed twice: the same seed must do the same
// things at the same simulated times, or a failing seed would not replay.
// On a difference it prints the events only one of the two runs had.
func TestSimIsDeterministic(t *testing.T) {
	for _, seed := range determinismSeeds {
		var runs [2]*Trace
		for i := range runs {
			rep, err := Run(RandomConfig(seed, 200))
			if err != nil {
				t.Fatal(err)
			}
			runs[i] = rep.Trace
		}
		if runs[0].Digest() == runs[1].Digest() && runs[0].Len() == runs[1].Len() {
			continue
		}
		t.Errorf("seed %d: two runs differ: %d events (digest %x), then %d (digest %x)", seed, runs[0].Len(), runs[0].Digest(), runs[1].Len(), runs[1].Digest())
		for _, line := range differentEvents(runs[0], runs[1], 40) {
			t.Log(line)
		}
	}
}

// differentEvents lists, in time order, at most limit events that one of a
// and b has more often than the other, each after the count it has more of
// in b ("+1": one more in b; "-1": one more in a).
func differentEvents(a, b *Trace, limit int) []string {
	count := map[string]int{}
	for i, t := range []*Trace{a, b} {
		t.mu.Lock()
		for _, e := range t.events {
			count[fmt.Sprintf("%019d %s %s %s %s (%s)", e.At.Sub(t.start), fmtOffset(e.At.Sub(t.start)), e.Actor, e.Op, e.Subject, e.Detail)] += 2*i - 1
		}
		t.mu.Unlock()
	}
	var lines []string
	for line, n := range count {
		if n != 0 {
			lines = append(lines, line)
		}
	}
	slices.Sort(lines) // each begins with its offset in zero-padded nanoseconds
	lines = lines[:min(limit, len(lines))]
	for i, line := range lines {
		lines[i] = fmt.Sprintf("%+d %s", count[line], line[20:])
	}
	return lines
}
