package replay

import "hash/maphash"

// seenBits and seenHashes size the filter of message ids a run examined and
// left in their DLQ: 256 KiB, with a false-positive rate near 0.04% at
// 100,000 ids and under 1% at 200,000. A false positive leaves a message
// untouched for the next run.
const (
	seenBits   = 1 << 21
	seenHashes = 5
)

// seen holds the message ids a run has examined, so that a message received
// again in the same run (released by a filter or a dry run, hidden or kept
// after an error, or visible again while its batch is still on its way) is
// not examined twice. An id is exact while its batch is on its way (at
// most the batches the workers hold); when the batch ends, the id of a
// message deleted from its DLQ is dropped (it cannot be received again; a
// copy SQS delivers twice finds the ledger's final record and is removed as
// recovered), and the id of a message left in the DLQ goes into a Bloom
// filter of fixed size, made when the first is left. The run's memory does
// not grow with the number of messages. Callers hold the run's lock.
type seen struct {
	inFlight map[string]struct{}
	left     *seenFilter // nil until a message is left in its DLQ
}

func newSeen() *seen { return &seen{inFlight: map[string]struct{}{}} }

// add adds id to those on their way and reports whether it was (probably)
// examined before.
func (s *seen) add(id string) bool {
	if _, ok := s.inFlight[id]; ok || s.left != nil && s.left.has(id) {
		return true
	}
	s.inFlight[id] = struct{}{}
	return false
}

// done ends the way of id: deleted from its DLQ, it is forgotten;
// otherwise it is remembered as left there.
func (s *seen) done(id string, deleted bool) {
	delete(s.inFlight, id)
	if deleted {
		return
	}
	if s.left == nil {
		s.left = newSeenFilter()
	}
	s.left.add(id)
}

// seenFilter is a Bloom filter of message ids. Its size is fixed.
type seenFilter struct {
	bits         []uint64
	seedA, seedB maphash.Seed
}

func newSeenFilter() *seenFilter {
	return &seenFilter{bits: make([]uint64, seenBits/64), seedA: maphash.MakeSeed(), seedB: maphash.MakeSeed()}
}

// add adds id and reports whether it was (probably) there already.
func (f *seenFilter) add(id string) (seen bool) {
	a, b := f.hashes(id)
	seen = true
	for i := range uint64(seenHashes) {
		word, mask := f.bit(a, b, i)
		if f.bits[word]&mask == 0 {
			seen = false
			f.bits[word] |= mask
		}
	}
	return seen
}

// has reports whether id is (probably) there.
func (f *seenFilter) has(id string) bool {
	a, b := f.hashes(id)
	for i := range uint64(seenHashes) {
		if word, mask := f.bit(a, b, i); f.bits[word]&mask == 0 {
			return false
		}
	}
	return true
}

func (f *seenFilter) hashes(id string) (a, b uint64) {
	return maphash.String(f.seedA, id), maphash.String(f.seedB, id) | 1
}

func (f *seenFilter) bit(a, b, i uint64) (word uint64, mask uint64) {
	bit := (a + i*b) % seenBits
	return bit / 64, uint64(1) << (bit % 64)
}
