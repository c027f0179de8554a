package replay_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/replay"
)

// copyOfOneSend is the metadata of a replay that a run sent twice: it
// crashed between its send and its record, and the next run sent it again.
func (h *harness) copyOfOneSend(id string) msg {
	at := h.clock.Now().Add(-48 * time.Hour)
	return msg{body: order(id), meta: &replay.Metadata{ReplayCount: 1, FirstDeadLetteredAt: at, LastReplayAt: at,
		OriginalMessageID: "orig-" + id, Route: h.route.Name, RunID: "sched-crashed"}}
}

// Two copies of one send in the DLQ, together or one after the other, go
// back once: the second is recovered (deleted unsent), so a crash that
// doubled a poison order's copies does not double its dead letters again
// on each replay.
func TestCopiesOfOneSendGoBackOnce(t *testing.T) {
	for _, tt := range []struct {
		name     string
		together bool
		mod      func(*replay.Options)
	}{
		{"one batch", true, func(*replay.Options) {}},
		{"two runs", false, func(*replay.Options) {}},
		{"one batch, pipelined", true, pipelined},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.deadLetter(h.route, h.copyOfOneSend("ORD-C-1"))
			h.deadLetter(h.route, msg{body: order("ORD-C-2")})
			var sent, recovered int
			if !tt.together {
				h.clock.Advance(due)
				sent = h.run(h.engine(tt.mod), replay.Request{}).Total.Replayed
			}
			h.deadLetter(h.route, h.copyOfOneSend("ORD-C-1"))
			for range 3 { // a copy in its twin's batch waits for the twin's lease
				h.clock.Advance(due + window)
				got := h.run(h.engine(tt.mod), replay.Request{}).Total
				sent, recovered = sent+got.Replayed, recovered+got.Recovered
				if got.Errors != 0 {
					t.Fatalf("errors: %+v", countsOf(got))
				}
			}
			if sent != 2 || recovered != 1 {
				t.Fatalf("replayed %d, recovered %d: want 2 replayed (one per order), 1 copy recovered", sent, recovered)
			}
			if n := len(h.q.Messages(h.route.SourceURL)); n != 2 {
				t.Fatalf("%d in the source, want 2", n)
			}
			if v, f := h.depth(h.route.DLQURL); v+f != 0 {
				t.Fatalf("%d left in the DLQ", v+f)
			}
		})
	}
}

// A parked message is another step than the dead letter it was parked
// from: an operator's reset of it goes back, whatever the ledger holds of
// that dead letter.
func TestAParkedCopyIsNotItsDeadLetter(t *testing.T) {
	h := newHarness(t, false, nil)
	dead := h.copyOfOneSend("ORD-P-1")
	dead.meta.ReplayCount = 3
	h.deadLetter(h.route, dead)
	h.clock.Advance(due)
	if got := h.run(h.engine(), replay.Request{}).Total; got.Parked[replay.ReasonReplayExhausted] != 1 {
		t.Fatalf("counts %+v: want it parked as replay-exhausted", countsOf(got))
	}
	parking := replay.Route{Name: "orders-parking", DLQURL: h.route.ParkingURL, SourceURL: h.route.SourceURL,
		ParkingURL: h.route.ParkingURL, Key: h.route.Key, Records: true}
	h.clock.Advance(due)
	got := h.run(h.engine(), replay.Request{Routes: []replay.Route{parking}, ResetCount: true}).Total
	if got.Replayed != 1 || got.Recovered != 0 {
		t.Fatalf("the reset: %+v; want it sent to its source", countsOf(got))
	}
	if n := len(h.q.Messages(h.route.SourceURL)); n != 1 {
		t.Fatalf("%d in the source, want 1", n)
	}
}

// overlapLedger notes two MarkBatch calls in flight at once that write one
// record (HistoryKey, ID): on DynamoDB, two transactions on one item, one
// of which is cancelled.
type overlapLedger struct {
	replay.Ledger
	mu       sync.Mutex
	inflight map[string]int
	overlaps []string
}

func (l *overlapLedger) MarkBatch(ctx context.Context, recs []record.Message) []record.Marked {
	l.mu.Lock()
	for _, r := range recs {
		k := r.HistoryKey + "|" + r.ID()
		if l.inflight[k] > 0 {
			l.overlaps = append(l.overlaps, k+" "+string(r.State))
		}
		l.inflight[k]++
	}
	l.mu.Unlock()
	time.Sleep(20 * time.Millisecond) // a transaction's round trip, wall time
	out := l.Ledger.MarkBatch(ctx, recs)
	l.mu.Lock()
	for _, r := range recs {
		l.inflight[r.HistoryKey+"|"+r.ID()]--
	}
	l.mu.Unlock()
	return out
}

// A copy that waits for its twin writes no record of its own: the ledger
// never gets two writes of the step's record at once (the twin's SENT and
// the copy's SEEN), and a dry run counts the copy as a real run does.
func TestACopyBesideItsTwinWritesNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*replay.Options)
	}{{"lockstep", func(*replay.Options) {}}, {"pipelined", pipelined}} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.deadLetter(h.route, h.copyOfOneSend("ORD-C-1"))
			h.deadLetter(h.route, h.copyOfOneSend("ORD-C-1"))
			h.clock.Advance(due)
			dry := h.run(h.engine(tt.mod), replay.Request{DryRun: true}).Total
			l := &overlapLedger{Ledger: h.ledger, inflight: map[string]int{}}
			o := h.options()
			tt.mod(&o)
			got := h.run(replay.New(h.q, l, o), replay.Request{}).Total
			if len(l.overlaps) > 0 {
				t.Fatalf("one record in two ledger calls at once: %q", l.overlaps)
			}
			if got.Replayed != 1 || got.Delayed != 1 || dry.Replayed != got.Replayed || dry.Delayed != got.Delayed {
				t.Fatalf("dry run %+v, run %+v: want one replayed and its copy delayed, in both", countsOf(dry), countsOf(got))
			}
		})
	}
}
