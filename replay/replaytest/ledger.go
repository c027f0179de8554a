package replaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency/idempotencytest"
	"github.com/homingdlq/homing/replay"
)

// RunLedger runs the contract every replay.Ledger passes. newLedger returns
// a ledger with no records (a fresh table, for DynamoDB) whose clock is now.
func RunLedger(t *testing.T, newLedger func(t *testing.T, now func() time.Time) replay.Ledger, gaps ...idempotencytest.Gap) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	fresh := func(t *testing.T) (replay.Ledger, *Clock) {
		c := NewClock(t0)
		return newLedger(t, c.Now), c
	}
	rec := func(state replay.State, run string, at time.Time) replay.MessageRecord {
		return replay.MessageRecord{
			HistoryKey: replay.HistoryKey("ORD-1", ""), MessageID: "dlq-1", State: state, Route: "orders",
			Key: "ORD-1", OriginalMessageID: "orig-1", RunID: run, FirstSeenAt: at, At: at,
			ExpiresAt: at.Add(replay.DefaultRecordLifetime),
		}
	}
	mark := func(t *testing.T, l replay.Ledger, r replay.MessageRecord, wantOK bool) replay.MessageRecord {
		t.Helper()
		cur, ok, err := l.Mark(ctx, r)
		if err != nil || ok != wantOK {
			t.Fatalf("Mark(%s by %s): ok=%v err=%v, want ok=%v (current %+v)", r.State, r.RunID, ok, err, wantOK, cur)
		}
		return cur
	}

	t.Run("seen is written once", func(t *testing.T) {
		l, _ := fresh(t)
		mark(t, l, rec(replay.Seen, "run-a", t0), true)
		cur := mark(t, l, rec(replay.Seen, "run-b", t0.Add(time.Minute)), false)
		if cur.State != replay.Seen || cur.RunID != "run-a" || !cur.FirstSeenAt.Equal(t0) {
			t.Fatalf("current = %+v", cur)
		}
	})

	t.Run("intent from absent or seen keeps the first sighting", func(t *testing.T) {
		l, _ := fresh(t)
		mark(t, l, rec(replay.Seen, "run-a", t0), true)
		in := rec(replay.Intent, "run-b", t0.Add(time.Hour))
		in.LeaseUntil = in.At.Add(time.Minute)
		mark(t, l, in, true)
		other := rec(replay.Intent, "run-c", t0)
		other.MessageID = "dlq-2"
		mark(t, l, other, true)
		h := history(t, l, in.HistoryKey)
		if got := h["dlq-1"]; got.State != replay.Intent || got.RunID != "run-b" || !got.FirstSeenAt.Equal(t0) || !got.LeaseUntil.Equal(in.LeaseUntil) {
			t.Fatalf("record = %+v", got)
		}
	})

	t.Run("a mark returns the record it replaced", func(t *testing.T) {
		l, _ := fresh(t)
		in := rec(replay.Intent, "run-a", t0)
		in.LeaseUntil = t0.Add(time.Minute)
		if prev := mark(t, l, in, true); prev.State != "" {
			t.Fatalf("first INTENT replaced %+v, want nothing: the message is seen for the first time", prev)
		}
		sent := rec(replay.Sent, "run-a", t0.Add(time.Second))
		if prev := mark(t, l, sent, true); prev.State != replay.Intent || prev.RunID != "run-a" {
			t.Fatalf("SENT replaced %+v, want the INTENT of run-a", prev)
		}
		seen := rec(replay.Seen, "run-b", t0)
		seen.MessageID = "dlq-2"
		if prev := mark(t, l, seen, true); prev.State != "" {
			t.Fatalf("first SEEN replaced %+v", prev)
		}
		again := rec(replay.Intent, "run-b", t0.Add(time.Second))
		again.MessageID = "dlq-2"
		again.LeaseUntil = again.At.Add(time.Minute)
		if prev := mark(t, l, again, true); prev.State != replay.Seen {
			t.Fatalf("INTENT over SEEN replaced %+v, want the SEEN record", prev)
		}
	})

	t.Run("a batch mark applies the rule to each record", func(t *testing.T) {
		l, _ := fresh(t)
		bl, ok := l.(replay.BatchLedger)
		if !ok {
			t.Skip("not a replay.BatchLedger")
		}
		at := t0.Add(time.Minute)
		held := rec(replay.Intent, "run-a", t0)
		held.MessageID = "held"
		held.LeaseUntil = t0.Add(time.Hour)
		done := rec(replay.Intent, "run-a", t0)
		done.MessageID = "done"
		done.LeaseUntil = t0.Add(time.Minute)
		seen := rec(replay.Seen, "run-a", t0)
		seen.MessageID = "seen"
		for _, r := range []replay.MessageRecord{held, done, seen} {
			mark(t, l, r, true)
		}
		final := rec(replay.Sent, "run-a", t0)
		final.MessageID = "done"
		mark(t, l, final, true)
		var batch []replay.MessageRecord
		for _, id := range []string{"new", "held", "done", "seen"} {
			r := rec(replay.Intent, "run-b", at)
			r.MessageID = id
			r.LeaseUntil = at.Add(time.Minute)
			batch = append(batch, r)
		}
		got := bl.MarkBatch(ctx, batch)
		if len(got) != 4 {
			t.Fatalf("%d results for 4 records", len(got))
		}
		for i, want := range []struct {
			ok    bool
			state replay.State
		}{{true, ""}, {false, replay.Intent}, {false, replay.Sent}, {true, replay.Seen}} {
			if got[i].Err != nil || got[i].OK != want.ok || got[i].Record.State != want.state {
				t.Errorf("%s: %+v, want ok=%v with the record %q", batch[i].MessageID, got[i], want.ok, want.state)
			}
		}
		h := history(t, l, held.HistoryKey)
		if h["new"].RunID != "run-b" || h["seen"].State != replay.Intent || h["held"].RunID != "run-a" || h["done"].State != replay.Sent {
			t.Fatalf("history after the batch: %+v", h)
		}
		var settle []replay.MessageRecord
		for _, id := range []string{"new", "held"} {
			r := rec(replay.Sent, "run-b", at)
			r.MessageID = id
			settle = append(settle, r)
		}
		got = bl.MarkBatch(ctx, settle)
		if got[0].Err != nil || !got[0].OK || got[1].Err != nil || got[1].OK || got[1].Record.RunID != "run-a" {
			t.Fatalf("settling: %+v", got)
		}
	})

	t.Run("a live intent stands and a passed one is taken over", func(t *testing.T) {
		l, _ := fresh(t)
		a := rec(replay.Intent, "run-a", t0)
		a.LeaseUntil = t0.Add(time.Minute)
		mark(t, l, a, true)
		b := rec(replay.Intent, "run-b", t0.Add(30*time.Second))
		b.LeaseUntil = b.At.Add(time.Minute)
		if cur := mark(t, l, b, false); cur.State != replay.Intent || cur.RunID != "run-a" || !cur.LeaseUntil.Equal(a.LeaseUntil) {
			t.Fatalf("current = %+v", cur)
		}
		renew := a
		renew.At, renew.LeaseUntil = t0.Add(40*time.Second), t0.Add(2*time.Minute)
		mark(t, l, renew, true)
		b.At, b.LeaseUntil = renew.LeaseUntil, renew.LeaseUntil.Add(time.Minute)
		mark(t, l, b, true)
		sent := rec(replay.Sent, "run-a", b.At)
		mark(t, l, sent, false) // run-a lost its claim
	})

	t.Run("sent, parked and resolved only over the own intent and final", func(t *testing.T) {
		for _, final := range []replay.State{replay.Sent, replay.Parked, replay.Resolved} {
			t.Run(string(final), func(t *testing.T) {
				l, _ := fresh(t)
				done := rec(final, "run-a", t0.Add(time.Minute))
				done.ReplayCount, done.Reason = 2, map[replay.State]string{replay.Parked: replay.ReasonReplayExhausted, replay.Resolved: replay.ReasonAlreadyApplied}[final]
				if cur := mark(t, l, done, false); cur.State != "" {
					t.Fatalf("absent record: current = %+v", cur)
				}
				mark(t, l, rec(replay.Seen, "run-a", t0), true)
				mark(t, l, done, false)
				other := rec(replay.Intent, "run-b", t0)
				other.LeaseUntil = t0.Add(time.Second)
				mark(t, l, other, true)
				mark(t, l, done, false)
				own := rec(replay.Intent, "run-a", t0.Add(time.Second))
				own.LeaseUntil = own.At.Add(time.Minute)
				mark(t, l, own, true)
				mark(t, l, done, true)
				again := rec(replay.Intent, "run-c", t0.Add(time.Hour))
				again.LeaseUntil = again.At.Add(time.Minute)
				if cur := mark(t, l, again, false); cur.State != final {
					t.Fatalf("current = %+v, want %s", cur, final)
				}
				mark(t, l, rec(replay.Seen, "run-c", t0.Add(time.Hour)), false)
				got := history(t, l, done.HistoryKey)["dlq-1"]
				if got.State != final || got.ReplayCount != 2 || got.Reason != done.Reason || got.RunID != "run-a" ||
					!got.FirstSeenAt.Equal(t0) || !got.At.Equal(done.At) || !got.LeaseUntil.IsZero() {
					t.Fatalf("record = %+v", got)
				}
			})
		}
	})

	t.Run("history holds the records of the key only", func(t *testing.T) {
		l, _ := fresh(t)
		a := rec(replay.Seen, "run-a", t0)
		b := rec(replay.Seen, "run-a", t0.Add(time.Second))
		b.MessageID, b.OriginalMessageID = "dlq-2", "orig-2"
		c := rec(replay.Seen, "run-a", t0)
		c.HistoryKey, c.Key, c.MessageID = replay.HistoryKey("ORD-2", ""), "ORD-2", "dlq-3"
		u := rec(replay.Seen, "run-a", t0)
		u.HistoryKey, u.Key, u.MessageID, u.OriginalMessageID = replay.HistoryKey("", "orig-9"), "", "dlq-9", "orig-9"
		for _, r := range []replay.MessageRecord{a, b, c, u} {
			mark(t, l, r, true)
		}
		h := history(t, l, a.HistoryKey)
		if len(h) != 2 || !sameJSON(t, h["dlq-1"], a) || !sameJSON(t, h["dlq-2"], b) {
			t.Fatalf("history = %+v", h)
		}
		if h := history(t, l, u.HistoryKey); len(h) != 1 || !sameJSON(t, h["dlq-9"], u) {
			t.Fatalf("history of a message without a key = %+v", h)
		}
		if h := history(t, l, replay.HistoryKey("ORD-none", "")); len(h) != 0 {
			t.Fatalf("unknown key: %+v", h)
		}
	})

	t.Run("expired records count as absent", func(t *testing.T) {
		l, clock := fresh(t)
		r := rec(replay.Sent, "run-a", t0)
		seen := rec(replay.Seen, "run-a", t0)
		seen.ExpiresAt = t0.Add(time.Hour)
		mark(t, l, seen, true)
		clock.Advance(2 * time.Hour)
		if h := history(t, l, r.HistoryKey); len(h) != 0 {
			t.Fatalf("expired record in history: %+v", h)
		}
		again := rec(replay.Seen, "run-b", clock.Now())
		mark(t, l, again, true)
		if got := history(t, l, r.HistoryKey)["dlq-1"]; got.RunID != "run-b" || !got.FirstSeenAt.Equal(clock.Now()) {
			t.Fatalf("record = %+v", got)
		}
	})

	t.Run("concurrent intents and exactly one wins", func(t *testing.T) {
		idempotencytest.Skip(t, gaps, idempotencytest.UnserialisedConditionalWrites)
		l, _ := fresh(t)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				r := rec(replay.Intent, fmt.Sprintf("run-%d", i), t0)
				r.LeaseUntil = t0.Add(time.Minute)
				_, ok, err := l.Mark(ctx, r)
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d runs won the intent, want 1", wins.Load())
		}
	})

	t.Run("runs come back latest first", func(t *testing.T) {
		l, clock := fresh(t)
		if _, found, err := l.LastRun(ctx); err != nil || found {
			t.Fatalf("empty ledger: found=%v err=%v", found, err)
		}
		if runs, err := l.Runs(ctx, 5); err != nil || len(runs) != 0 {
			t.Fatalf("empty ledger: %d runs, err=%v", len(runs), err)
		}
		summary := func(id string, at time.Time) replay.Summary {
			return replay.Summary{
				RunID: id, StartedAt: at, FinishedAt: at.Add(3 * time.Second), DurationMS: 3000, Max: 1000, Rate: 50,
				Filter: &replay.Filter{Reasons: []string{"dead-lettered"}, OlderThan: time.Hour},
				Gates:  []replay.Gate{{Name: replay.GateHealth, Decision: replay.GateOpen}},
				Routes: []replay.RouteSummary{{
					Route: "orders", Depth: 12, InFlight: 3, StopReason: replay.StopDrained,
					Gates:        []replay.Gate{{Name: replay.GateCanary, Decision: replay.GateLimited, Limit: 5, Detail: "2 of 3"}},
					Counts:       replay.Counts{Examined: 9, Replayed: 4, Parked: map[string]int{replay.ReasonExpiryRescue: 1}},
					ReplayedKeys: []string{"ORD-1", "ORD-2"},
				}},
				Total: replay.Counts{Examined: 9, Replayed: 4, Parked: map[string]int{replay.ReasonExpiryRescue: 1}},
			}
		}
		runs := []replay.Summary{summary("run-b", t0.Add(time.Hour)), summary("run-a", t0), summary("run-c", t0.Add(2*time.Hour)), summary("run-old", t0.Add(-time.Hour))}
		for i, s := range runs {
			expires := t0.Add(replay.DefaultRecordLifetime)
			if i == 3 {
				expires = t0.Add(30 * time.Minute)
			}
			if err := l.PutRun(ctx, s, expires); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(time.Hour)
		last, found, err := l.LastRun(ctx)
		if err != nil || !found || !sameJSON(t, last, runs[2]) {
			t.Fatalf("LastRun = %+v found=%v err=%v", last, found, err)
		}
		got, err := l.Runs(ctx, 2)
		if err != nil || len(got) != 2 || got[0].RunID != "run-c" || got[1].RunID != "run-b" {
			t.Fatalf("Runs(2) = %+v, err=%v", got, err)
		}
		got, err = l.Runs(ctx, 10)
		if err != nil || len(got) != 3 || got[2].RunID != "run-a" {
			t.Fatalf("Runs(10) = %d runs (the expired one must not count), err=%v", len(got), err)
		}
	})
}

func history(t *testing.T, l replay.Ledger, key string) map[string]replay.MessageRecord {
	t.Helper()
	h, err := l.History(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]replay.MessageRecord{}
	for _, r := range h {
		if r.HistoryKey != key {
			t.Fatalf("history of %s holds a record of %s", key, r.HistoryKey)
		}
		out[r.MessageID] = r
	}
	return out
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
