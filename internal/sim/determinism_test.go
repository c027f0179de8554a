package sim

import "testing"

// TestSimIsDeterministic runs a seed twice: the same seed must do the same
// things at the same simulated times, or a failing seed would not replay.
func TestSimIsDeterministic(t *testing.T) {
	for _, seed := range []uint64{3, 4} {
		var digests [2]uint64
		var lens [2]int
		for i := range digests {
			rep, err := Run(RandomConfig(seed, 200))
			if err != nil {
				t.Fatal(err)
			}
			digests[i] = rep.Trace.Digest()
			lens[i] = rep.Trace.Len()
		}
		if digests[0] != digests[1] || lens[0] != lens[1] {
			t.Errorf("seed %d: two runs differ: %d events (digest %x), then %d (digest %x)", seed, lens[0], digests[0], lens[1], digests[1])
		}
	}
}
