package replay_test

import (
	"testing"
	"time"

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
