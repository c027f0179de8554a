// Package ledgertest is the contract of a replay.Ledger: Run checks an
// implementation (the dynamo ledger on the emulators, replaytest's memory
// ledger), one subtest per rule.
package ledgertest

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/suite"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// Harness is what the ledger contract needs of a replay.Ledger
// implementation.
type Harness struct {
	// NewLedger returns a ledger with no records (a fresh table, for
	// DynamoDB) whose clock is now. The tests of message records use keys
	// of their own (from t.Name()); testRunsComeBackLatestFirst needs
	// the ledger empty.
	NewLedger func(t *testing.T, now func() time.Time) replay.Ledger
	// Features declares what the implementation has; the zero value
	// declares nothing, and the tests that need a feature skip, naming it.
	Features Features
}

// Features declares, as watermill's tests.Features do, the
// behaviours of a ledger beyond what every replay.Ledger must do. A test
// that needs an undeclared feature skips and names it.
type Features struct {
	// ConcurrentMarks: concurrent marks of one record are serialised, so of
	// several runs marking INTENT at once exactly one wins. DynamoDB
	// serialises conditional writes to one item; moto's server does not.
	// No test checks that a gap of it is still there: a race not seen in
	// one run does not show it closed.
	ConcurrentMarks bool
}

// rule is one rule of the ledger contract, a test function of its
// own; rules lists them all.
type rule func(t *testing.T, h Harness)

// rules returns the contract every replay.Ledger passes, one test per
// rule, in the order [Run] runs them.
func rules() []rule {
	return []rule{
		testSeenIsWrittenOnce,
		testIntentKeepsTheFirstSighting,
		testMarkReturnsTheRecordItReplaced,
		testMarkBatchAppliesTheRuleToEachRecord,
		testLiveIntentStandsAndAPassedOneIsTakenOver,
		testFinalStatesOnlyOverTheOwnIntent,
		testCopiesOfOneStepShareItsRecord,
		testHistoryHoldsTheRecordsOfTheKeyOnly,
		testExpiredRecordsCountAsAbsent,
		testConcurrentIntentsOneWins,
		testRunsComeBackLatestFirst,
	}
}

// Run runs every test of rules against h as a subtest named
// after its function (go test -run 'LedgerContract/TestSeenIsWrittenOnce'):
// MemoryLedger in unit tests, the DynamoDB ledger on the emulators.
func Run(t *testing.T, h Harness) {
	t.Helper()
	suite.Run(t, h, rules())
}

// ledgerStart is the time the ledger tests start at.
var ledgerStart = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// newLedger returns h's ledger for t, on a clock at ledgerStart.
func newLedger(t *testing.T, h Harness) (replay.Ledger, *replaytest.Clock) {
	c := replaytest.NewClock(ledgerStart)
	return h.NewLedger(t, c.Now), c
}

// rec is message dlq-1 of t's business key in state, marked by run at at.
func rec(t *testing.T, state record.State, run string, at time.Time) record.Message {
	key := suite.Key(t, "")
	return record.Message{
		HistoryKey: record.HistoryKey(key, ""), MessageID: "dlq-1", State: state, Route: "orders",
		Key: key, OriginalMessageID: "orig-1", RunID: run, FirstSeenAt: at, At: at,
		ExpiresAt: at.Add(settings.DefaultRecordLifetime),
	}
}

// mark marks r and wants ok; it returns the record Mark returned.
func mark(t *testing.T, l replay.Ledger, r record.Message, wantOK bool) record.Message {
	t.Helper()
	cur, ok, err := l.Mark(t.Context(), r)
	if err != nil || ok != wantOK {
		t.Fatalf("Mark(%s by %s): ok=%v err=%v, want ok=%v (current %+v)", r.State, r.RunID, ok, err, wantOK, cur)
	}
	return cur
}

// testSeenIsWrittenOnce: SEEN over SEEN fails and keeps the first record.
func testSeenIsWrittenOnce(t *testing.T, h Harness) {
	l, _ := newLedger(t, h)
	mark(t, l, rec(t, record.Seen, "run-a", ledgerStart), true)
	cur := mark(t, l, rec(t, record.Seen, "run-b", ledgerStart.Add(time.Minute)), false)
	if cur.State != record.Seen || cur.RunID != "run-a" || !cur.FirstSeenAt.Equal(ledgerStart) {
		t.Fatalf("current = %+v", cur)
	}
}

// testIntentKeepsTheFirstSighting: INTENT is written over an absent or a
// SEEN record, and keeps the first sighting's FirstSeenAt.
func testIntentKeepsTheFirstSighting(t *testing.T, h Harness) {
	l, _ := newLedger(t, h)
	mark(t, l, rec(t, record.Seen, "run-a", ledgerStart), true)
	in := rec(t, record.Intent, "run-b", ledgerStart.Add(time.Hour))
	in.LeaseUntil = in.At.Add(time.Minute)
	mark(t, l, in, true)
	other := rec(t, record.Intent, "run-c", ledgerStart)
	other.MessageID = "dlq-2"
	mark(t, l, other, true)
	h1 := history(t, l, in.HistoryKey)
	if got := h1["dlq-1"]; got.State != record.Intent || got.RunID != "run-b" || !got.FirstSeenAt.Equal(ledgerStart) || !got.LeaseUntil.Equal(in.LeaseUntil) {
		t.Fatalf("record = %+v", got)
	}
}

// testMarkReturnsTheRecordItReplaced: a mark that succeeds returns the
// record it replaced, none for a message seen for the first time.
func testMarkReturnsTheRecordItReplaced(t *testing.T, h Harness) {
	l, _ := newLedger(t, h)
	in := rec(t, record.Intent, "run-a", ledgerStart)
	in.LeaseUntil = ledgerStart.Add(time.Minute)
	if prev := mark(t, l, in, true); prev.State != "" {
		t.Fatalf("first INTENT replaced %+v, want nothing: the message is seen for the first time", prev)
	}
	sent := rec(t, record.Sent, "run-a", ledgerStart.Add(time.Second))
	if prev := mark(t, l, sent, true); prev.State != record.Intent || prev.RunID != "run-a" {
		t.Fatalf("SENT replaced %+v, want the INTENT of run-a", prev)
	}
	seen := rec(t, record.Seen, "run-b", ledgerStart)
	seen.MessageID = "dlq-2"
	if prev := mark(t, l, seen, true); prev.State != "" {
		t.Fatalf("first SEEN replaced %+v", prev)
	}
	again := rec(t, record.Intent, "run-b", ledgerStart.Add(time.Second))
	again.MessageID = "dlq-2"
	again.LeaseUntil = again.At.Add(time.Minute)
	if prev := mark(t, l, again, true); prev.State != record.Seen {
		t.Fatalf("INTENT over SEEN replaced %+v, want the SEEN record", prev)
	}
}

// testMarkBatchAppliesTheRuleToEachRecord: MarkBatch applies Mark's rule to
// each record and answers per record.
func testMarkBatchAppliesTheRuleToEachRecord(t *testing.T, h Harness) {
	l, _ := newLedger(t, h)
	at := ledgerStart.Add(time.Minute)
	held := rec(t, record.Intent, "run-a", ledgerStart)
	held.MessageID = "held"
	held.LeaseUntil = ledgerStart.Add(time.Hour)
	done := rec(t, record.Intent, "run-a", ledgerStart)
	done.MessageID = "done"
	done.LeaseUntil = ledgerStart.Add(time.Minute)
	seen := rec(t, record.Seen, "run-a", ledgerStart)
	seen.MessageID = "seen"
	for _, r := range []record.Message{held, done, seen} {
		mark(t, l, r, true)
	}
	final := rec(t, record.Sent, "run-a", ledgerStart)
	final.MessageID = "done"
	mark(t, l, final, true)
	var batch []record.Message
	for _, id := range []string{"new", "held", "done", "seen"} {
		r := rec(t, record.Intent, "run-b", at)
		r.MessageID = id
		r.LeaseUntil = at.Add(time.Minute)
		batch = append(batch, r)
	}
	got := l.MarkBatch(t.Context(), batch)
	if len(got) != 4 {
		t.Fatalf("%d results for 4 records", len(got))
	}
	for i, want := range []struct {
		ok    bool
		state record.State
	}{{true, ""}, {false, record.Intent}, {false, record.Sent}, {true, record.Seen}} {
		if got[i].Err != nil || got[i].OK != want.ok || got[i].Record.State != want.state {
			t.Errorf("%s: %+v, want ok=%v with the record %q", batch[i].MessageID, got[i], want.ok, want.state)
		}
	}
	h1 := history(t, l, held.HistoryKey)
	if h1["new"].RunID != "run-b" || h1["seen"].State != record.Intent || h1["held"].RunID != "run-a" || h1["done"].State != record.Sent {
		t.Fatalf("history after the batch: %+v", h1)
	}
	var settle []record.Message
	for _, id := range []string{"new", "held"} {
		r := rec(t, record.Sent, "run-b", at)
		r.MessageID = id
		settle = append(settle, r)
	}
	got = l.MarkBatch(t.Context(), settle)
	if got[0].Err != nil || !got[0].OK || got[1].Err != nil || got[1].OK || got[1].Record.RunID != "run-a" {
		t.Fatalf("settling: %+v", got)
	}
}

// testLiveIntentStandsAndAPassedOneIsTakenOver: another run's INTENT fails
// over a live lease, the holder renews it, and once it has passed another
// run takes the message over and the first loses its claim.
func testLiveIntentStandsAndAPassedOneIsTakenOver(t *testing.T, h Harness) {
	l, _ := newLedger(t, h)
	a := rec(t, record.Intent, "run-a", ledgerStart)
	a.LeaseUntil = ledgerStart.Add(time.Minute)
	mark(t, l, a, true)
	b := rec(t, record.Intent, "run-b", ledgerStart.Add(30*time.Second))
	b.LeaseUntil = b.At.Add(time.Minute)
	if cur := mark(t, l, b, false); cur.State != record.Intent || cur.RunID != "run-a" || !cur.LeaseUntil.Equal(a.LeaseUntil) {
		t.Fatalf("current = %+v", cur)
	}
	renew := a
	renew.At = ledgerStart.Add(40 * time.Second)
	renew.LeaseUntil = ledgerStart.Add(2 * time.Minute)
	mark(t, l, renew, true)
	b.At = renew.LeaseUntil
	b.LeaseUntil = renew.LeaseUntil.Add(time.Minute)
	mark(t, l, b, true)
	sent := rec(t, record.Sent, "run-a", b.At)
	mark(t, l, sent, false) // run-a lost its claim
}

// testCopiesOfOneStepShareItsRecord: records with a Step are the step's,
// whatever their MessageID: a copy's INTENT sees its twin's, even in the
// twin's run, and the twin's final record; only the twin settles its
// INTENT; the record keeps the MessageID that wrote it.
func testCopiesOfOneStepShareItsRecord(t *testing.T, h Harness) {
	l, _ := newLedger(t, h)
	twin := rec(t, record.Intent, "run-a", ledgerStart)
	twin.Step, twin.LeaseUntil = "step~orders-dlq~orig-1~1~0", ledgerStart.Add(time.Minute)
	mark(t, l, twin, true)
	cp := twin
	cp.MessageID, cp.At = "dlq-2", ledgerStart.Add(time.Second)
	if cur := mark(t, l, cp, false); cur.State != record.Intent || cur.MessageID != "dlq-1" || cur.Step != twin.Step {
		t.Fatalf("the copy's INTENT in its twin's run saw %+v, want the twin's INTENT", cur)
	}
	byCopy := cp
	byCopy.State = record.Sent
	mark(t, l, byCopy, false) // only the message that holds the INTENT settles it
	sent := twin
	sent.State, sent.At = record.Sent, ledgerStart.Add(2*time.Second)
	mark(t, l, sent, true)
	cp.RunID, cp.At, cp.LeaseUntil = "run-b", ledgerStart.Add(time.Hour), ledgerStart.Add(time.Hour+time.Minute)
	if cur := mark(t, l, cp, false); cur.State != record.Sent || cur.MessageID != "dlq-1" {
		t.Fatalf("the copy's INTENT after its twin's send saw %+v, want the SENT record", cur)
	}
	own := rec(t, record.Intent, "run-b", ledgerStart.Add(time.Hour))
	own.MessageID, own.LeaseUntil = "dlq-2", ledgerStart.Add(time.Hour+time.Minute)
	mark(t, l, own, true) // a record without a step is its message's
	if got := history(t, l, twin.HistoryKey); len(got) != 2 || got["dlq-1"].Step != twin.Step || got["dlq-2"].Step != "" {
		t.Fatalf("history = %+v, want the step's record and dlq-2's own", got)
	}
}

// testFinalStatesOnlyOverTheOwnIntent: SENT, PARKED and RESOLVED are
// written only over the run's own INTENT, and are final: neither INTENT
// nor SEEN replaces them. One subtest per final state.
func testFinalStatesOnlyOverTheOwnIntent(t *testing.T, h Harness) {
	for _, final := range []record.State{record.Sent, record.Parked, record.Resolved} {
		t.Run(string(final), func(t *testing.T) {
			l, _ := newLedger(t, h)
			done := rec(t, final, "run-a", ledgerStart.Add(time.Minute))
			done.ReplayCount = 2
			done.Reason = map[record.State]string{record.Parked: replay.ReasonReplayExhausted, record.Resolved: replay.ReasonAlreadyApplied}[final]
			if cur := mark(t, l, done, false); cur.State != "" {
				t.Fatalf("absent record: current = %+v", cur)
			}
			mark(t, l, rec(t, record.Seen, "run-a", ledgerStart), true)
			mark(t, l, done, false)
			other := rec(t, record.Intent, "run-b", ledgerStart)
			other.LeaseUntil = ledgerStart.Add(time.Second)
			mark(t, l, other, true)
			mark(t, l, done, false)
			own := rec(t, record.Intent, "run-a", ledgerStart.Add(time.Second))
			own.LeaseUntil = own.At.Add(time.Minute)
			mark(t, l, own, true)
			mark(t, l, done, true)
			again := rec(t, record.Intent, "run-c", ledgerStart.Add(time.Hour))
			again.LeaseUntil = again.At.Add(time.Minute)
			if cur := mark(t, l, again, false); cur.State != final {
				t.Fatalf("current = %+v, want %s", cur, final)
			}
			mark(t, l, rec(t, record.Seen, "run-c", ledgerStart.Add(time.Hour)), false)
			got := history(t, l, done.HistoryKey)["dlq-1"]
			if got.State != final || got.ReplayCount != 2 || got.Reason != done.Reason || got.RunID != "run-a" ||
				!got.FirstSeenAt.Equal(ledgerStart) || !got.At.Equal(done.At) || !got.LeaseUntil.IsZero() {
				t.Fatalf("record = %+v", got)
			}
		})
	}
}

// testHistoryHoldsTheRecordsOfTheKeyOnly: History returns every record of
// one history key, as marked, and none of another; a message without a
// business key has a history of its own.
func testHistoryHoldsTheRecordsOfTheKeyOnly(t *testing.T, h Harness) {
	l, _ := newLedger(t, h)
	a := rec(t, record.Seen, "run-a", ledgerStart)
	b := rec(t, record.Seen, "run-a", ledgerStart.Add(time.Second))
	b.MessageID = "dlq-2"
	b.OriginalMessageID = "orig-2"
	c := rec(t, record.Seen, "run-a", ledgerStart)
	c.Key = suite.Key(t, "2")
	c.HistoryKey = record.HistoryKey(c.Key, "")
	c.MessageID = "dlq-3"
	u := rec(t, record.Seen, "run-a", ledgerStart)
	u.Key = ""
	u.OriginalMessageID = suite.Key(t, "orig-9")
	u.HistoryKey = record.HistoryKey("", u.OriginalMessageID)
	u.MessageID = "dlq-9"
	for _, r := range []record.Message{a, b, c, u} {
		mark(t, l, r, true)
	}
	h1 := history(t, l, a.HistoryKey)
	if len(h1) != 2 || !sameJSON(t, h1["dlq-1"], a) || !sameJSON(t, h1["dlq-2"], b) {
		t.Fatalf("history = %+v", h1)
	}
	if h1 := history(t, l, u.HistoryKey); len(h1) != 1 || !sameJSON(t, h1["dlq-9"], u) {
		t.Fatalf("history of a message without a key = %+v", h1)
	}
	if h1 := history(t, l, record.HistoryKey(suite.Key(t, "none"), "")); len(h1) != 0 {
		t.Fatalf("unknown key: %+v", h1)
	}
}

// testExpiredRecordsCountAsAbsent: a record past its ExpiresAt is in no
// history, and a new sighting is written over it.
func testExpiredRecordsCountAsAbsent(t *testing.T, h Harness) {
	l, clock := newLedger(t, h)
	r := rec(t, record.Sent, "run-a", ledgerStart)
	seen := rec(t, record.Seen, "run-a", ledgerStart)
	seen.ExpiresAt = ledgerStart.Add(time.Hour)
	mark(t, l, seen, true)
	clock.Advance(2 * time.Hour)
	if h1 := history(t, l, r.HistoryKey); len(h1) != 0 {
		t.Fatalf("expired record in history: %+v", h1)
	}
	again := rec(t, record.Seen, "run-b", clock.Now())
	mark(t, l, again, true)
	if got := history(t, l, r.HistoryKey)["dlq-1"]; got.RunID != "run-b" || !got.FirstSeenAt.Equal(clock.Now()) {
		t.Fatalf("record = %+v", got)
	}
}

// testConcurrentIntentsOneWins: of eight runs marking INTENT on one message
// at once, exactly one wins. It needs [Features].ConcurrentMarks.
func testConcurrentIntentsOneWins(t *testing.T, h Harness) {
	suite.Needs(t, h.Features.ConcurrentMarks, "ConcurrentMarks")
	l, _ := newLedger(t, h)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			r := rec(t, record.Intent, fmt.Sprintf("run-%d", i), ledgerStart)
			r.LeaseUntil = ledgerStart.Add(time.Minute)
			_, ok, err := l.Mark(t.Context(), r)
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
}

// testRunsComeBackLatestFirst: an empty ledger has no runs; LastRun and
// Runs return the stored summaries latest first, as stored, and leave out
// the expired. It needs the ledger empty.
func testRunsComeBackLatestFirst(t *testing.T, h Harness) {
	l, clock := newLedger(t, h)
	ctx := t.Context()
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
	runs := []replay.Summary{summary("run-b", ledgerStart.Add(time.Hour)), summary("run-a", ledgerStart), summary("run-c", ledgerStart.Add(2*time.Hour)), summary("run-old", ledgerStart.Add(-time.Hour))}
	for i, s := range runs {
		expires := ledgerStart.Add(settings.DefaultRecordLifetime)
		if i == 3 {
			expires = ledgerStart.Add(30 * time.Minute)
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
}

func history(t *testing.T, l replay.Ledger, key string) map[string]record.Message {
	t.Helper()
	h, err := l.History(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]record.Message{}
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
