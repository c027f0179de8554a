package replay

import "hash/maphash"

// seenBits and seenHashes size the filter of message ids examined in a run:
// 256 KiB, with a false-positive rate near 0.04% at 100,000 ids and under 1%
// at 200,000. A false positive leaves a message untouched for the next run.
const (
	seenBits   = 1 << 21
	seenHashes = 5
)

// seenFilter is a Bloom filter of the message ids a run has examined, so
// that a message received again in the same run (released by a filter or a
// dry run, or visible again after an error) is not examined twice. Its size
// is fixed: the run's memory does not grow with the number of messages.
type seenFilter struct {
	bits         []uint64
	seedA, seedB maphash.Seed
}

func newSeenFilter() *seenFilter {
	return &seenFilter{bits: make([]uint64, seenBits/64), seedA: maphash.MakeSeed(), seedB: maphash.MakeSeed()}
}

// add adds id and reports whether it was (probably) there already.
func (f *seenFilter) add(id string) (seen bool) {
	a, b := maphash.String(f.seedA, id), maphash.String(f.seedB, id)|1
	seen = true
	for i := range uint64(seenHashes) {
		bit := (a + i*b) % seenBits
		word, mask := bit/64, uint64(1)<<(bit%64)
		if f.bits[word]&mask == 0 {
			seen = false
			f.bits[word] |= mask
		}
	}
	return seen
}
