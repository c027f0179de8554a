package replay_test

// Tests of the paths a review found at sizes and with inputs the
// simulation never generated (issue 15): each failed before its fix.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// tickingQueue moves the clock on by step at every receive: a pass over a
// deep DLQ takes time, so that what it holds would come back by itself
// within the pass if it were not hidden long enough.
type tickingQueue struct {
	replay.Queue
	h    *harness
	step time.Duration
}

func (q tickingQueue) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q.h.clock.Advance(q.step)
	return q.Queue.ReceiveMessage(ctx, in, opts...)
}

// sleepUntil is a Sleep for several workers on the manual clock: sleeps
// that overlap end when the latest one would, as in real time, instead of
// adding up.
func (h *harness) sleepUntil(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	target := h.clock.Now().Add(d)
	h.sleepMu.Lock()
	defer h.sleepMu.Unlock()
	if now := h.clock.Now(); now.Before(target) {
		h.clock.Advance(target.Sub(now))
	}
	return nil
}

// upstream sends n orders to a source queue whose redrive policy leads to
// the route's DLQ; redrive moves them there as SQS does: they keep the
// SentTimestamp of their first send, and land behind what the DLQ holds.
func (h *harness) upstream(prefix string, n int) string {
	h.t.Helper()
	arn := h.q.ARN(h.route.DLQURL)
	src, err := h.q.CreateQueue("upstream-"+prefix, map[string]string{
		"VisibilityTimeout": "0", "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, arn),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	for i := range n {
		if _, err := h.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String(order(fmt.Sprintf("ORD-%s-%03d", prefix, i)))}); err != nil {
			h.t.Fatal(err)
		}
	}
	return src
}

func (h *harness) redrive(src string) {
	h.t.Helper()
	for range 2 {
		// The first receive counts each message once; the second finds it
		// received maxReceiveCount times and moves it to the DLQ.
		for {
			out, err := h.q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10})
			if err != nil {
				h.t.Fatal(err)
			}
			if len(out.Messages) < 10 {
				break
			}
		}
	}
	if v, f := h.depth(src); v+f != 0 {
		h.t.Fatalf("%d messages left upstream", v+f)
	}
}

// A pass covers every message its DLQ held when it started, however many it
// holds back: behind a closed gate, the messages about to expire at the far
// end of a DLQ of 1,100 younger ones are parked, none left to expire.
func TestAPassCoversADeepDLQBehindAClosedGate(t *testing.T) {
	h := newHarness(t, false, map[string]string{"MessageRetentionPeriod": "172800"}) // 48 h; the rescue window is 24 h
	old := h.upstream("OLD", 3)
	h.clock.Advance(40 * time.Hour) // the old ones are inside their rescue window
	h.orders("NEW", 1100)
	h.redrive(old) // behind the 1,100 new ones
	opts := h.options()
	opts.Health = func(context.Context) error { return fmt.Errorf("tax service: 503") }
	e := replay.New(tickingQueue{Queue: h.q, h: h, step: time.Second}, h.ledger, opts)
	ctx, cancel := context.WithDeadline(context.Background(), h.clock.Now().Add(10*time.Minute))
	defer cancel()
	s, err := h.tryRun(ctx, e, replay.Request{})
	if err != nil {
		t.Fatal(err)
	}
	rs := s.Routes[0]
	if rs.Examined != 1103 || rs.Parked[replay.ReasonExpiryRescue] != 3 || rs.Deferred != 1100 {
		t.Fatalf("examined %d, parked %v, deferred %d (stop %s); want all 1,103 examined and the 3 old ones rescued", rs.Examined, rs.Parked, rs.Deferred, rs.StopReason)
	}
	if rs.StopReason != replay.StopGate {
		t.Errorf("stop reason %s, want %s", rs.StopReason, replay.StopGate)
	}
	// The expiry backstop's figures: the oldest dead letter examined is an
	// old one, 8 h from its expiry, and the 3 were inside their window.
	if x := rs.Expiry; x == nil || x.InRescueWindow != 3 || x.ExpiresAt.Sub(x.OldestSentAt) != 48*time.Hour || s.StartedAt.Sub(x.OldestSentAt) < 40*time.Hour {
		t.Errorf("expiry %+v; want the old ones' (sent 40 h before the run, 3 in the rescue window)", rs.Expiry)
	}
	// What the pass held becomes visible again for the next run: the
	// first ones when the pass ends, the rest when the hide it expected
	// ends (the run's deadline).
	h.clock.Advance(10 * time.Minute)
	if visible, inFlight := h.depth(h.route.DLQURL); visible != 1100 || inFlight != 0 {
		t.Fatalf("after the run's deadline the DLQ shows %d visible, %d in flight; want the 1,100 visible", visible, inFlight)
	}
}

// A filtered run finds its message wherever it is, and a dry run examines
// every message, however many the run leaves alone before it.
func TestFilteredAndDryRunsCoverADeepDLQ(t *testing.T) {
	tests := []struct {
		name  string
		req   replay.Request
		check func(t *testing.T, h *harness, rs replay.RouteSummary)
	}{
		{"filter by order", replay.Request{Filter: replay.Filter{Keys: []string{"ORD-LAST-000"}}}, func(t *testing.T, h *harness, rs replay.RouteSummary) {
			if rs.Replayed != 1 || rs.Skipped != 1100 {
				t.Fatalf("replayed %d, skipped %d (stop %s); want the one order replayed, 1,100 skipped", rs.Replayed, rs.Skipped, rs.StopReason)
			}
			if got := bodiesOf(h.stored(h.route.SourceURL)); len(got) != 1 || keyOf(got[0]) != "ORD-LAST-000" {
				t.Fatalf("source holds %v", got)
			}
		}},
		{"dry run", replay.Request{DryRun: true}, func(t *testing.T, _ *harness, rs replay.RouteSummary) {
			if rs.Examined != 1101 || rs.Replayed != 1101 {
				t.Fatalf("a dry run over 1,101 examined %d and would replay %d (stop %s)", rs.Examined, rs.Replayed, rs.StopReason)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.orders("MANY", 1100)
			h.orders("LAST", 1)
			h.clock.Advance(due)
			e := replay.New(tickingQueue{Queue: h.q, h: h, step: time.Second}, h.ledger, h.options())
			s := h.run(e, tt.req)
			tt.check(t, h, s.Routes[0])
		})
	}
}

// Two orders fail in the consumer, each for its own reason, and nothing
// else is left: every run's replays all fail, so the breaker takes them for
// an outage and gives their replays back. It gives back at most MaxReplays
// of each: both are parked in the end, each replayed at most 2 x MaxReplays
// times.
func TestRefundsAreBounded(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("BAD", 2)
	done := setCompletions{}
	opts := func(o *replay.Options) { o.Completions = done }
	replays := map[string]int{}
	for run := 0; run < 200 && len(h.stored(h.route.ParkingURL)) < 2; run++ {
		h.clock.Advance(6 * time.Hour)
		h.run(h.engine(opts), replay.Request{})
		for _, m := range h.stored(h.route.SourceURL) {
			replays[keyOf(m.body)]++
		}
		h.consume(done, func(string) bool { return false })
	}
	parked := h.stored(h.route.ParkingURL)
	if len(parked) != 2 {
		t.Fatalf("%d parked after 200 runs, replays %v: the two keep going round", len(parked), replays)
	}
	for _, p := range parked {
		id := keyOf(p.body)
		if p.meta.Reason != replay.ReasonReplayExhausted || replays[id] > 2*replay.DefaultMaxReplays || p.meta.ReplayCount+p.meta.Refunds != replays[id] {
			t.Errorf("%s parked as %q after %d replays (count %d, refunds %d); want replay-exhausted after at most %d", id, p.meta.Reason, replays[id], p.meta.ReplayCount, p.meta.Refunds, 2*replay.DefaultMaxReplays)
		}
	}
}

// heldLeaseLedger fails the test when a run writes a message's final record
// after the lease of its INTENT ran out: between the two, another run could
// have taken the message over and sent it too.
type heldLeaseLedger struct {
	*replaytest.MemoryLedger
	t   *testing.T
	now func() time.Time
	mu  sync.Mutex
	bad []string
}

func (l *heldLeaseLedger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	if r.State.Final() {
		l.check(ctx, r)
	}
	return l.MemoryLedger.Mark(ctx, r)
}

func (l *heldLeaseLedger) MarkBatch(ctx context.Context, recs []record.Message) []record.Marked {
	for _, r := range recs {
		if r.State.Final() {
			l.check(ctx, r)
		}
	}
	return l.MemoryLedger.MarkBatch(ctx, recs)
}

func (l *heldLeaseLedger) check(ctx context.Context, r record.Message) {
	history, err := l.History(ctx, r.HistoryKey)
	if err != nil {
		l.t.Error(err)
		return
	}
	for _, cur := range history {
		if cur.MessageID == r.MessageID && cur.State == record.Intent && !l.now().Before(cur.LeaseUntil) {
			l.mu.Lock()
			l.bad = append(l.bad, fmt.Sprintf("%s %s at %s, lease until %s", r.MessageID, r.State, l.now().Format(time.TimeOnly), cur.LeaseUntil.Format(time.TimeOnly)))
			l.mu.Unlock()
		}
	}
}

// At a slow rate, a batch that both replays and parks keeps the lease of
// every message from its claim to its final record, in lockstep and
// pipelined: no other run can take over a message it has sent. (One worker:
// the manual clock cannot model overlapping sleeps; the simulation runs
// several.)
func TestMixedBatchesKeepTheirLeasesAtSlowRates(t *testing.T) {
	for _, tt := range []struct {
		lockstep bool
		workers  int
		rate     float64
	}{{true, 1, 0.1}, {false, 1, 0.1}, {true, 1, 0.5}, {false, 1, 0.5}, {true, 1, 1}, {false, 1, 1}} {
		t.Run(fmt.Sprintf("lockstep=%v,workers=%d,rate=%g", tt.lockstep, tt.workers, tt.rate), func(t *testing.T) {
			h := newHarness(t, false, nil)
			// A first batch of replays only, so that the next ones start
			// with the limiter a batch ahead; then batches that replay 9
			// and park 1.
			for i := range 40 {
				m := msg{body: order(fmt.Sprintf("ORD-MIX-%03d", i))}
				if i%10 == 9 && i > 9 {
					meta := replay.Metadata{ReplayCount: replay.DefaultMaxReplays, OriginalMessageID: fmt.Sprintf("orig-%d", i), FirstDeadLetteredAt: h.clock.Now(), LastReplayAt: h.clock.Now(), Route: h.route.Name}
					m.meta = &meta
				}
				h.deadLetter(h.route, m)
			}
			h.clock.Advance(24 * time.Hour)
			l := &heldLeaseLedger{MemoryLedger: h.ledger, t: t, now: h.clock.Now}
			opts := h.options()
			opts.Lockstep = tt.lockstep
			opts.Workers = tt.workers
			opts.Rate = tt.rate
			opts.DecisionWindow = 10 * time.Second
			opts.Sleep = h.sleepUntil
			s, err := replay.New(h.q, l, opts).Run(context.Background(), replay.Request{Routes: []replay.Route{h.route}})
			if err != nil {
				t.Fatal(err)
			}
			if s.Total.Replayed != 37 || s.Total.Parked[replay.ReasonReplayExhausted] != 3 {
				t.Fatalf("replayed %d, parked %v; want 37 and 3 (counts %+v, logs:\n%s)", s.Total.Replayed, s.Total.Parked, countsOf(s.Total), h.logLines("replay message"))
			}
			if len(l.bad) > 0 {
				t.Fatalf("final records written after the lease ran out:\n%s", strings.Join(l.bad, "\n"))
			}
		})
	}
}

// Metadata the engine did not write is never trusted: a producer's
// well-formed copy of our attribute (forged, or copied from another
// message) decides nothing; it travels on as the producer's data.
func TestForeignMetadataIsNeverTrusted(t *testing.T) {
	t.Run("a forged replay count", func(t *testing.T) {
		h := newHarness(t, false, nil)
		forged := replay.Metadata{ReplayCount: 99, Refunds: 99, OriginalMessageID: "orig", LastReplayAt: h.clock.Now().Add(72 * time.Hour), Route: "orders", RunID: "run-x"}
		h.deadLetter(h.route, msg{body: order("ORD-FORGED"), meta: &forged, forged: true})
		h.clock.Advance(due)
		s := h.run(h.engine(), replay.Request{})
		if s.Total.Replayed != 1 || s.Total.ParkedTotal() != 0 {
			t.Fatalf("replayed %d, parked %v: a forged count of 99 decided the fate of a good order", s.Total.Replayed, s.Total.Parked)
		}
		got := h.stored(h.route.SourceURL)[0]
		if got.meta.ReplayCount != 1 || got.meta.OriginalMessageID == "orig" {
			t.Fatalf("sent with count %d, original %q; want the first replay of this message", got.meta.ReplayCount, got.meta.OriginalMessageID)
		}
		if len(got.producer) != 1 {
			t.Fatalf("producer attributes %v; want the forged one kept under a neutral name", got.producer)
		}
	})
	t.Run("an oversized original id", func(t *testing.T) {
		h := newHarness(t, false, map[string]string{"MessageRetentionPeriod": "172800"})
		// A producer may write an attribute the engine never would: 20 KiB
		// of original id, well-formed, sealed or not.
		big := replay.Metadata{ReplayCount: 1, OriginalMessageID: strings.Repeat("x", 20<<10), Route: "orders"}
		for _, m := range []struct {
			body string
			meta replay.Metadata
		}{{order("ORD-BIG"), big}, {order("ORD-BIG-SEALED"), big.Sealed(h.sealKey(), order("ORD-BIG-SEALED"), h.route.SourceURL)}} {
			doc, err := json.Marshal(map[string]any{"meta": m.meta})
			if err != nil {
				t.Fatal(err)
			}
			attrs := map[string]types.MessageAttributeValue{replay.AttributeName: {DataType: aws.String("String"), StringValue: aws.String(string(doc))}}
			h.deadLetter(h.route, msg{body: m.body, attrs: attrs})
		}
		h.clock.Advance(40 * time.Hour) // inside the rescue window, behind a closed gate
		s := h.run(h.engine(func(o *replay.Options) { o.Health = func(context.Context) error { return fmt.Errorf("down") } }), replay.Request{})
		if s.Total.Parked[replay.ReasonExpiryRescue] != 2 || s.Total.Errors != 0 {
			t.Fatalf("parked %v, errors %d; want both rescued", s.Total.Parked, s.Total.Errors)
		}
	})
	t.Run("a parked message published again", func(t *testing.T) {
		h := newHarness(t, false, nil)
		// Sealed for the parking queue, where the engine put it; an
		// operator's script publishes it to the source again, attributes
		// and all, and it dead-letters.
		parked := replay.Metadata{ReplayCount: replay.DefaultMaxReplays, OriginalMessageID: "orig", Route: "orders", Reason: replay.ReasonReplayExhausted, ParkedAt: h.clock.Now()}
		sealed := parked.Sealed(h.sealKey(), order("ORD-AGAIN"), h.route.ParkingURL)
		h.deadLetter(h.route, msg{body: order("ORD-AGAIN"), meta: &sealed, forged: true})
		h.clock.Advance(due)
		s := h.run(h.engine(), replay.Request{})
		if s.Total.Replayed != 1 {
			t.Fatalf("replayed %d, parked %v; want a new message's first replay", s.Total.Replayed, s.Total.Parked)
		}
	})
	t.Run("FIFO: two orders with one copy", func(t *testing.T) {
		h := newHarness(t, true, nil)
		meta := replay.Metadata{ReplayCount: 1, OriginalMessageID: "orig", Route: "orders"}
		h.deadLetter(h.route, msg{body: order("ORD-A"), group: "a", meta: &meta}) // the engine's
		copied := meta.Sealed(h.sealKey(), order("ORD-A"), h.route.SourceURL)
		h.deadLetter(h.route, msg{body: order("ORD-B"), group: "b", meta: &copied, forged: true}) // a's attribute, copied onto b
		h.clock.Advance(24 * time.Hour)
		s := h.run(h.engine(), replay.Request{})
		got := bodiesOf(h.stored(h.route.SourceURL))
		if s.Total.Replayed != 2 || len(got) != 2 {
			t.Fatalf("replayed %d, the source holds %v: SQS dropped one as a duplicate and the engine deleted its DLQ copy", s.Total.Replayed, got)
		}
	})
}

// sealLedger fails the reads of the seal key.
type sealLedger struct{ *replaytest.MemoryLedger }

func (l sealLedger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	if r.HistoryKey == settings.SealKeyPartition {
		return record.Message{}, false, fmt.Errorf("throttled")
	}
	return l.MemoryLedger.Mark(ctx, r)
}

// A run that cannot read the seal key cannot tell its metadata from a
// producer's: it replays nothing, says why, and still rescues what is about
// to expire.
func TestNoSealKeyReplaysNothingButRescues(t *testing.T) {
	h := newHarness(t, false, map[string]string{"MessageRetentionPeriod": "172800"})
	h.orders("OLD", 2)
	h.clock.Advance(40 * time.Hour)
	h.orders("NEW", 3)
	h.clock.Advance(due)
	s, err := replay.New(h.q, sealLedger{h.ledger}, h.options()).Run(context.Background(), replay.Request{Routes: []replay.Route{h.route}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	for _, g := range s.Gates {
		closed = closed || g.Name == replay.GateSeal && g.Decision == replay.GateClosed && strings.Contains(g.Detail, "throttled")
	}
	if !closed || s.Total.Replayed != 0 || s.Total.Parked[replay.ReasonExpiryRescue] != 2 || s.Total.Deferred != 3 {
		t.Fatalf("gates %+v, counts %+v; want the seal gate closed, the 2 old ones rescued, the 3 new ones left", s.Gates, countsOf(s.Total))
	}
}

// Every field the engine writes to DynamoDB is bounded, whatever the
// messages hold: an order id of 5 KiB goes into a ledger record hashed, a
// run that replays 300 such orders writes a summary under 32 KiB (its
// counts exact; its sample of keys keeps some of the long ones, whole, for
// the canary to read), and a health probe's long answer is clipped.
func TestLedgerItemsAreBounded(t *testing.T) {
	h := newHarness(t, false, nil)
	for i := range 300 {
		h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-%04d-%s", i, strings.Repeat("9", 5<<10)))})
	}
	h.orders("SHORT", 150)
	h.clock.Advance(due)
	s := h.run(h.engine(func(o *replay.Options) { o.Completions = setCompletions{} }), replay.Request{})
	if s.Total.Replayed != 450 {
		t.Fatalf("replayed %d, want 450", s.Total.Replayed)
	}
	runs, err := h.ledger.Runs(context.Background(), 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, err %v", runs, err)
	}
	doc, err := json.Marshal(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(doc) > 32<<10 || len(runs[0].Routes[0].ReplayedKeys) > 100 || runs[0].Routes[0].Replayed != 450 {
		t.Fatalf("the run's record is %d bytes with %d replayed orders (replayed %d); want under 32 KiB, at most 100, exact count", len(doc), len(runs[0].Routes[0].ReplayedKeys), runs[0].Routes[0].Replayed)
	}
	sampledLong := 0
	for _, id := range runs[0].Routes[0].ReplayedKeys {
		if len(id) > replay.MaxKeyID {
			sampledLong++
		}
	}
	if sampledLong == 0 {
		t.Fatal("no long key in the canary's sample: a lane of long keys would be judged by none (issue 30)")
	}
	long := keyOf(order("ORD-0000-" + strings.Repeat("9", 5<<10)))
	history, err := h.ledger.History(context.Background(), record.HistoryKey(long, ""))
	if err != nil || len(history) != 1 {
		t.Fatalf("history %v, err %v", history, err)
	}
	if rec := history[0]; len(rec.Key) > 2*replay.MaxKeyID || len(rec.OriginalMessageID) > replay.MaxKeyID {
		t.Fatalf("a record holds an order id of %d bytes, an original id of %d", len(rec.Key), len(rec.OriginalMessageID))
	}

	probe := h.run(h.engine(func(o *replay.Options) {
		o.Health = func(context.Context) error { return fmt.Errorf("503: %s", strings.Repeat("<html>", 100<<10)) }
	}), replay.Request{})
	if n := len(probe.Gates[0].Detail); n > 2<<10 {
		t.Fatalf("the health gate quotes %d bytes of the probe's answer", n)
	}
}

// The filter of a request is part of its summary: its lists are bounded,
// its keys in all (a key alone may be of any length: issue 30).
func TestFilterListsAreBounded(t *testing.T) {
	h := newHarness(t, false, nil)
	many := make([]string, replay.MaxFilterValues+1)
	for i := range many {
		many[i] = fmt.Sprint("ORD-", i)
	}
	long := strings.Repeat("x", 40<<10)
	for _, f := range []replay.Filter{{Keys: many}, {Reasons: many}, {Keys: []string{long, long}}, {Reasons: []string{strings.Repeat("x", replay.MaxKeyID+1)}}} {
		if _, err := h.tryRun(context.Background(), h.engine(), replay.Request{Filter: f}); !errors.Is(err, replay.ErrInvalidRequest) {
			t.Errorf("filter with %d order ids, %d reasons: err %v, want ErrInvalidRequest", len(f.Keys), len(f.Reasons), err)
		}
	}
	if _, err := h.tryRun(context.Background(), h.engine(), replay.Request{Filter: replay.Filter{Keys: []string{long}}}); err != nil {
		t.Errorf("a filter of one key of %d bytes: %v, want it taken", len(long), err)
	}
}

// After an outage that opened the breaker, a single order that fails on its
// own is all that is left: a probe of it alone is no evidence of an outage,
// so the breaker closes and the order is parked after its replays, instead
// of being held behind probes only it answers.
func TestALoneFailingOrderClosesTheBreaker(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("OUT", 4)
	done := setCompletions{}
	opts := func(o *replay.Options) {
		o.Completions = done
		o.BackoffBase = 5 * time.Minute
		o.BackoffMax = 24 * time.Hour // an open breaker's probes soon wait a day
	}
	outage := true
	ok := func(id string) bool { return !outage && id != "ORD-OUT-000" }
	replays := map[string]int{}
	opened := false
	start := h.clock.Now()
	var last replay.Summary
	for run := 0; run < 36 && len(h.stored(h.route.ParkingURL)) == 0; run++ {
		if run == 6 {
			// The outage ends while the breaker is open, and the good
			// orders leave the DLQ another way (an operator's filtered
			// replay, say): the failing one is all a probe finds.
			outage = false
			h.removeFromDLQ(func(body string) bool { return keyOf(body) != "ORD-OUT-000" })
		}
		h.clock.Advance(time.Hour)
		last = h.run(h.engine(opts), replay.Request{})
		opened = opened || last.Routes[0].Breaker != nil && last.Routes[0].Breaker.Open
		for _, m := range h.stored(h.route.SourceURL) {
			replays[keyOf(m.body)]++
		}
		h.consume(done, ok)
	}
	t.Logf("parked after %s, replays %v, breaker %+v", h.clock.Now().Sub(start), replays, last.Routes[0].Breaker)
	if !opened {
		t.Fatal("the outage never opened the breaker: the test does not test what it claims")
	}
	parked := h.stored(h.route.ParkingURL)
	if len(parked) != 1 || keyOf(parked[0].body) != "ORD-OUT-000" || replays["ORD-OUT-000"] > 2*replay.DefaultMaxReplays {
		t.Fatalf("after 36 hourly runs parked %d, replays %v; want ORD-OUT-000 parked after at most %d replays", len(parked), replays, 2*replay.DefaultMaxReplays)
	}
	if b := last.Routes[0].Breaker; b != nil && b.Open {
		t.Fatalf("the breaker is still open: %+v", b)
	}
}

// removeFromDLQ deletes the DLQ's messages whose body drop selects.
func (h *harness) removeFromDLQ(drop func(body string) bool) {
	h.t.Helper()
	ctx := context.Background()
	out, err := h.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(h.route.DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, m := range out.Messages {
		if drop(aws.ToString(m.Body)) {
			in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(h.route.DLQURL), Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: m.ReceiptHandle}}}
			if _, err := h.q.DeleteMessageBatch(ctx, in); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	h.clock.Advance(time.Second) // the others are visible again
}

// An operator's reset restarts the whole bound: the count and the refunds.
func TestAResetRestartsTheRefundsToo(t *testing.T) {
	h := newHarness(t, false, nil)
	parked := replay.Route{Name: "orders-parking", DLQURL: h.route.ParkingURL, SourceURL: h.route.SourceURL, ParkingURL: h.route.ParkingURL}
	meta := &replay.Metadata{ReplayCount: replay.DefaultMaxReplays, Refunds: replay.DefaultMaxReplays, OriginalMessageID: "orig-1", Reason: replay.ReasonReplayExhausted}
	h.deadLetter(parked, msg{body: order("ORD-RESET"), meta: meta})
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{Routes: []replay.Route{parked}, ResetCount: true})
	got := h.stored(h.route.SourceURL)
	if s.Total.Replayed != 1 || len(got) != 1 || got[0].meta.ReplayCount != 1 || got[0].meta.Refunds != 0 || got[0].meta.ResetAt.IsZero() {
		t.Fatalf("replayed %d, source %+v; want the first replay after the reset, no refunds", s.Total.Replayed, got)
	}
}
