package holdtest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/record"
)

// message is the record of SequenceNumber n with body, as a held message
// (its Seq is hold.PadSeq of n).
func message(n, body string) hold.Message {
	return held(events.SQSMessage{
		MessageId:     "m-" + n,
		ReceiptHandle: "receipt-" + n,
		Body:          body,
		Attributes:    map[string]string{"SequenceNumber": n},
	})
}

// held is r as the consumer holds it (package record).
func held(r events.SQSMessage) hold.Message {
	m, err := record.Held(r)
	if err != nil {
		panic(err) // a record of this file's own
	}
	return m
}

// recordOf is the record m keeps.
func recordOf(t *testing.T, m hold.Message) events.SQSMessage {
	t.Helper()
	r, err := record.Of(m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bodies is the bodies of ms, in their order (nil for none).
func bodies(ms []hold.Message) []string {
	var out []string
	for _, m := range ms {
		r, err := record.Of(m)
		if err != nil {
			r.Body = "<" + err.Error() + ">"
		}
		out = append(out, r.Body)
	}
	return out
}

// mustBeHold fails t unless got is want: the same fields, the times the
// same instants.
func mustBeHold(t *testing.T, what string, got, want hold.Hold) {
	t.Helper()
	if got.Group != want.Group || got.Head != want.Head || got.HeadBody != want.HeadBody || got.State != want.State || got.Parked != want.Parked ||
		got.Version != want.Version || !got.Since.Equal(want.Since) || !got.Updated.Equal(want.Updated) {
		t.Fatalf("%s =\n%+v\nwant\n%+v", what, got, want)
	}
}

func mustBegin(t *testing.T, s hold.Store, group, head string, now time.Time) hold.Hold {
	t.Helper()
	h, err := s.Begin(t.Context(), hold.Hold{Group: group, Head: head}, now)
	if err != nil {
		t.Fatalf("Begin %q: %v", group, err)
	}
	return h
}

func mustAppend(t *testing.T, s hold.Store, group string, m hold.Message, now time.Time) hold.Hold {
	t.Helper()
	h, err := s.Append(t.Context(), group, m, now)
	if err != nil {
		t.Fatalf("Append %s to %q: %v", m.Seq, group, err)
	}
	return h
}

// mustHold is the stored hold of group, read with Holds; t fails when
// there is none.
func mustHold(t *testing.T, s hold.Store, group string) hold.Hold {
	t.Helper()
	hs, err := s.Holds(t.Context(), []string{group})
	if err != nil {
		t.Fatalf("Holds %q: %v", group, err)
	}
	h, ok := hs[group]
	if !ok {
		t.Fatalf("group %q has no hold", group)
	}
	return h
}

func mustNext(t *testing.T, s hold.Store, group string, n int) []hold.Message {
	t.Helper()
	ms, err := s.Next(t.Context(), group, n)
	if err != nil {
		t.Fatalf("Next(%q, %d): %v", group, n, err)
	}
	if len(ms) > max(n, 0) {
		t.Fatalf("Next(%q, %d) returned %d records", group, n, len(ms))
	}
	return ms
}

func mustCount(t *testing.T, s hold.Store, group string) int {
	t.Helper()
	n, err := s.Count(t.Context(), group)
	if err != nil {
		t.Fatalf("Count %q: %v", group, err)
	}
	return n
}

func mustRemove(t *testing.T, s hold.Store, group, seq string) {
	t.Helper()
	if err := s.Remove(t.Context(), group, seq); err != nil {
		t.Fatalf("Remove %s from %q: %v", seq, group, err)
	}
}

func mustUpdate(t *testing.T, s hold.Store, h hold.Hold, now time.Time) hold.Hold {
	t.Helper()
	got, err := s.Update(t.Context(), h, now)
	if err != nil {
		t.Fatalf("Update %q at version %d: %v", h.Group, h.Version, err)
	}
	return got
}

func mustEnd(t *testing.T, s hold.Store, h hold.Hold) {
	t.Helper()
	if err := s.End(t.Context(), h); err != nil {
		t.Fatalf("End %q at version %d: %v", h.Group, h.Version, err)
	}
}

func mustList(t *testing.T, s hold.Store) []hold.Hold {
	t.Helper()
	hs, err := s.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return hs
}

// seqSet is a set of Seqs that goroutines add to.
type seqSet struct {
	mu   sync.Mutex
	seqs map[string]bool
}

func newSeqSet() *seqSet { return &seqSet{seqs: map[string]bool{}} }

func (s *seqSet) add(seq string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seqs[seq] = true
}

func (s *seqSet) sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for seq := range s.seqs {
		out = append(out, seq)
	}
	slices.Sort(out)
	return out
}
