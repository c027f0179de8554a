package replay_test

// Tests of the paths where the engine's features meet (issue 8, replay
// lane): each failed before its fix.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/crash"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/payload"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// Gates hold replays; they never hold the expiry rescue.
func TestGatesNeverHoldTheExpiryRescue(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *harness, o *replay.Options)
	}{
		{"health closed", func(_ *harness, o *replay.Options) {
			o.Health = func(context.Context) error { return errors.New("tax service: 503") }
		}},
		{"breaker open", func(h *harness, o *replay.Options) {
			at := h.clock.Now().Add(-15 * time.Minute)
			prev := replay.RouteSummary{Route: "orders", Gates: []replay.Gate{{Name: replay.GateRefill, Decision: replay.GateOpen}},
				Breaker: &replay.Breaker{Open: true, Trips: 1, ProbeAt: h.clock.Now().Add(time.Hour)}}
			if err := h.ledger.PutRun(context.Background(), replay.Summary{RunID: "prev", StartedAt: at, Routes: []replay.RouteSummary{prev}}, at.Add(time.Hour)); err != nil {
				h.t.Fatal(err)
			}
			o.Completions = setCompletions{}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, map[string]string{"MessageRetentionPeriod": "172800"})
			h.orders("OLD", 3)
			h.clock.Advance(40 * time.Hour) // within the 24 h rescue window of the 48 h retention
			h.orders("NEW", 200)
			h.clock.Advance(due)
			var o replay.Options
			tt.setup(h, &o)
			opts := h.options()
			opts.Health = o.Health
			opts.Completions = o.Completions
			counted := &countingLedger{Ledger: h.ledger}
			s := h.run(replay.New(h.q, counted, opts), replay.Request{})
			if n := counted.marks.Load(); n != 6 {
				t.Errorf("%d ledger marks, want 6 (INTENT and PARKED of the 3 rescued): a held message not about to expire needs none", n)
			}
			if s.Total.Replayed != 0 {
				t.Fatalf("replayed %d through a closed gate", s.Total.Replayed)
			}
			if got := s.Total.Parked[replay.ReasonExpiryRescue]; got != 3 {
				t.Fatalf("parked %d for expiry, want 3 (counts %+v)", got, countsOf(s.Total))
			}
			if n := len(h.stored(h.route.ParkingURL)); n != 3 {
				t.Fatalf("%d in the parking queue, want 3", n)
			}
			if visible, inFlight := h.depth(h.route.DLQURL); visible+inFlight != 200 {
				t.Fatalf("DLQ holds %d+%d, want the 200 new ones", visible, inFlight)
			}
		})
	}
}

// A closed gate holds replays, not the park of a message that has had its
// replays and can have none given back: any later run parks it as well,
// and holding it behind the breaker kept it in the DLQ until the next
// probe, a BackoffMax later (make sim SEEDS=2000, seed 682: poison orders
// that had had their 2 x MaxReplays replays waited 12 h behind an open
// breaker for their park, and a park that failed in the probe run waited
// 12 h more). A message whose last replay the breaker gives back is not
// exhausted (it is held), nor is one with replays left.
func TestGatesNeverHoldAnExhaustedPark(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(h *harness, o *replay.Options)
		parked int // of the three below
	}{
		{"health closed", func(_ *harness, o *replay.Options) {
			o.Health = func(context.Context) error { return errors.New("tax service: 503") }
		}, 2},
		{"breaker open, no probe due", func(h *harness, o *replay.Options) {
			o.Completions = setCompletions{}
			at := h.clock.Now().Add(-15 * time.Minute)
			prev := replay.RouteSummary{Route: "orders", Gates: []replay.Gate{{Name: replay.GateCanary, Decision: replay.GateClosed}},
				Breaker: &replay.Breaker{Open: true, Trips: 3, ProbeAt: h.clock.Now().Add(6 * time.Hour), FailedRuns: []string{"r1"}}}
			if err := h.ledger.PutRun(context.Background(), replay.Summary{RunID: "prev", StartedAt: at, Routes: []replay.RouteSummary{prev}}, at.Add(time.Hour)); err != nil {
				h.t.Fatal(err)
			}
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			now := h.clock.Now()
			meta := func(count, refunds int, orig string) *replay.Metadata {
				return &replay.Metadata{ReplayCount: count, Refunds: refunds, OriginalMessageID: orig, FirstDeadLetteredAt: now.Add(-48 * time.Hour),
					LastReplayAt: now.Add(-time.Hour), Route: "orders", RunID: "r1"}
			}
			h.deadLetter(h.route, msg{body: order("ORD-SPENT"), meta: meta(replay.DefaultMaxReplays, replay.DefaultMaxReplays, "m-spent")})
			h.deadLetter(h.route, msg{body: order("ORD-REFUND"), meta: meta(replay.DefaultMaxReplays, 1, "m-refund")}) // r1 failed: given back, if the breaker says so
			h.deadLetter(h.route, msg{body: order("ORD-LEFT"), meta: meta(1, 0, "m-left")})
			h.clock.Advance(time.Hour)
			opts := h.options()
			tt.setup(h, &opts)
			s := h.run(replay.New(h.q, h.ledger, opts), replay.Request{})
			if s.Total.Replayed != 0 {
				t.Fatalf("replayed %d through a closed gate", s.Total.Replayed)
			}
			if got := s.Total.Parked[replay.ReasonReplayExhausted]; got != tt.parked {
				t.Fatalf("parked %d as %s, want %d (counts %+v)", got, replay.ReasonReplayExhausted, tt.parked, countsOf(s.Total))
			}
			parked := h.stored(h.route.ParkingURL)
			if len(parked) == 0 || keyOf(parked[0].body) != "ORD-SPENT" {
				t.Fatalf("parking queue holds %v, want ORD-SPENT first", bodiesOf(parked))
			}
			if visible, inFlight := h.depth(h.route.DLQURL); visible+inFlight != 3-tt.parked {
				t.Fatalf("DLQ holds %d+%d, want %d", visible, inFlight, 3-tt.parked)
			}
		})
	}
}

// A run that cannot read the recent runs cannot read the breaker either:
// it parks no message whose last replay the breaker may give back, and
// parks it once a run can tell (make sim SEEDS=2000, seed 1802: a poison
// order whose three replays failed in an outage was parked by such a run,
// its refund owed). One with no refund left is parked all the same.
func TestBlindRunParksNoMessageARefundMaySave(t *testing.T) {
	h := newHarness(t, false, nil)
	now := h.clock.Now()
	meta := func(refunds int, orig string) *replay.Metadata {
		return &replay.Metadata{ReplayCount: replay.DefaultMaxReplays, Refunds: refunds, OriginalMessageID: orig, FirstDeadLetteredAt: now.Add(-48 * time.Hour),
			LastReplayAt: now.Add(-time.Hour), Route: "orders", RunID: "r1"}
	}
	h.deadLetter(h.route, msg{body: order("ORD-SPENT"), meta: meta(replay.DefaultMaxReplays, "m-spent")})
	h.deadLetter(h.route, msg{body: order("ORD-OWED"), meta: meta(0, "m-owed")})
	h.clock.Advance(time.Hour)
	cause := errors.New("ledger down")
	s, err := replay.New(h.q, brokenLedger{h.ledger, cause}, h.options()).Run(context.Background(), replay.Request{Routes: []replay.Route{h.route}})
	if !errors.Is(err, cause) || s.Total.Parked[replay.ReasonReplayExhausted] != 1 || s.Total.Deferred != 1 {
		t.Fatalf("blind run: err %v, counts %+v; want ORD-SPENT parked and ORD-OWED deferred", err, countsOf(s.Total))
	}
	if parked := h.stored(h.route.ParkingURL); len(parked) != 1 || keyOf(parked[0].body) != "ORD-SPENT" {
		t.Fatalf("parking queue holds %v, want ORD-SPENT alone", bodiesOf(parked))
	}
	h.clock.Advance(time.Hour)
	if s := h.run(h.engine(), replay.Request{}); s.Total.Parked[replay.ReasonReplayExhausted] != 1 {
		t.Fatalf("next run: counts %+v; want ORD-OWED parked (no breaker gave r1 back)", countsOf(s.Total))
	}
}

// countingLedger counts the ledger calls about messages (the engine makes
// them concurrently).
type countingLedger struct {
	replay.Ledger
	marks     atomic.Int64
	histories atomic.Int64
}

func (c *countingLedger) MarkBatch(ctx context.Context, recs []record.Message) []record.Marked {
	return markEach(ctx, c.Mark, recs)
}

func (c *countingLedger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	if r.HistoryKey != settings.SealKeyPartition && r.HistoryKey != settings.SealPublicKeyPartition { // the run's reads of the seal keys are not about a message
		c.marks.Add(1)
	}
	return c.Ledger.Mark(ctx, r)
}

func (c *countingLedger) History(ctx context.Context, key string) ([]record.Message, error) {
	c.histories.Add(1)
	return c.Ledger.History(ctx, key)
}

// A message hidden until its backoff is due never stays hidden past the
// start of its rescue window, so it is parked rather than expiring unseen.
func TestHideNeverCrossesTheRescueWindow(t *testing.T) {
	h := newHarness(t, false, map[string]string{"MessageRetentionPeriod": "21600"}) // 6 h
	opts := func(o *replay.Options) {
		o.BackoffBase = 12 * time.Hour
		o.BackoffMax = 12 * time.Hour
		o.ExpiryRescueWindow = time.Hour
	}
	key := slowKeyFor(t, replay.Policy{BackoffBase: 12 * time.Hour, BackoffMax: 12 * time.Hour}, 0, 8*time.Hour)
	h.deadLetter(h.route, msg{body: order("ORD-HIDE"), meta: &replay.Metadata{OriginalMessageID: key}})
	s := h.run(h.engine(opts), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, Delayed: 1})
	for range 12 {
		h.clock.Advance(30 * time.Minute)
		h.run(h.engine(opts), replay.Request{})
	}
	if n := len(h.stored(h.route.ParkingURL)); n != 1 {
		t.Fatalf("%d in the parking queue, want the message rescued before it expired", n)
	}
}

// slowKeyFor is slowKey under policy p.
func slowKeyFor(t *testing.T, p replay.Policy, count int, d time.Duration) string {
	t.Helper()
	for i := range 1000 {
		key := "orig-" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		if p.Backoff(count, key) >= d {
			return key
		}
	}
	t.Fatal("no key found")
	return ""
}

// failingLedger fails every message call (reads and marks).
type failingLedger struct{ replay.Ledger }

var errLedger = errors.New("ledger: ProvisionedThroughputExceededException")

func (failingLedger) Mark(context.Context, record.Message) (record.Message, bool, error) {
	return record.Message{}, false, errLedger
}

func (f failingLedger) MarkBatch(ctx context.Context, recs []record.Message) []record.Marked {
	return markEach(ctx, f.Mark, recs)
}

func (failingLedger) History(context.Context, string) ([]record.Message, error) {
	return nil, errLedger
}

// The rescue does not depend on the ledger: a message about to expire is
// parked even when every ledger call for it fails.
func TestRescueWithoutTheLedger(t *testing.T) {
	h := newHarness(t, false, map[string]string{"MessageRetentionPeriod": "172800"})
	h.orders("R", 2)
	h.clock.Advance(40 * time.Hour)
	h.orders("FRESH", 1)
	h.clock.Advance(due)
	e := replay.New(h.q, failingLedger{h.ledger}, h.options())
	s, _ := e.Run(context.Background(), replay.Request{Routes: []replay.Route{h.route}})
	if got := s.Total.Parked[replay.ReasonExpiryRescue]; got != 2 {
		t.Fatalf("parked %d, want 2 (counts %+v)", got, countsOf(s.Total))
	}
	if s.Total.Replayed != 0 {
		t.Fatalf("replayed %d without the ledger", s.Total.Replayed)
	}
	if n := len(h.stored(h.route.ParkingURL)); n != 2 {
		t.Fatalf("%d parked", n)
	}
}

// No ledger key grows with the input: an order id of any length fits
// DynamoDB's 2,048-byte partition key.
func TestLongKeysHaveBoundedHistoryKeys(t *testing.T) {
	long := strings.Repeat("Z", 5000)
	if k := record.HistoryKey(long, ""); len(k) > 256 {
		t.Fatalf("key of %d bytes", len(k))
	}
	if record.HistoryKey(long, "") == record.HistoryKey(long+"Y", "") {
		t.Fatal("two long ids share a key")
	}
	if k := record.HistoryKey("ORD-1", ""); k != "order#ORD-1" {
		t.Fatalf("short ids stay readable: %q", k)
	}
	h := newHarness(t, false, nil)
	h.deadLetter(h.route, msg{body: order(long)})
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 1, Replayed: 1})
}

// leaseLedger runs a hook after the first INTENT mark it sees: the slow
// DynamoDB retries of a run, during which a concurrent run acts.
type leaseLedger struct {
	replay.Ledger
	once func()
}

func (l *leaseLedger) MarkBatch(ctx context.Context, recs []record.Message) []record.Marked {
	return markEach(ctx, l.Mark, recs)
}

func (l *leaseLedger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	cur, ok, err := l.Ledger.Mark(ctx, r)
	if r.State == record.Intent && l.once != nil {
		f := l.once
		l.once = nil
		f()
	}
	return cur, ok, err
}

// A run never sends a message whose lease it no longer holds: when the
// INTENT writes of a batch take longer than the lease, a concurrent run may
// have taken the messages over and sent them; the first run must not send
// them again.
func TestNoSendAfterTheLeaseRanOut(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("L", 1)
	h.clock.Advance(due)
	ll := &leaseLedger{Ledger: h.ledger}
	slow := replay.New(h.q, ll, h.options())
	ll.once = func() {
		h.clock.Advance(10 * time.Minute) // past the decision window and its rate allowance
		s := h.run(h.engine(), replay.Request{RunID: "operator"})
		if s.Total.Replayed != 1 {
			t.Errorf("the concurrent run replayed %d", s.Total.Replayed)
		}
	}
	s := h.run(slow, replay.Request{RunID: "scheduled"})
	if n := len(h.stored(h.route.SourceURL)); n != 1 {
		t.Fatalf("%d copies in the source queue, want 1 (slow run: %+v)", n, countsOf(s.Total))
	}
	if s.Total.Replayed != 0 {
		t.Fatalf("the slow run counts %d replayed", s.Total.Replayed)
	}
}

// failSent fails the SENT and PARKED marks: a crash between send and mark.
type failSent struct{ replay.Ledger }

func (f failSent) MarkBatch(ctx context.Context, recs []record.Message) []record.Marked {
	return markEach(ctx, f.Mark, recs)
}

func (f failSent) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	if r.State == record.Sent || r.State == record.Parked {
		return record.Message{}, false, errLedger
	}
	return f.Ledger.Mark(ctx, r)
}

// A FIFO run with ResetCount that is retried after a crash sends with the
// same deduplication ids, so SQS drops the second copy.
func TestFIFOResetCountIsDeterministic(t *testing.T) {
	h := newHarness(t, true, nil)
	parked := replay.Route{Name: "orders-parking", DLQURL: h.route.ParkingURL, SourceURL: h.route.SourceURL, ParkingURL: h.route.ParkingURL}
	meta := &replay.Metadata{ReplayCount: 3, OriginalMessageID: "orig-1", Reason: replay.ReasonReplayExhausted}
	h.deadLetter(parked, msg{body: order("ORD-RESET"), group: "g1", meta: meta})
	h.clock.Advance(due)
	cr := crash.New(crash.AtFirst("DeleteMessageBatch"))
	crashing := replay.New(cr.Queue(h.q), cr.Ledger(failSent{h.ledger}), h.options())
	if s, err := crashing.Run(context.Background(), replay.Request{Routes: []replay.Route{parked}, ResetCount: true}); !errors.Is(err, crash.ErrCrash) {
		t.Fatalf("err = %v, %+v", err, s)
	}
	h.clock.Advance(window)
	s := h.run(h.engine(), replay.Request{Routes: []replay.Route{parked}, ResetCount: true})
	checkCounts(t, s.Total, counts{Examined: 1, Replayed: 1})
	if n := len(h.stored(h.route.SourceURL)); n != 1 {
		t.Fatalf("%d copies in the source queue, want 1", n)
	}
}

// The replay budget belongs to the message, not to its order: another
// message of the order that used up its replays does not park a first-time
// dead letter, and INTENT records of sends that never happened do not count.
func TestTheBudgetBelongsToTheMessage(t *testing.T) {
	t.Run("another message of the order", func(t *testing.T) {
		h := newHarness(t, false, nil)
		h.seedReplays("ORD-B", "another-message", 3)
		h.deadLetter(h.route, msg{body: order("ORD-B")})
		h.clock.Advance(due)
		s := h.run(h.engine(), replay.Request{})
		checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 1, Replayed: 1})
		if got := h.stored(h.route.SourceURL)[0].meta.ReplayCount; got != 1 {
			t.Fatalf("replay count %d, want 1", got)
		}
	})
	t.Run("its own earlier replays count", func(t *testing.T) {
		// The count travels in the message's metadata (SQS's redrive
		// keeps the attributes): the ledger is not read per message.
		h := newHarness(t, false, nil)
		h.deadLetter(h.route, msg{body: order("ORD-C")})
		h.clock.Advance(due)
		counted := &countingLedger{Ledger: h.ledger}
		engine := func() *replay.Engine { return replay.New(h.q, counted, h.options()) }
		h.run(engine(), replay.Request{})
		for i := range 3 {
			// back in the DLQ with the metadata the replay gave it
			m := h.stored(h.route.SourceURL)
			h.drainQueue(h.route.SourceURL)
			h.deadLetter(h.route, msg{body: m[0].body, attrs: m[0].raw.MessageAttributes})
			h.clock.Advance(12 * time.Hour)
			s := h.run(engine(), replay.Request{})
			if i < 2 && s.Total.Replayed != 1 || i == 2 && s.Total.Parked[replay.ReasonReplayExhausted] != 1 {
				t.Fatalf("round %d: %+v", i, countsOf(s.Total))
			}
		}
		if n := counted.histories.Load(); n != 0 {
			t.Fatalf("%d history reads: the hot path reads no order's history", n)
		}
	})
	t.Run("an INTENT that never sent", func(t *testing.T) {
		h := newHarness(t, false, nil)
		id := h.deadLetter(h.route, msg{body: order("ORD-D")})
		now := h.clock.Now()
		for i := range 5 {
			// earlier DLQ copies of the message whose sends never happened
			r := record.Message{HistoryKey: record.HistoryKey("ORD-D", ""), MessageID: "copy-" + strconv.Itoa(i), State: record.Intent, Route: "orders", Key: "ORD-D",
				OriginalMessageID: id, RunID: "crashed", FirstSeenAt: now, At: now.Add(time.Duration(i) * time.Hour), LeaseUntil: now.Add(time.Duration(i)*time.Hour + time.Minute), ExpiresAt: now.Add(48 * time.Hour)}
			if _, ok, err := h.ledger.Mark(context.Background(), r); err != nil || !ok {
				t.Fatalf("seed: %v %v", ok, err)
			}
		}
		h.clock.Advance(6 * time.Hour)
		s := h.run(h.engine(), replay.Request{})
		checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 1, Replayed: 1})
	})
}

// drainQueue deletes every message of the queue at url.
func (h *harness) drainQueue(url string) {
	h.t.Helper()
	for {
		out, err := h.q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			h.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return
		}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := h.q.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			h.t.Fatal(err)
		}
	}
}

// A dead letter whose order the consumer already completed with the same
// payload is not work for anyone: it is removed, with a ledger record that
// says so. A different payload still goes back, for the consumer to route
// as a conflict.
func TestAlreadyAppliedIsRemoved(t *testing.T) {
	h := newHarness(t, false, nil)
	store := idempotency.NewMemoryStore()
	rcv := &idempotency.Receiver{Store: store, Scope: "invoice"}
	same := order("ORD-A")
	if _, err := rcv.Do(context.Background(), "ORD-A", sumOf(t, h.route, same), func(context.Context) (string, error) { return "INV-1", nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := rcv.Do(context.Background(), "ORD-X", sumOf(t, h.route, `{"orderId":"ORD-X","total":"1.00"}`), func(context.Context) (string, error) { return "INV-2", nil }); err != nil {
		t.Fatal(err)
	}
	h.deadLetter(h.route, msg{body: same})
	h.deadLetter(h.route, msg{body: order("ORD-X")})
	h.deadLetter(h.route, msg{body: order("ORD-NEW")})
	h.clock.Advance(due)
	s := h.run(h.engine(func(o *replay.Options) {
		o.Completions = &replaytest.MemoryCompletions{Store: store, Scope: "invoice"}
	}), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 3, DeadLettered: 3, Replayed: 2, Applied: 1})
	hist, err := h.ledger.History(context.Background(), record.HistoryKey("ORD-A", ""))
	if err != nil || len(hist) != 1 || hist[0].State != record.Resolved || hist[0].Reason != replay.ReasonAlreadyApplied {
		t.Fatalf("history of ORD-A = %+v, %v", hist, err)
	}
	if visible, inFlight := h.depth(h.route.DLQURL); visible+inFlight != 0 {
		t.Fatalf("DLQ holds %d", visible+inFlight)
	}
}

// sumOf is the payload hash of body on route, as a consumer's completion
// record holds it.
func sumOf(t *testing.T, route replay.Route, body string) string {
	t.Helper()
	h, err := payload.NewHash(route.PayloadHash)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := h.Sum([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// Filters apply first: a run filtered to one order leaves other orders'
// messages alone, even those whose metadata cannot be decoded.
func TestFiltersApplyBeforeCorruptMetadataParking(t *testing.T) {
	h := newHarness(t, false, nil)
	h.deadLetter(h.route, msg{body: order("ORD-OTHER"), attrs: map[string]types.MessageAttributeValue{replay.AttributeName: strAttr("{not json")}})
	h.deadLetter(h.route, msg{body: order("ORD-MINE")})
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{Filter: replay.Filter{Keys: []string{"ORD-MINE"}}})
	checkCounts(t, s.Total, counts{Examined: 2, DeadLettered: 1, Replayed: 1, Skipped: 1})
	if n := len(h.q.Messages(h.route.ParkingURL)); n != 0 {
		t.Fatalf("%d parked by a run filtered to another order", n)
	}
}

// The engine's rate option is checked like the request's.
func TestRateOptionMustBeFinite(t *testing.T) {
	for _, rate := range []float64{math.NaN(), math.Inf(1), 1e9} {
		h := newHarness(t, false, nil)
		h.orders("N", 1)
		_, err := h.tryRun(context.Background(), h.engine(func(o *replay.Options) { o.Rate = rate }), replay.Request{})
		if !errors.Is(err, replay.ErrInvalidRequest) {
			t.Fatalf("rate %v: err = %v", rate, err)
		}
	}
}

// setCompletions reports the orders in its set completed.
type setCompletions map[string]bool

// hashCompletions are completion records: key -> the payload hash it
// completed with.
type hashCompletions map[string]string

func (c hashCompletions) Completed(_ context.Context, keys []string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range keys {
		if h, ok := c[k]; ok {
			out[k] = h
		}
	}
	return out, nil
}

func (s setCompletions) Completed(_ context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if s[id] {
			out[id] = "hash"
		}
	}
	return out, nil
}

// consume plays the consumer: it takes every message from the source
// queue; ok decides per order whether it completes (else the message is
// dead-lettered again, attributes and all, as SQS's redrive does).
func (h *harness) consume(done setCompletions, ok func(orderID string) bool) (completed, failed int) {
	h.t.Helper()
	for _, m := range h.stored(h.route.SourceURL) {
		id := keyOf(m.body)
		if ok(id) {
			done[id] = true
			completed++
			continue
		}
		h.deadLetter(h.route, msg{body: m.body, attrs: m.raw.MessageAttributes})
		failed++
	}
	h.drainQueue(h.route.SourceURL)
	return completed, failed
}

// An outage the health probe does not see: every replay fails. The route's
// breaker stops the replays after the first failed run and probes with
// backoff; the failed replays do not use up the messages' budgets, so no
// good order is parked; when the service is back, everything goes home.
func TestBreakerStopsReplaysDuringAnOutageTheProbeDoesNotSee(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("OUT", 20)
	done := setCompletions{}
	opts := func(o *replay.Options) {
		o.Health = func(context.Context) error { return nil } // says up throughout
		o.Completions = done
		o.CanaryLimit = 2
	}
	sent := 0
	for range 12 { // three hours of 15-minute runs
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		sent += s.Total.Replayed
		if n := s.Total.Parked[replay.ReasonReplayExhausted]; n != 0 {
			t.Fatalf("parked %d good orders as exhausted during the outage", n)
		}
		h.consume(done, func(string) bool { return false })
	}
	if sent > 20+2*6 {
		t.Fatalf("%d replays sent into the outage: the breaker did not hold", sent)
	}
	for range 40 {
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		if n := s.Total.ParkedTotal(); n != 0 {
			t.Fatalf("parked %d after the recovery: %+v", n, countsOf(s.Total))
		}
		h.consume(done, func(string) bool { return true })
		if len(done) == 20 {
			return
		}
	}
	t.Fatalf("%d of 20 orders completed after the recovery", len(done))
}

// When some replays of a run complete and others fail, the failing ones are
// the messages' own problem and count. A message that then fails alone is
// no evidence of an outage: the breaker stays shut, its replays count, and
// it is parked after MaxReplays replays, not left to loop until it expires.
func TestAMessageThatKeepsFailingIsParked(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("MIX", 4)
	done := setCompletions{}
	opts := func(o *replay.Options) { o.Completions = done }
	poison := func(id string) bool { return id != "ORD-MIX-000" }
	replays := 0
	for range 30 {
		h.clock.Advance(6 * time.Hour)
		s := h.run(h.engine(opts), replay.Request{})
		replays += s.Total.Replayed
		h.consume(done, poison)
		if s.Total.ParkedTotal() > 0 {
			break
		}
	}
	parked := h.stored(h.route.ParkingURL)
	if len(parked) != 1 || keyOf(parked[0].body) != "ORD-MIX-000" || parked[0].meta.Reason != replay.ReasonReplayExhausted {
		t.Fatalf("parked %d: %+v", len(parked), parked)
	}
	if replays != 3+replay.DefaultMaxReplays {
		t.Fatalf("%d replays, want %d", replays, 3+replay.DefaultMaxReplays)
	}
	if got := parked[0].meta.Refunds; got != 0 {
		t.Fatalf("refunds %d", got)
	}
}

// deadlineQueue records the deadline of each SendMessageBatch call.
type deadlineQueue struct {
	replay.Queue
	deadlines []time.Time
}

func (d *deadlineQueue) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	dl, _ := ctx.Deadline()
	d.deadlines = append(d.deadlines, dl)
	return d.Queue.SendMessageBatch(ctx, in, opts...)
}

// A send call cannot outlast the lease of the messages it sends: a slow
// call is cut off instead of sending after another run took them over.
func TestSendsAreBoundedByTheLease(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("DL", 3)
	h.clock.Advance(due)
	q := &deadlineQueue{Queue: h.q}
	start := h.clock.Now()
	s, err := replay.New(q, h.ledger, h.options()).Run(context.Background(), replay.Request{Routes: []replay.Route{h.route}})
	if err != nil || s.Total.Replayed != 3 {
		t.Fatalf("replayed %d, %v", s.Total.Replayed, err)
	}
	lease := start.Add(replay.DefaultDecisionWindow + time.Duration(float64(replay.MaxBatch)/replay.DefaultRate*float64(time.Second)))
	if len(q.deadlines) != 1 || q.deadlines[0].IsZero() || q.deadlines[0].After(lease) {
		t.Fatalf("send deadlines %v, want one at most the lease %v", q.deadlines, lease)
	}
}

// bigOrder is an order body of about n bytes.
func bigOrder(id string, n int) string {
	return fmt.Sprintf(`{"eventType":"order.created","version":1,"orderId":%q,"note":%q}`, id, strings.Repeat("x", n))
}

// Large messages go in as many send calls as SQS's 1 MiB limit on a batch
// request needs; a message that would no longer fit its source queue with
// our metadata is parked at once instead of failing every run.
func TestLargeMessages(t *testing.T) {
	h := newHarness(t, false, nil)
	source := 200 << 10
	url, err := h.q.CreateQueue("small-source", map[string]string{"MaximumMessageSize": strconv.Itoa(source)})
	if err != nil {
		t.Fatal(err)
	}
	h.route.SourceURL = url
	for i := range 8 {
		h.deadLetter(h.route, msg{body: bigOrder(fmt.Sprintf("ORD-BIG-%d", i), 180<<10)})
	}
	h.deadLetter(h.route, msg{body: bigOrder("ORD-HUGE", source-200)}) // fits the source, but not with our metadata
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 9, DeadLettered: 9, Replayed: 8, Parked: map[string]int{replay.ReasonTooLarge: 1}})
	if n := len(h.stored(h.route.SourceURL)); n != 8 {
		t.Fatalf("%d in the source queue", n)
	}
}

// A failed replay comes back to the DLQ only after maxReceiveCount × the
// source's visibility, which can span several runs: the breaker looks back
// through the latest replaying runs none of whose orders completed.
func TestBreakerTripsOnAReplayThatComesBackRunsLater(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("LATE", 40)
	opts := func(o *replay.Options) {
		o.Completions = setCompletions{}
		o.CanaryLimit = 3
		o.MaxPerRun = 10
	}
	var inFlight [][]stored // what each run replayed, still failing in the source
	var tripped bool
	for i := range 6 {
		h.clock.Advance(5 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		inFlight = append(inFlight, h.stored(h.route.SourceURL))
		h.drainQueue(h.route.SourceURL)
		if len(inFlight) > 2 { // the replays of two runs ago are back
			for _, m := range inFlight[len(inFlight)-3] {
				h.deadLetter(h.route, msg{body: m.body, attrs: m.raw.MessageAttributes})
			}
		}
		if b := s.Routes[0].Breaker; b != nil && b.Open {
			tripped = true
			if i > 4 {
				t.Fatalf("tripped only in run %d", i+1)
			}
			break
		}
	}
	if !tripped {
		t.Fatal("the breaker never opened")
	}
}

// slowReceives advances the clock before the second receive, past the
// decision window: the messages of the first batch reappear in the pass.
type slowReceives struct {
	replay.Queue
	clock    *replaytest.Clock
	by       time.Duration
	receives int
}

func (s *slowReceives) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if s.receives++; s.receives == 2 {
		s.clock.Advance(s.by)
	}
	return s.Queue.ReceiveMessage(ctx, in, opts...)
}

// A message that reappears in the same pass (a slow pass outlived its
// decision window) is held and released with the others when the pass
// ends: the next run, started right after, finds every message visible.
func TestMessagesSeenAgainInAPassAreReleased(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("AGAIN", 25)
	h.clock.Advance(due)
	opts := h.options()
	opts.DecisionWindow = time.Second
	s, err := replay.New(&slowReceives{Queue: h.q, clock: h.clock, by: 5 * time.Second}, h.ledger, opts).
		Run(context.Background(), replay.Request{Routes: []replay.Route{h.route}, DryRun: true})
	if err != nil || s.Total.Examined != 25 {
		t.Fatalf("examined %d, %v", s.Total.Examined, err)
	}
	if visible, inFlight := h.depth(h.route.DLQURL); visible != 25 || inFlight != 0 {
		t.Fatalf("%d visible, %d in flight right after the run; want all 25 visible", visible, inFlight)
	}
}

// Findings of a review of the paths above, each with the test that showed it.

// A replay the breaker gave back is a new send under the same count: on a
// FIFO route its deduplication id must differ, or SQS drops it within its
// 5-minute window while the DLQ copy is deleted.
func TestFIFORefundedReplayIsNotDroppedAsADuplicate(t *testing.T) {
	h := newHarness(t, true, nil)
	for i := range 3 {
		h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-FR-%d", i)), group: fmt.Sprintf("g%d", i)})
	}
	done := setCompletions{}
	opts := func(o *replay.Options) {
		o.Completions = done
		o.BackoffBase = 10 * time.Second
		o.BackoffMax = 10 * time.Second
		o.CanaryLimit = 3
	}
	h.clock.Advance(time.Minute)
	if s := h.run(h.engine(opts), replay.Request{}); s.Total.Replayed != 3 {
		t.Fatalf("first run replayed %d", s.Total.Replayed)
	}
	for range 2 { // every replay fails and returns; the breaker trips, then probes
		h.consume(done, func(string) bool { return false })
		h.clock.Advance(time.Minute)
		h.run(h.engine(opts), replay.Request{})
	}
	dlq, _ := h.depth(h.route.DLQURL)
	if source := len(h.stored(h.route.SourceURL)); source+dlq != 3 {
		t.Fatalf("%d in the source and %d in the DLQ, want the 3 messages somewhere", source, dlq)
	}
}

// The refill gate counts the dead letters a run removed as already applied
// among what it took out of the DLQ.
func TestRefillGateCountsAppliedRemovals(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("RF", 150)
	at := h.clock.Now().Add(-15 * time.Minute)
	prev := replay.RouteSummary{Route: "orders", Depth: 150, Gates: []replay.Gate{{Name: replay.GateRefill, Decision: replay.GateOpen}},
		Counts: replay.Counts{Applied: 150}}
	if err := h.ledger.PutRun(context.Background(), replay.Summary{RunID: "prev", StartedAt: at, Routes: []replay.RouteSummary{prev}}, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{})
	if g := s.Routes[0].Gates[0]; !strings.HasPrefix(g.Detail, "DLQ grew by 150 ") {
		t.Fatalf("refill gate %+v: 150 new dead letters after 150 removed", g)
	}
}

// A dead letter already applied whose ledger cannot be read is still
// rescued before it expires: its removal needs the ledger, the rescue not.
func TestAppliedButLedgerDownIsStillRescued(t *testing.T) {
	h := newHarness(t, false, map[string]string{"MessageRetentionPeriod": "172800"})
	body := order("ORD-AL")
	h.deadLetter(h.route, msg{body: body})
	h.clock.Advance(40 * time.Hour)
	opts := h.options()
	opts.Completions = hashCompletions{"ORD-AL": sumOf(t, h.route, body)}
	s, _ := replay.New(h.q, failingLedger{h.ledger}, opts).Run(context.Background(), replay.Request{Routes: []replay.Route{h.route}})
	if got := s.Total.Parked[replay.ReasonExpiryRescue]; got != 1 {
		t.Fatalf("counts %+v, want it parked for expiry", countsOf(s.Total))
	}
}

// Removing already-applied dead letters is no move: it does not use up the
// run's cap (replays and parks), and a dry run reports it.
func TestAppliedRemovalsAndTheCap(t *testing.T) {
	setup := func(t *testing.T) (*harness, func(*replay.Options)) {
		h := newHarness(t, false, nil)
		done := hashCompletions{}
		for i := range 10 {
			id := fmt.Sprintf("ORD-DONE-%d", i)
			h.deadLetter(h.route, msg{body: order(id)})
			done[id] = sumOf(t, h.route, order(id))
		}
		h.orders("TODO", 10)
		h.clock.Advance(due)
		return h, func(o *replay.Options) {
			o.Completions = done
		}
	}
	t.Run("cap", func(t *testing.T) {
		h, opts := setup(t)
		s := h.run(h.engine(opts), replay.Request{Max: 10})
		if s.Total.Applied != 10 || s.Total.Replayed != 10 {
			t.Fatalf("counts %+v, want 10 applied and 10 replayed", countsOf(s.Total))
		}
	})
	t.Run("dry run", func(t *testing.T) {
		h, opts := setup(t)
		s := h.run(h.engine(opts), replay.Request{DryRun: true})
		if s.Total.Applied != 10 || s.Total.Replayed != 10 {
			t.Fatalf("counts %+v, want 10 applied and 10 replayed", countsOf(s.Total))
		}
	})
}

// An open breaker holds even when no recent run replayed anything (gated
// runs, probes that found nothing due): it is not forgotten.
func TestOpenBreakerHoldsWithoutReplayingRuns(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("BO", 5)
	at := h.clock.Now().Add(-15 * time.Minute)
	prev := replay.RouteSummary{Route: "orders", Gates: []replay.Gate{{Name: replay.GateRefill, Decision: replay.GateOpen}},
		Breaker: &replay.Breaker{Open: true, Trips: 3, ProbeAt: h.clock.Now().Add(time.Hour), FailedRuns: []string{"old"}}}
	if err := h.ledger.PutRun(context.Background(), replay.Summary{RunID: "prev", StartedAt: at, Routes: []replay.RouteSummary{prev}}, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(due)
	s := h.run(h.engine(func(o *replay.Options) { o.Completions = setCompletions{} }), replay.Request{})
	if s.Total.Replayed != 0 || s.Routes[0].Gates[1].Decision != replay.GateClosed {
		t.Fatalf("replayed %d through an open breaker (%+v)", s.Total.Replayed, s.Routes[0].Gates[1])
	}
}
