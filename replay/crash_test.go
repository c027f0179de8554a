package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/homingdlq/homing/internal/crash"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/replay"
)

// pipelined runs 4 workers with a batch's finish beside the next batch's
// receive and claim: the engine's default path.
func pipelined(o *replay.Options) { o.Workers, o.Lockstep = 4, false }

// crashRun runs the harness's route on its ports wrapped by crash, with
// opts modified by mod, and returns the run's error.
func (h *harness) crashRun(c *crash.Crash, mod func(*replay.Options)) error {
	o := h.options()
	mod(&o)
	_, err := h.tryRun(context.Background(), replay.New(c.Queue(h.q), c.Ledger(h.ledger), o), replay.Request{})
	return err
}

// A crash after a batch's sends and before its deletes loses nothing and
// leaves nothing in the DLQ. In lockstep the batch's final records are
// written before its deletes, so the next run deletes the messages without
// sending them again. Outside lockstep they ride with the next batch's claim
// (or are flushed when the worker ends) beside the deletes: a crash before
// they land leaves INTENT, and the next run sends those messages again (the
// consumer's idempotency absorbs the copies).
func TestCrashBetweenSendAndDeleteIsHarmless(t *testing.T) {
	for _, tt := range []struct {
		name     string
		mod      func(*replay.Options)
		lockstep bool
	}{
		{"lockstep", func(o *replay.Options) { o.Lockstep = true }, true},
		{"pipelined", pipelined, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.orders("C", 5)
			h.clock.Advance(due)
			cr := crash.New(crash.AtFirst("DeleteMessageBatch"))
			if err := h.crashRun(cr, tt.mod); !errors.Is(err, crash.ErrCrash) || !cr.Crashed() {
				t.Fatalf("err = %v, crashed = %v", err, cr.Crashed())
			}
			if n := len(h.q.Messages(h.route.SourceURL)); n != 5 {
				t.Fatalf("%d in the source after the crash, want 5", n)
			}
			if n := len(h.q.Messages(h.route.DLQURL)); n != 5 {
				t.Fatalf("%d in the DLQ after the crash, want 5", n)
			}

			h.clock.Advance(window)
			c := h.run(h.engine(tt.mod), replay.Request{}).Total
			switch {
			case c.Examined != 5 || c.Recovered+c.Replayed != 5 || c.Errors != 0:
				t.Fatalf("the recovery examined %d, recovered %d, replayed %d, errors %d; want 5 recovered or replayed", c.Examined, c.Recovered, c.Replayed, c.Errors)
			case tt.lockstep && c.Recovered != 5:
				t.Fatalf("in lockstep the recovery sent %d again, want none", c.Replayed)
			}
			if n := len(h.q.Messages(h.route.SourceURL)); n != 5+c.Replayed {
				t.Fatalf("%d in the source after the recovery, want %d", n, 5+c.Replayed)
			}
			if n := len(h.q.Messages(h.route.DLQURL)); n != 0 {
				t.Fatalf("%d left in the DLQ", n)
			}
		})
	}
}

// Wherever a run crashes, the next run loses nothing, deletes what the
// crashed run sent and recorded without sending it again, and sends again
// only what the crash left without a final record. The sweep crashes a
// pipelined run of 4 workers over 45 dead letters at each of its port calls
// in turn.
func TestACrashAtAnyCallLosesNothing(t *testing.T) {
	const n = 45
	count := newHarness(t, false, nil)
	count.orders("K", n)
	count.clock.Advance(due)
	counter := crash.New(nil)
	if err := count.crashRun(counter, pipelined); err != nil {
		t.Fatal(err)
	}
	calls := counter.Calls()
	if calls < n/replay.MaxBatch {
		t.Fatalf("a run of %d dead letters made %d port calls", n, calls)
	}
	for at := 1; at <= calls; at++ {
		t.Run(strconv.Itoa(at), func(t *testing.T) {
			h := newHarness(t, false, nil)
			ids := h.orders("K", n)
			keys := map[string]string{} // DLQ message id -> business key
			for i, id := range ids {
				keys[id] = fmt.Sprintf("ORD-K-%03d", i)
			}
			h.clock.Advance(due)
			_ = h.crashRun(crash.New(crash.AtCall(at)), pipelined)

			left, final := 0, 0
			for _, m := range h.stored(h.route.DLQURL) {
				left++
				id := aws.ToString(m.raw.MessageId)
				history, err := h.ledger.History(context.Background(), record.HistoryKey(keys[id], id))
				if err != nil {
					t.Fatal(err)
				}
				for _, rec := range history {
					if rec.MessageID == id && rec.State.Final() {
						final++
					}
				}
			}
			sent := len(h.q.Messages(h.route.SourceURL))

			h.clock.Advance(window)
			s := h.run(h.engine(pipelined), replay.Request{})
			if s.Total.Recovered != final || s.Total.Replayed != left-final || s.Total.Errors != 0 {
				t.Fatalf("the recovery recovered %d and replayed %d with %d errors; the crash left %d in the DLQ, %d of them with a final record",
					s.Total.Recovered, s.Total.Replayed, s.Total.Errors, left, final)
			}
			if n := len(h.q.Messages(h.route.DLQURL)); n != 0 {
				t.Fatalf("%d left in the DLQ", n)
			}
			copies := map[string]int{}
			for _, m := range h.stored(h.route.SourceURL) {
				copies[keyOf(m.body)]++
			}
			if len(copies) != len(ids) {
				t.Fatalf("%d of %d orders reached the source", len(copies), len(ids))
			}
			if total := sent + s.Total.Replayed; len(h.q.Messages(h.route.SourceURL)) != total {
				t.Fatalf("%d in the source, want the %d the crashed run sent and the %d the recovery did", len(h.q.Messages(h.route.SourceURL)), sent, s.Total.Replayed)
			}
		})
	}
}
