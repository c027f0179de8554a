package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// due is long enough after a first dead-lettering for any jitter of the
// default backoff (at most 5 minutes).
const due = 10 * time.Minute

// window is longer than the default decision window: a message left as it
// is by a run is visible again after it.
const window = 2 * time.Minute

func strAttr(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// slowKey returns an original message id whose backoff after count replays
// is at least d, so a test can rely on a message being not yet due.
func slowKey(t *testing.T, count int, d time.Duration) string {
	t.Helper()
	for i := range 1000 {
		key := fmt.Sprintf("orig-%d", i)
		if (replay.Policy{}).Backoff(count, key) >= d {
			return key
		}
	}
	t.Fatal("no key found")
	return ""
}

// seedReplays records n earlier replays of orderID's original message
// original (its earlier DLQ copies), with replay counts 1..n.
func (h *harness) seedReplays(orderID, original string, n int) {
	h.t.Helper()
	ctx := context.Background()
	now := h.clock.Now().Add(-time.Hour)
	for i := range n {
		r := record.Message{
			HistoryKey: record.HistoryKey(orderID, ""), MessageID: fmt.Sprintf("old-%d", i), Route: "orders", Key: orderID,
			OriginalMessageID: original, RunID: "old-run", FirstSeenAt: now, At: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(24 * time.Hour),
		}
		for _, s := range []record.State{record.Intent, record.Sent} {
			r.State, r.ReplayCount = s, i+1
			if _, ok, err := h.ledger.Mark(ctx, r); err != nil || !ok {
				h.t.Fatalf("seed %s: ok=%v err=%v", s, ok, err)
			}
		}
	}
}

func TestRunReplaysDueMessagesWithBodyAndAttributesUnchanged(t *testing.T) {
	h := newHarness(t, false, nil)
	start := h.clock.Now()
	full := map[string]types.MessageAttributeValue{}
	for i := range envelope.MaxAttributes {
		full[fmt.Sprintf("p%02d", i)] = strAttr(fmt.Sprint(i))
	}
	sent := []msg{
		{body: order("ORD-1"), attrs: map[string]types.MessageAttributeValue{"traceId": strAttr("t-1"), "blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1}}}},
		{body: order("ORD-2"), attrs: full},
		{body: "not json at all"},
	}
	ids := map[string]string{}
	for _, m := range sent {
		ids[m.body] = h.deadLetter(h.route, m)
	}
	h.clock.Advance(due)

	s := h.run(h.engine(), replay.Request{RunID: "run-1"})

	checkCounts(t, s.Total, counts{Examined: 3, DeadLettered: 3, Replayed: 3})
	rs := s.Routes[0]
	if rs.StopReason != replay.StopDrained || rs.Depth != 3 || !reflect.DeepEqual(rs.ReplayedKeys, []string{"ORD-1", "ORD-2"}) {
		t.Fatalf("route summary = %+v", rs)
	}
	if left := h.q.Messages(h.route.DLQURL); len(left) != 0 {
		t.Fatalf("%d messages left in the DLQ", len(left))
	}
	got := h.stored(h.route.SourceURL)
	if len(got) != 3 {
		t.Fatalf("%d messages in the source", len(got))
	}
	for i, m := range got {
		want := sent[i]
		if m.body != want.body {
			t.Errorf("body %q, want %q", m.body, want.body)
		}
		if len(m.raw.MessageAttributes) > envelope.MaxAttributes {
			t.Errorf("%d attributes", len(m.raw.MessageAttributes))
		}
		if len(want.attrs) > 0 && !reflect.DeepEqual(m.producer, want.attrs) {
			t.Errorf("producer attributes = %v, want %v", m.producer, want.attrs)
		}
		wantMeta := replay.Metadata{ReplayCount: 1, FirstDeadLetteredAt: start, LastReplayAt: start.Add(due), OriginalMessageID: ids[want.body], Route: "orders", RunID: "run-1"}.
			Sealed(h.sealKey(), want.body, h.route.SourceURL)
		if !m.hasMeta || !reflect.DeepEqual(m.meta, wantMeta) {
			t.Errorf("metadata = %+v\n      want %+v", m.meta, wantMeta)
		}
	}
	hist, err := h.ledger.History(context.Background(), record.HistoryKey("ORD-1", ""))
	if err != nil || len(hist) != 1 || hist[0].State != record.Sent || hist[0].ReplayCount != 1 || hist[0].RunID != "run-1" || hist[0].MessageID != ids[sent[0].body] {
		t.Fatalf("history = %+v, %v", hist, err)
	}
	hist, _ = h.ledger.History(context.Background(), record.HistoryKey("", ids["not json at all"]))
	if len(hist) != 1 || hist[0].State != record.Sent {
		t.Fatalf("history of the body without orderId = %+v", hist)
	}
	last, found, err := h.ledger.LastRun(context.Background())
	if err != nil || !found || last.RunID != "run-1" || last.Total.Replayed != 3 {
		t.Fatalf("last run = %+v, %v, %v", last, found, err)
	}
}

func TestDecisions(t *testing.T) {
	key := slowKey(t, 1, 2*time.Minute)
	tests := []struct {
		name    string
		dlq     map[string]string // DLQ attributes
		opts    func(*replay.Options)
		setup   func(h *harness) msg
		wait    time.Duration // before the run
		want    counts
		where   string // "source", "parking" or "dlq"
		count   int    // replay count in the metadata sent
		reason  string // parking reason
		visible bool   // dlq: visible right after the run
		neutral string // the producer's attribute of our name, kept as data
	}{
		{
			name:  "first dead-lettering, due: replayed",
			setup: func(*harness) msg { return msg{body: order("ORD-1")} },
			wait:  due, want: counts{Examined: 1, DeadLettered: 1, Replayed: 1}, where: "source", count: 1,
		},
		{
			name: "replayed before, not due yet: hidden until due",
			setup: func(h *harness) msg {
				return msg{body: order("ORD-1"), meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: h.clock.Now(), OriginalMessageID: key}}
			},
			wait: time.Minute, want: counts{Examined: 1, Delayed: 1}, where: "dlq",
		},
		{
			name: "replayed max times: parked",
			setup: func(h *harness) msg {
				return msg{body: order("ORD-1"), meta: &replay.Metadata{ReplayCount: 3, LastReplayAt: h.clock.Now(), OriginalMessageID: "o"}}
			},
			want: counts{Examined: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}}, where: "parking", count: 3, reason: replay.ReasonReplayExhausted,
		},
		{
			// The decision comes from what the message carries: the
			// records of the order's other DLQ copies are not read.
			name: "the metadata's count decides, not the ledger's history",
			setup: func(h *harness) msg {
				h.seedReplays("ORD-1", "o", 3)
				return msg{body: order("ORD-1"), meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: h.clock.Now().Add(-24 * time.Hour), OriginalMessageID: "o"}}
			},
			want: counts{Examined: 1, Replayed: 1}, where: "source", count: 2,
		},
		{
			name: "MaxReplays option",
			opts: func(o *replay.Options) { o.MaxReplays = 1 },
			setup: func(h *harness) msg {
				return msg{body: order("ORD-1"), meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: h.clock.Now().Add(-24 * time.Hour), OriginalMessageID: "o"}}
			},
			want: counts{Examined: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}}, where: "parking", count: 1, reason: replay.ReasonReplayExhausted,
		},
		{
			name: "close to expiry and not due: rescued to parking",
			dlq:  map[string]string{"MessageRetentionPeriod": "172800"}, // 2 days; rescue window 1 day
			setup: func(h *harness) msg {
				return msg{body: order("ORD-1"), meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: h.clock.Now().Add(36 * time.Hour), OriginalMessageID: key}}
			},
			wait: 36 * time.Hour, want: counts{Examined: 1, Parked: map[string]int{replay.ReasonExpiryRescue: 1}}, where: "parking", count: 1, reason: replay.ReasonExpiryRescue,
		},
		{
			name: "close to expiry and due: replayed",
			dlq:  map[string]string{"MessageRetentionPeriod": "172800"},
			setup: func(h *harness) msg {
				return msg{body: order("ORD-1"), meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: h.clock.Now(), OriginalMessageID: key}}
			},
			wait: 36 * time.Hour, want: counts{Examined: 1, Replayed: 1}, where: "source", count: 2,
		},
		{
			// Not ours (we only write metadata that reads back): the
			// producer's attribute travels as data under a neutral name.
			name: "undecodable metadata is the producer's: replayed, the attribute kept as data",
			setup: func(*harness) msg {
				return msg{body: order("ORD-1"), attrs: map[string]types.MessageAttributeValue{replay.AttributeName: strAttr("{not json"), "producer": strAttr("kept")}}
			},
			wait: due, want: counts{Examined: 1, DeadLettered: 1, Replayed: 1}, where: "source", count: 1, neutral: "{not json",
		},
		{
			name: "metadata without an original message id is not ours",
			setup: func(*harness) msg {
				return msg{body: order("ORD-1"), meta: &replay.Metadata{ReplayCount: 99}}
			},
			wait: due, want: counts{Examined: 1, DeadLettered: 1, Replayed: 1}, where: "source", count: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, tt.dlq)
			m := tt.setup(h)
			h.deadLetter(h.route, m)
			h.clock.Advance(tt.wait)
			opts := []func(*replay.Options){}
			if tt.opts != nil {
				opts = append(opts, tt.opts)
			}
			s := h.run(h.engine(opts...), replay.Request{})
			checkCounts(t, s.Total, tt.want)
			where := map[string]string{"source": h.route.SourceURL, "parking": h.route.ParkingURL, "dlq": h.route.DLQURL}
			for name, url := range where {
				n := len(h.q.Messages(url))
				if (name == tt.where) != (n == 1) {
					t.Fatalf("%d messages in %s, want the message in %s", n, name, tt.where)
				}
			}
			if tt.where == "dlq" {
				if visible, _ := h.depth(h.route.DLQURL); visible != 0 {
					t.Fatalf("the message is visible right after the run")
				}
				return
			}
			got := h.stored(where[tt.where])[0]
			if got.body != m.body || got.meta.ReplayCount != tt.count || got.meta.Reason != tt.reason {
				t.Fatalf("sent %q with metadata %+v", got.body, got.meta)
			}
			if tt.reason != "" && !got.meta.ParkedAt.Equal(h.clock.Now()) {
				t.Fatalf("parkedAt = %v", got.meta.ParkedAt)
			}
			if tt.neutral != "" && (aws.ToString(got.producer[replay.AttributeName+envelope.NeutralSuffix].StringValue) != tt.neutral || aws.ToString(got.producer["producer"].StringValue) != "kept") {
				t.Fatalf("producer attributes %v", got.producer)
			}
		})
	}
}

func TestDelayedMessageComesBackWhenDue(t *testing.T) {
	h := newHarness(t, false, nil)
	key := slowKey(t, 1, 3*time.Minute)
	h.deadLetter(h.route, msg{body: order("ORD-1"), meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: h.clock.Now(), OriginalMessageID: key}})
	dueAt := h.clock.Now().Add((replay.Policy{}).Backoff(1, key))
	e := h.engine()
	checkCounts(t, h.run(e, replay.Request{}).Total, counts{Examined: 1, Delayed: 1})

	h.clock.Advance(dueAt.Sub(h.clock.Now()) - 2*time.Second)
	checkCounts(t, h.run(e, replay.Request{}).Total, counts{})
	h.clock.Advance(3 * time.Second)
	checkCounts(t, h.run(e, replay.Request{}).Total, counts{Examined: 1, Replayed: 1})
	if got := h.stored(h.route.SourceURL); len(got) != 1 || got[0].meta.ReplayCount != 2 || got[0].meta.OriginalMessageID != key {
		t.Fatalf("source = %+v", got)
	}
}

// A message that keeps failing is replayed MaxReplays times and then
// parked, with the SQS redrive moving it back to the DLQ each time: on the
// lane in memory, whose event source mapping delivers it to a consumer
// that fails.
func TestLifecycleUntilParked(t *testing.T) {
	ctx := context.Background()
	lane := batchtest.NewLane("orders", batchtest.LaneOptions{MaxReceiveCount: 1, Key: "orderId"})
	lane.Route.Records = true
	h := &harness{t: t, clock: lane.Clock, q: lane.Queue, ledger: lane.Ledger, route: lane.Route}
	source := lane.Route.SourceURL
	out, err := h.q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(source), MessageBody: aws.String(order("ORD-L")), MessageAttributes: map[string]types.MessageAttributeValue{"traceId": strAttr("t")}})
	if err != nil {
		t.Fatal(err)
	}
	original := aws.ToString(out.MessageId)
	fails := batch.New(func(context.Context, events.SQSMessage) error { return errors.New("tax service: 503") },
		lane.Invalid("invoice"), batch.Options{Logger: slog.New(slog.DiscardHandler), Now: lane.Clock.Now})
	// consumerFails has the consumer fail the message until SQS moves it.
	consumerFails := func() {
		t.Helper()
		if err := lane.Drain(ctx, fails.Process); err != nil {
			t.Fatal(err)
		}
		if n := len(h.q.Messages(h.route.DLQURL)); n != 1 {
			t.Fatalf("%d messages in the DLQ after the redrive", n)
		}
	}
	e := h.engine()
	for replays := 1; replays <= 3; replays++ {
		consumerFails()
		h.clock.Advance(4 * time.Hour) // the backoff cap
		s := h.run(e, replay.Request{})
		want := counts{Examined: 1, Replayed: 1}
		if replays == 1 {
			want.DeadLettered = 1 // the dead letter; its replays that come back are not new ones
		}
		checkCounts(t, s.Total, want)
		got := h.stored(source)
		if len(got) != 1 || got[0].meta.ReplayCount != replays || got[0].meta.OriginalMessageID != original || aws.ToString(got[0].producer["traceId"].StringValue) != "t" {
			t.Fatalf("replay %d: source = %+v", replays, got)
		}
	}
	consumerFails()
	h.clock.Advance(4 * time.Hour)
	checkCounts(t, h.run(e, replay.Request{}).Total, counts{Examined: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}})
	parked := h.stored(h.route.ParkingURL)
	if len(parked) != 1 || parked[0].meta.ReplayCount != 3 || parked[0].meta.OriginalMessageID != original || parked[0].meta.Reason != replay.ReasonReplayExhausted {
		t.Fatalf("parking = %+v", parked)
	}
	hist, _ := h.ledger.History(ctx, record.HistoryKey("ORD-L", ""))
	states := map[record.State]int{}
	for _, r := range hist {
		states[r.State]++
	}
	if states[record.Sent] != 3 || states[record.Parked] != 1 || len(hist) != 4 {
		t.Fatalf("history = %+v", hist)
	}
}

func failBody(op, substr string) func(string, string, types.Message) error {
	return func(gotOp, _ string, m types.Message) error {
		if gotOp == op && strings.Contains(aws.ToString(m.Body), substr) {
			return errors.New("injected " + op + " failure")
		}
		return nil
	}
}

func TestFailedSendEntryIsNotDeleted(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("X", 3)
	h.clock.Advance(due)
	h.q.EntryFault = failBody("SendMessageBatch", "ORD-X-001")
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 3, DeadLettered: 3, Replayed: 2, Errors: 1})
	if left := h.stored(h.route.DLQURL); len(left) != 1 || !strings.Contains(left[0].body, "ORD-X-001") {
		t.Fatalf("DLQ = %v", bodiesOf(left))
	}
	if n := len(h.q.Messages(h.route.SourceURL)); n != 2 {
		t.Fatalf("%d in the source", n)
	}
	hist, _ := h.ledger.History(context.Background(), record.HistoryKey("ORD-X-001", ""))
	if len(hist) != 1 || hist[0].State != record.Intent {
		t.Fatalf("history = %+v", hist)
	}

	h.q.EntryFault = nil
	h.clock.Advance(window)
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 1, Replayed: 1})
	if n := len(h.q.Messages(h.route.SourceURL)); n != 3 {
		t.Fatalf("%d in the source", n)
	}
}

func TestFailedDeleteLeavesSentAndTheNextRunDeletesWithoutSending(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("X", 3)
	h.clock.Advance(due)
	h.q.EntryFault = failBody("DeleteMessageBatch", "ORD-X-001")
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 3, DeadLettered: 3, Replayed: 3, Errors: 1})
	hist, _ := h.ledger.History(context.Background(), record.HistoryKey("ORD-X-001", ""))
	if len(hist) != 1 || hist[0].State != record.Sent {
		t.Fatalf("history = %+v", hist)
	}
	if n := len(h.q.Messages(h.route.DLQURL)); n != 1 {
		t.Fatalf("%d in the DLQ", n)
	}

	h.q.EntryFault = nil
	h.clock.Advance(window)
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 1, Recovered: 1})
	if n := len(h.q.Messages(h.route.SourceURL)); n != 3 {
		t.Fatalf("%d in the source, want 3: the recovered message must not be sent again", n)
	}
	if n := len(h.q.Messages(h.route.DLQURL)); n != 0 {
		t.Fatalf("%d in the DLQ", n)
	}
}

// cancelAtSend cancels the run's context as soon as its sends went out, the
// way a Ctrl-C or the invocation deadline can; its DeleteMessageBatch fails
// on a done context, as the SDK's does.
type cancelAtSend struct {
	*replaytest.MemoryQueue
	cancel context.CancelFunc
}

func (q cancelAtSend) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := q.MemoryQueue.SendMessageBatch(ctx, in, opts...)
	q.cancel()
	return out, err
}

func (q cancelAtSend) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return q.MemoryQueue.DeleteMessageBatch(ctx, in, opts...)
}

// ctxLedger fails every call on a done context, as the DynamoDB ledger does.
type ctxLedger struct{ *replaytest.MemoryLedger }

func (l ctxLedger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	if err := ctx.Err(); err != nil {
		return record.Message{}, false, err
	}
	return l.MemoryLedger.Mark(ctx, r)
}

func TestCancelledAfterSendingStillSettles(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("X", 3)
	h.clock.Advance(due)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := replay.New(cancelAtSend{h.q, cancel}, ctxLedger{h.ledger}, h.options())
	_, _ = e.Run(ctx, replay.Request{Routes: []replay.Route{h.route}})
	if n := len(h.q.Messages(h.route.SourceURL)); n != 3 {
		t.Fatalf("%d sent, want 3", n)
	}
	if n := len(h.q.Messages(h.route.DLQURL)); n != 0 {
		t.Fatalf("%d left in the DLQ after a cancellation that came after the send", n)
	}
	h.clock.Advance(window)
	h.run(h.engine(), replay.Request{})
	if n := len(h.q.Messages(h.route.SourceURL)); n != 3 {
		t.Fatalf("%d in the source after the next run, want 3 (none sent twice)", n)
	}
}

func TestFIFOKeepsTheOrderOfEachGroup(t *testing.T) {
	h := newHarness(t, true, nil)
	start := h.clock.Now()
	key := slowKey(t, 1, 3*time.Minute)
	a := h.deadLetter(h.route, msg{body: order("A"), group: "g1"})
	h.deadLetter(h.route, msg{body: order("B"), group: "g1", meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: start.Add(due), OriginalMessageID: key}})
	h.deadLetter(h.route, msg{body: order("C"), group: "g1"})
	h.deadLetter(h.route, msg{body: order("D"), group: "g2"})
	h.deadLetter(h.route, msg{body: order("E"), group: "g2"})
	h.clock.Advance(due)

	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 5, DeadLettered: 4, Replayed: 3, Delayed: 1, Blocked: 1})
	got := h.stored(h.route.SourceURL)
	if want := []string{order("A"), order("D"), order("E")}; !reflect.DeepEqual(bodiesOf(got), want) {
		t.Fatalf("source = %v, want %v", bodiesOf(got), want)
	}
	if got[0].group != "g1" || got[1].group != "g2" || got[0].raw.Attributes["MessageDeduplicationId"] != replay.DeduplicationID(a, 1, "") {
		t.Fatalf("group/deduplication = %v", got[0].raw.Attributes)
	}

	h.clock.Advance((replay.Policy{}).Backoff(1, key) + time.Second)
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 2, Replayed: 2})
	if want := []string{order("A"), order("D"), order("E"), order("B"), order("C")}; !reflect.DeepEqual(bodiesOf(h.stored(h.route.SourceURL)), want) {
		t.Fatalf("source = %v, want %v", bodiesOf(h.stored(h.route.SourceURL)), want)
	}
}

// A FIFO dead letter is replayed as any other: under its MessageGroupId,
// with the producer's attributes as they were and our metadata beside
// them, nothing else (the engine keeps no group logic: package fifo's
// consumer does).
func TestFIFOReplaysKeepTheGroupAndTheProducersAttributes(t *testing.T) {
	h := newHarness(t, true, nil)
	producer := map[string]types.MessageAttributeValue{}
	for i := range 9 {
		producer[fmt.Sprintf("p%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint(i))}
	}
	id := h.deadLetter(h.route, msg{body: order("A"), group: "acct-7", attrs: producer})
	h.clock.Advance(due)
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 1, DeadLettered: 1, Replayed: 1})
	got := h.stored(h.route.SourceURL)
	if len(got) != 1 || got[0].group != "acct-7" || !got[0].hasMeta || got[0].meta.OriginalMessageID != id {
		t.Fatalf("source = %+v, want the replay of %s in group acct-7", got, id)
	}
	if !reflect.DeepEqual(got[0].producer, producer) || len(got[0].raw.MessageAttributes) != len(producer)+1 {
		t.Errorf("attributes = %v, want the producer's and ours only", got[0].raw.MessageAttributes)
	}
}

func TestFIFOFailedSendStopsItsGroup(t *testing.T) {
	h := newHarness(t, true, nil)
	h.deadLetter(h.route, msg{body: order("A"), group: "g1"})
	h.deadLetter(h.route, msg{body: order("B"), group: "g1"})
	h.deadLetter(h.route, msg{body: order("C"), group: "g2"})
	h.clock.Advance(due)
	h.q.EntryFault = failBody("SendMessageBatch", `"A"`)
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 3, DeadLettered: 3, Replayed: 1, Blocked: 1, Errors: 1})
	if got := bodiesOf(h.stored(h.route.SourceURL)); !reflect.DeepEqual(got, []string{order("C")}) {
		t.Fatalf("source = %v", got)
	}

	h.q.EntryFault = nil
	h.clock.Advance(window)
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, counts{Examined: 2, Replayed: 2})
	if got := bodiesOf(h.stored(h.route.SourceURL)); !reflect.DeepEqual(got, []string{order("C"), order("A"), order("B")}) {
		t.Fatalf("source = %v", got)
	}
}

func TestRateLimit(t *testing.T) {
	tests := []struct {
		optionRate, requestRate float64
		want                    time.Duration
	}{
		// The first batch of 10 leaves at once; each next one waits for
		// the time the previous one used: 35 messages = 4 batches.
		{optionRate: 10, want: 3 * time.Second},
		{optionRate: 10, requestRate: 5, want: 6 * time.Second},
		{want: time.Duration(30 / replay.DefaultRate * float64(time.Second))}, // the default rate: 3 waits of 10 messages
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%g-%g", tt.optionRate, tt.requestRate), func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.orders("R", 35)
			h.clock.Advance(due)
			start := h.clock.Now()
			s := h.run(h.engine(func(o *replay.Options) { o.Rate = tt.optionRate }), replay.Request{Rate: tt.requestRate})
			if s.Total.Replayed != 35 {
				t.Fatalf("replayed %d", s.Total.Replayed)
			}
			if got := h.clock.Now().Sub(start); got != tt.want {
				t.Fatalf("took %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCapStopsTheRun(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("M", 40)
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{Max: 15})
	// The deferred are left without a ledger call: not looked up, they
	// are not counted as dead-lettered yet.
	checkCounts(t, s.Total, counts{Examined: 20, DeadLettered: 15, Replayed: 15, Deferred: 5})
	if s.Routes[0].StopReason != replay.StopCap || s.Max != 15 {
		t.Fatalf("stop = %s, max = %d", s.Routes[0].StopReason, s.Max)
	}
	if visible, inFlight := h.depth(h.route.DLQURL); visible != 25 || inFlight != 0 {
		t.Fatalf("DLQ: %d visible, %d in flight; the deferred must be released", visible, inFlight)
	}
}

func TestDeadline(t *testing.T) {
	t.Run("too little time for a batch", func(t *testing.T) {
		h := newHarness(t, false, nil)
		h.orders("D", 5)
		h.clock.Advance(due)
		ctx, cancel := context.WithDeadline(context.Background(), h.clock.Now().Add(5500*time.Millisecond))
		defer cancel()
		s, err := h.tryRun(ctx, h.engine(), replay.Request{})
		if err != nil || s.Routes[0].StopReason != replay.StopDeadline || s.Total.Examined != 0 {
			t.Fatalf("err = %v, summary = %+v", err, s.Routes[0])
		}
	})
	t.Run("the rate-limit wait counts", func(t *testing.T) {
		h := newHarness(t, false, nil)
		h.orders("D", 30)
		h.clock.Advance(due)
		ctx, cancel := context.WithDeadline(context.Background(), h.clock.Now().Add(20*time.Second))
		defer cancel()
		// 1 message/s: the second batch waits 10 s; a third would end
		// after the deadline minus the margin.
		s, err := h.tryRun(ctx, h.engine(), replay.Request{Rate: 1})
		if err != nil || s.Routes[0].StopReason != replay.StopDeadline || s.Total.Replayed != 20 {
			t.Fatalf("err = %v, summary = %+v", err, s.Routes[0])
		}
	})
}

func TestGates(t *testing.T) {
	errDown := errors.New("tax service: 503")
	previous := func(h *harness, rs replay.RouteSummary) {
		rs.Route = "orders"
		// The previous run read the route (a run that did has gates).
		rs.Gates = []replay.Gate{{Name: replay.GateRefill, Decision: replay.GateOpen}, {Name: replay.GateCanary, Decision: replay.GateSkipped}}
		at := h.clock.Now().Add(-15 * time.Minute)
		if err := h.ledger.PutRun(context.Background(), replay.Summary{RunID: "prev", StartedAt: at, Routes: []replay.RouteSummary{rs}}, at.Add(time.Hour)); err != nil {
			h.t.Fatal(err)
		}
	}
	completions := func(done ...string) replay.Completions {
		s := idempotency.NewMemoryStore()
		for _, id := range done {
			r := &idempotency.Receiver{Store: s, Scope: "invoice"}
			if _, err := r.Do(context.Background(), id, "h", func(context.Context) (string, error) { return "INV", nil }); err != nil {
				panic(err)
			}
		}
		return &replaytest.MemoryCompletions{Store: s, Scope: "invoice"}
	}
	tests := []struct {
		name     string
		messages int
		setup    func(h *harness)
		opts     func(*replay.Options)
		health   replay.GateDecision
		refill   replay.GateDecision
		canary   replay.GateDecision
		want     counts
	}{
		{
			name: "all open", messages: 8,
			opts:   func(o *replay.Options) { o.Health = func(context.Context) error { return nil } },
			health: replay.GateOpen, refill: replay.GateOpen, canary: replay.GateSkipped,
			want: counts{Examined: 8, DeadLettered: 8, Replayed: 8},
		},
		{
			// Gates hold replays, not the expiry rescue: the messages are
			// examined for it, and those not about to expire are left for
			// a later run without a ledger call.
			name: "downstream unhealthy: no replays", messages: 8,
			opts:   func(o *replay.Options) { o.Health = func(context.Context) error { return errDown } },
			health: replay.GateClosed, refill: replay.GateOpen, canary: replay.GateSkipped,
			want: counts{Examined: 8, Deferred: 8},
		},
		{
			// New dead letters alone do not close it: it closes on
			// replays that come back (TestRefillGateClosesOnReplaysBack).
			name: "DLQ grew by new dead letters: open", messages: 150,
			setup:  func(h *harness) { previous(h, replay.RouteSummary{Depth: 40, Counts: replay.Counts{Replayed: 10}}) },
			health: replay.GateSkipped, refill: replay.GateOpen, canary: replay.GateSkipped,
			want: counts{Examined: 150, DeadLettered: 150, Replayed: 150},
		},
		{
			name: "DLQ grew within the threshold", messages: 150,
			setup:  func(h *harness) { previous(h, replay.RouteSummary{Depth: 40, Counts: replay.Counts{Replayed: 10}}) },
			opts:   func(o *replay.Options) { o.RefillThreshold = 120 },
			health: replay.GateSkipped, refill: replay.GateOpen, canary: replay.GateSkipped,
			want: counts{Examined: 150, DeadLettered: 150, Replayed: 150},
		},
		{
			name: "most previous replays not completed: canary", messages: 8,
			setup: func(h *harness) {
				previous(h, replay.RouteSummary{ReplayedKeys: []string{"ORD-P-1", "ORD-P-2", "ORD-P-3"}})
			},
			opts:   func(o *replay.Options) { o.Completions = completions("ORD-P-1") },
			health: replay.GateSkipped, refill: replay.GateOpen, canary: replay.GateLimited,
			want: counts{Examined: 8, DeadLettered: 5, Replayed: 5, Deferred: 3},
		},
		{
			// The failing keys are their messages' own: no canary.
			name: "half the previous replays completed: no canary", messages: 8,
			setup:  func(h *harness) { previous(h, replay.RouteSummary{ReplayedKeys: []string{"ORD-P-1", "ORD-P-2"}}) },
			opts:   func(o *replay.Options) { o.Completions = completions("ORD-P-1") },
			health: replay.GateSkipped, refill: replay.GateOpen, canary: replay.GateOpen,
			want: counts{Examined: 8, DeadLettered: 8, Replayed: 8},
		},
		{
			// Known failures are left out: the run is judged by ORD-P-1.
			name: "previous known failures not completed: no canary", messages: 8,
			setup: func(h *harness) {
				previous(h, replay.RouteSummary{ReplayedKeys: []string{"ORD-P-1", "ORD-P-2", "ORD-P-3"}, RetriedKeys: []string{"ORD-P-2", "ORD-P-3"}})
			},
			opts:   func(o *replay.Options) { o.Completions = completions("ORD-P-1") },
			health: replay.GateSkipped, refill: replay.GateOpen, canary: replay.GateOpen,
			want: counts{Examined: 8, DeadLettered: 8, Replayed: 8},
		},
		{
			name: "a single previous replay not completed: canary", messages: 8,
			setup:  func(h *harness) { previous(h, replay.RouteSummary{ReplayedKeys: []string{"ORD-P-1"}}) },
			opts:   func(o *replay.Options) { o.Completions = completions() },
			health: replay.GateSkipped, refill: replay.GateOpen, canary: replay.GateLimited,
			want: counts{Examined: 8, DeadLettered: 5, Replayed: 5, Deferred: 3},
		},
		{
			name: "previous replays completed: no canary", messages: 8,
			setup:  func(h *harness) { previous(h, replay.RouteSummary{ReplayedKeys: []string{"ORD-P-1", "ORD-P-2"}}) },
			opts:   func(o *replay.Options) { o.Completions = completions("ORD-P-1", "ORD-P-2") },
			health: replay.GateSkipped, refill: replay.GateOpen, canary: replay.GateOpen,
			want: counts{Examined: 8, DeadLettered: 8, Replayed: 8},
		},
		{
			name: "completions unreadable: canary", messages: 8,
			setup:  func(h *harness) { previous(h, replay.RouteSummary{ReplayedKeys: []string{"ORD-P-1"}}) },
			opts:   func(o *replay.Options) { o.Completions = failingCompletions{}; o.CanaryLimit = 2 },
			health: replay.GateSkipped, refill: replay.GateOpen, canary: replay.GateLimited,
			want: counts{Examined: 8, DeadLettered: 2, Replayed: 2, Deferred: 6},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.orders("G", tt.messages)
			h.clock.Advance(due)
			if tt.setup != nil {
				tt.setup(h)
			}
			opts := func(*replay.Options) {}
			if tt.opts != nil {
				opts = tt.opts
			}
			s := h.run(h.engine(opts), replay.Request{})
			rs := s.Routes[0]
			if s.Gates[0].Decision != tt.health || rs.Gates[0].Name != replay.GateRefill || rs.Gates[0].Decision != tt.refill || rs.Gates[1].Decision != tt.canary {
				t.Fatalf("gates: run %+v, route %+v", s.Gates, rs.Gates)
			}
			checkCounts(t, s.Total, tt.want)
			closed := tt.health == replay.GateClosed || tt.refill == replay.GateClosed
			if closed != (rs.StopReason == replay.StopGate) {
				t.Fatalf("stop = %s", rs.StopReason)
			}
			if visible, _ := h.depth(h.route.DLQURL); visible != tt.messages-tt.want.Replayed {
				t.Fatalf("%d visible in the DLQ after the run", visible)
			}
			if tt.canary == replay.GateLimited && (rs.Gates[1].Limit == 0 || rs.Gates[1].Detail == "") {
				t.Fatalf("canary gate = %+v", rs.Gates[1])
			}
			if got := strings.Count(h.metrics.String(), `"GateClosed":1`); got != map[bool]int{true: 1}[closed] {
				t.Fatalf("metrics: %s", h.metrics.String())
			}
			if lines := h.logLines("replay gate"); len(lines) != 3 {
				t.Fatalf("%d gate log lines, want 3", len(lines))
			}
		})
	}
}

type failingCompletions struct{}

func (failingCompletions) Completed(context.Context, []string) (map[string]string, error) {
	return nil, errors.New("throttled")
}

// A message that cannot be replayed because the canary limit is used up,
// but is about to expire, is parked instead of left to expire.
func TestExpiryRescueWhenTheCanaryLimitIsReached(t *testing.T) {
	h := newHarness(t, false, map[string]string{"MessageRetentionPeriod": "172800"})
	h.orders("E", 3)
	h.clock.Advance(36 * time.Hour)
	at := h.clock.Now().Add(-15 * time.Minute)
	if err := h.ledger.PutRun(context.Background(), replay.Summary{RunID: "prev", StartedAt: at, Routes: []replay.RouteSummary{{Route: "orders", ReplayedKeys: []string{"ORD-P"}}}}, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s := h.run(h.engine(func(o *replay.Options) {
		o.Completions = &replaytest.MemoryCompletions{Store: idempotency.NewMemoryStore(), Scope: "invoice"}
		o.CanaryLimit = 1
	}), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 3, DeadLettered: 3, Replayed: 1, Parked: map[string]int{replay.ReasonExpiryRescue: 2}})
}

func TestFilters(t *testing.T) {
	setup := func(t *testing.T) *harness {
		h := newHarness(t, false, nil)
		invalidAttrs, err := envelope.Pack(nil, invalid.AttributeName, invalid.Metadata{Reason: "invalid-tax-id"})
		if err != nil {
			t.Fatal(err)
		}
		h.deadLetter(h.route, msg{body: order("ORD-F-1")})
		h.deadLetter(h.route, msg{body: order("ORD-F-2"), attrs: invalidAttrs})
		h.deadLetter(h.route, msg{body: order("ORD-F-3"), meta: &replay.Metadata{ReplayCount: 1, FirstDeadLetteredAt: h.clock.Now(), OriginalMessageID: "o3", Reason: replay.ReasonExpiryRescue}})
		h.deadLetter(h.route, msg{body: "not json"})
		h.clock.Advance(2 * time.Hour)
		h.deadLetter(h.route, msg{body: order("ORD-F-5")})
		h.clock.Advance(time.Second)
		return h
	}
	tests := []struct {
		name    string
		filter  replay.Filter
		invalid bool     // the route reads the invalid queue (Route.Invalid)
		want    []string // bodies replayed
	}{
		{"no filter", replay.Filter{}, false, []string{order("ORD-F-1"), order("ORD-F-2"), order("ORD-F-3"), "not json", order("ORD-F-5")}},
		// A verdict on a DLQ message is the producer's attribute: the
		// consumer sends its verdicts to the invalid queue.
		{"dead-lettered by the broker", replay.Filter{Reasons: []string{replay.ReasonDeadLettered}}, false, []string{order("ORD-F-1"), order("ORD-F-2"), "not json", order("ORD-F-5")}},
		{"a producer's verdict on a DLQ message is no reason", replay.Filter{Reasons: []string{"invalid-tax-id"}}, false, []string{}},
		{"reason of the invalid lane, on the invalid queue", replay.Filter{Reasons: []string{"invalid-tax-id"}}, true, []string{order("ORD-F-2")}},
		{"our parking reason", replay.Filter{Reasons: []string{replay.ReasonExpiryRescue, "other"}}, false, []string{order("ORD-F-3")}},
		{"older than", replay.Filter{OlderThan: time.Hour}, false, []string{order("ORD-F-1"), order("ORD-F-2"), order("ORD-F-3"), "not json"}},
		{"order ids", replay.Filter{Keys: []string{"ORD-F-2", "ORD-F-5", "ORD-F-9"}}, false, []string{order("ORD-F-2"), order("ORD-F-5")}},
		{"every criterion must match", replay.Filter{Reasons: []string{replay.ReasonDeadLettered}, OlderThan: time.Hour}, false, []string{order("ORD-F-1"), order("ORD-F-2"), "not json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := setup(t)
			rt := h.route
			rt.Invalid = tt.invalid
			s := h.run(h.engine(func(o *replay.Options) { o.BackoffBase, o.BackoffMax = time.Millisecond, time.Millisecond }), replay.Request{Routes: []replay.Route{rt}, Filter: tt.filter})
			fresh := len(tt.want)
			if slices.Contains(tt.want, order("ORD-F-3")) {
				fresh-- // a replay that came back: not a new dead letter
			}
			checkCounts(t, s.Total, counts{Examined: 5, DeadLettered: fresh, Replayed: len(tt.want), Skipped: 5 - len(tt.want)})
			if got := bodiesOf(h.stored(h.route.SourceURL)); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("replayed %v, want %v", got, tt.want)
			}
			if visible, inFlight := h.depth(h.route.DLQURL); visible != 5-len(tt.want) || inFlight != 0 {
				t.Fatalf("DLQ: %d visible, %d in flight: the skipped must be released", visible, inFlight)
			}
			if (s.Filter == nil) != (tt.name == "no filter") {
				t.Fatalf("summary filter = %+v", s.Filter)
			}
		})
	}
}

// A filter by message id replays those messages of the queue read, a
// parked one too with its count reset, at once (a reset waits for no
// backoff), and leaves the others in place.
func TestFilterByMessageID(t *testing.T) {
	h := newHarness(t, false, nil)
	h.deadLetter(h.route, msg{body: order("ORD-I-1")})
	two := h.deadLetter(h.route, msg{body: order("ORD-I-2")})
	three := h.deadLetter(h.route, msg{body: order("ORD-I-3"), meta: &replay.Metadata{ReplayCount: 3, FirstDeadLetteredAt: h.clock.Now(), OriginalMessageID: "o3", Reason: replay.ReasonReplayExhausted}})
	h.deadLetter(h.route, msg{body: order("ORD-I-4")})
	// Just arrived, under the default backoff: a reset replays at once.
	s := h.run(h.engine(), replay.Request{ResetCount: true, Filter: replay.Filter{MessageIDs: []string{two, three, "not-in-the-queue"}}})
	checkCounts(t, s.Total, counts{Examined: 4, DeadLettered: 1, Replayed: 2, Skipped: 2})
	if got, want := bodiesOf(h.stored(h.route.SourceURL)), []string{order("ORD-I-2"), order("ORD-I-3")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed %v, want %v", got, want)
	}
	if visible, inFlight := h.depth(h.route.DLQURL); visible != 2 || inFlight != 0 {
		t.Fatalf("DLQ: %d visible, %d in flight: the others stay", visible, inFlight)
	}
	if s.Filter == nil || len(s.Filter.MessageIDs) != 3 {
		t.Fatalf("summary filter = %+v", s.Filter)
	}
}

// A filter's message ids are bounded as its other lists, and travel in
// the run summary as "messageIds".
func TestFilterMessageIDsAreBoundedAndStored(t *testing.T) {
	rt := replay.Route{Name: "orders", DLQURL: "https://sqs.us-east-1.amazonaws.com/1/d", SourceURL: "https://sqs.us-east-1.amazonaws.com/1/s", ParkingURL: "https://sqs.us-east-1.amazonaws.com/1/p"}
	for _, tt := range []struct {
		ids  []string
		want string
	}{
		{[]string{""}, "filter messageIds: value 0 is 0 bytes"},
		{[]string{strings.Repeat("i", replay.MaxKeyID+1)}, "filter messageIds: value 0 is 129 bytes"},
		{make([]string, replay.MaxFilterValues+1), "filter messageIds: 101 values"},
	} {
		err := replay.Request{Routes: []replay.Route{rt}, Filter: replay.Filter{MessageIDs: tt.ids}}.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%d ids: %v, want %q", len(tt.ids), err, tt.want)
		}
	}
	b, err := json.Marshal(replay.Filter{MessageIDs: []string{"m-1", "m-2"}})
	var back replay.Filter
	if err != nil || !strings.Contains(string(b), `"messageIds":["m-1","m-2"]`) || json.Unmarshal(b, &back) != nil || !slices.Equal(back.MessageIDs, []string{"m-1", "m-2"}) {
		t.Fatalf("%s %v: read back %+v", b, err, back)
	}
}

func TestDryRunMovesAndWritesNothing(t *testing.T) {
	h := newHarness(t, false, nil)
	key := slowKey(t, 1, 3*time.Minute)
	h.orders("Y", 2)
	h.deadLetter(h.route, msg{body: order("ORD-Y-P"), meta: &replay.Metadata{ReplayCount: 3, OriginalMessageID: "p"}})
	h.clock.Advance(due)
	h.deadLetter(h.route, msg{body: order("ORD-Y-D"), meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: h.clock.Now(), OriginalMessageID: key}})
	want := counts{Examined: 4, DeadLettered: 2, Replayed: 2, Delayed: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}}

	s := h.run(h.engine(), replay.Request{DryRun: true})
	if !s.DryRun {
		t.Fatal("summary not marked dryRun")
	}
	checkCounts(t, s.Total, want)
	for _, url := range []string{h.route.SourceURL, h.route.ParkingURL} {
		if n := len(h.q.Messages(url)); n != 0 {
			t.Fatalf("%d messages in %s", n, url)
		}
	}
	if visible, inFlight := h.depth(h.route.DLQURL); visible != 4 || inFlight != 0 {
		t.Fatalf("DLQ: %d visible, %d in flight: a dry run releases everything", visible, inFlight)
	}
	if _, found, _ := h.ledger.LastRun(context.Background()); found {
		t.Fatal("a dry run wrote its summary")
	}
	if hist, _ := h.ledger.History(context.Background(), record.HistoryKey("ORD-Y-000", "")); len(hist) != 0 {
		t.Fatalf("a dry run wrote %+v", hist)
	}
	if h.metrics.Len() != 0 {
		t.Fatalf("a dry run emitted metrics: %s", h.metrics.String())
	}
	// A real run right after decides the same.
	checkCounts(t, h.run(h.engine(), replay.Request{}).Total, want)
}

func TestRoutesShareTheCapAndAnErrorStopsOnlyItsRoute(t *testing.T) {
	h := newHarness(t, false, nil)
	other := h.newRoute("payments", false, nil)
	missing := replay.Route{Name: "gone", DLQURL: "https://sqs.us-east-1.amazonaws.com/000000000000/gone-dlq", SourceURL: "s", ParkingURL: "p"}
	h.orders("A", 10)
	for i := range 10 {
		h.deadLetter(other, msg{body: order(fmt.Sprintf("ORD-B-%d", i))})
	}
	h.clock.Advance(due)
	s, err := h.tryRun(context.Background(), h.engine(), replay.Request{Routes: []replay.Route{h.route, missing, other}, Max: 12})
	var notFound *types.QueueDoesNotExist
	if !errors.As(err, &notFound) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("err = %v", err)
	}
	got := map[string]replay.RouteSummary{}
	for _, rs := range s.Routes {
		got[rs.Route] = rs
	}
	if got["orders"].Replayed != 10 || got["gone"].StopReason != replay.StopError || got["gone"].Error == "" ||
		got["payments"].Replayed != 2 || got["payments"].Deferred != 8 || got["payments"].StopReason != replay.StopCap {
		t.Fatalf("routes = %+v", s.Routes)
	}
	checkCounts(t, s.Total, counts{Examined: 20, DeadLettered: 12, Replayed: 12, Deferred: 8})
}

func TestBodyWithoutOrderIDIsTrackedByItsOriginalMessage(t *testing.T) {
	h := newHarness(t, false, nil)
	id := h.deadLetter(h.route, msg{body: "<xml/>"})
	h.clock.Advance(due)
	e := h.engine()
	h.run(e, replay.Request{})
	// It fails again and comes back to the DLQ as the replayed message.
	back := h.stored(h.route.SourceURL)[0]
	h.deadLetter(h.route, msg{body: back.body, attrs: back.raw.MessageAttributes})
	h.clock.Advance(4 * time.Hour)
	h.run(e, replay.Request{})
	hist, _ := h.ledger.History(context.Background(), record.HistoryKey("", id))
	if len(hist) != 2 || hist[0].State != record.Sent || hist[1].State != record.Sent || hist[1].ReplayCount != 2 {
		t.Fatalf("history = %+v", hist)
	}
}

func TestInvalidRequests(t *testing.T) {
	ok := replay.Route{Name: "orders", DLQURL: "q-dlq", SourceURL: "q", ParkingURL: "q-parking"}
	fifo := replay.Route{Name: "orders", DLQURL: "q-dlq.fifo", SourceURL: "q.fifo", ParkingURL: "q-parking"}
	tests := []struct {
		name string
		req  replay.Request
		want string
	}{
		{"no routes", replay.Request{}, "no routes"},
		{"mixed queue types", replay.Request{Routes: []replay.Route{fifo}}, "parkingUrl q-parking"},
		{"missing url", replay.Request{Routes: []replay.Route{{Name: "x", DLQURL: "d"}}}, "sourceUrl is required"},
		{"same route twice", replay.Request{Routes: []replay.Route{ok, ok}}, "appears twice"},
		{"negative max", replay.Request{Routes: []replay.Route{ok}, Max: -1}, "max -1"},
		{"rate too high", replay.Request{Routes: []replay.Route{ok}, Rate: 5000}, "rate 5000"},
		{"negative age", replay.Request{Routes: []replay.Route{ok}, Filter: replay.Filter{OlderThan: -time.Hour}}, "olderThan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			calls := 0
			h.q.CallFault = func(string, string) error { calls++; return nil }
			_, err := h.engine().Run(context.Background(), tt.req)
			if !errors.Is(err, replay.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalidRequest mentioning %q", err, tt.want)
			}
			if calls != 0 {
				t.Fatalf("%d SQS calls for an invalid request", calls)
			}
		})
	}
}

func TestReceiveFailureStopsTheRoute(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("F", 3)
	h.clock.Advance(due)
	cause := errors.New("throttled")
	h.q.CallFault = func(op, _ string) error {
		if op == "ReceiveMessage" {
			return cause
		}
		return nil
	}
	s, err := h.tryRun(context.Background(), h.engine(), replay.Request{})
	if !errors.Is(err, cause) || s.Routes[0].StopReason != replay.StopError {
		t.Fatalf("err = %v, stop = %s", err, s.Routes[0].StopReason)
	}
	if _, found, _ := h.ledger.LastRun(context.Background()); !found {
		t.Fatal("the run record must be written even when a route failed")
	}
}

func TestLedgerFailureClosesTheGatesAndIsReported(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("L", 3)
	h.clock.Advance(due)
	cause := errors.New("ledger down")
	e := replay.New(h.q, brokenLedger{h.ledger, cause}, h.options())
	s, err := e.Run(context.Background(), replay.Request{Routes: []replay.Route{h.route}})
	// Held by the refill gate: nothing replayed, every message examined
	// for the expiry rescue and left for a later run.
	if !errors.Is(err, cause) || s.Routes[0].StopReason != replay.StopGate || s.Total.Replayed != 0 || s.Total.Deferred != 3 {
		t.Fatalf("err = %v, summary = %+v", err, s.Routes[0])
	}
}

type brokenLedger struct {
	replay.Ledger
	err error
}

func (b brokenLedger) Runs(context.Context, int) ([]replay.Summary, error) {
	return nil, b.err
}

// A route the previous run never reached (its cap was spent on another
// route) is not taken for a refilling DLQ: its depth there was never read.
func TestRefillGateIgnoresARouteThePreviousRunDidNotRead(t *testing.T) {
	h := newHarness(t, false, nil)
	second := h.newRoute("second", false, nil)
	h.orders("A", 20)
	for i := range 150 {
		h.deadLetter(second, msg{body: order(fmt.Sprintf("ORD-B-%03d", i))})
	}
	h.clock.Advance(due)
	e := h.engine(func(o *replay.Options) { o.MaxPerRun = 20 })
	first := h.run(e, replay.Request{Routes: []replay.Route{h.route, second}})
	if rs := first.Routes[1]; rs.StopReason != replay.StopCap || len(rs.Gates) != 0 {
		t.Fatalf("setup: the second route should be skipped by the cap: %+v", rs)
	}
	h.clock.Advance(window)
	next := h.run(e, replay.Request{Routes: []replay.Route{h.route, second}})
	rs := next.Routes[1]
	if len(rs.Gates) == 0 || rs.Gates[0].Name != replay.GateRefill || rs.Gates[0].Decision != replay.GateOpen || rs.Replayed != 20 {
		t.Fatalf("second route: gates %+v, replayed %d; want the refill gate open and 20 replayed", rs.Gates, rs.Replayed)
	}
}

// A run held by the health gate replays nothing; the run after it still
// checks the orders of the last run that did replay (the canary), and an
// operator's run on another route does not count as this route's history.
func TestGatesLookPastRunsThatDidNotReplay(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("A", 8)
	h.clock.Advance(due)
	down := errors.New("tax service: 503")
	healthy := true
	opts := func(o *replay.Options) {
		o.Health = func(context.Context) error {
			if healthy {
				return nil
			}
			return down
		}
		o.Completions = completionsOf("ORD-A-000") // one of three completes: the others failed again
		o.MaxPerRun = 3
	}
	first := h.run(h.engine(opts), replay.Request{})
	if first.Total.Replayed != 3 {
		t.Fatalf("setup: replayed %d, want 3", first.Total.Replayed)
	}
	healthy = false
	h.clock.Advance(window)
	if held := h.run(h.engine(opts), replay.Request{}); held.Total.Replayed != 0 {
		t.Fatalf("the health gate let %d through", held.Total.Replayed)
	}
	other := h.newRoute("orders/parking", false, nil)
	h.run(h.engine(), replay.Request{Routes: []replay.Route{other}})
	healthy = true
	h.clock.Advance(window)
	next := h.run(h.engine(opts, func(o *replay.Options) { o.CanaryLimit = 2 }), replay.Request{})
	g := next.Routes[0].Gates[1]
	if g.Name != replay.GateCanary || g.Decision != replay.GateLimited || next.Total.Replayed != 2 {
		t.Fatalf("canary = %+v, replayed %d; want limited to 2 by the first run's pending orders", g, next.Total.Replayed)
	}
}

// completionsOf reports the given orders completed and every other one not.
func completionsOf(done ...string) replay.Completions { return fixedCompletions(done) }

type fixedCompletions []string

func (f fixedCompletions) Completed(_ context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if slices.Contains(f, id) {
			out[id] = "hash"
		}
	}
	return out, nil
}
