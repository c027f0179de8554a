//go:build e2e

package replay_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/crash"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/replay"
)

// lane is one route on real queues on the emulator, with a DynamoDB ledger.
type lane struct {
	sqs    *sqs.Client
	ledger *dynamo.Ledger
	route  replay.Route
}

func newLane(t *testing.T, fifo bool) *lane {
	cfg := emulatortest.Config(t)
	q := sqs.NewFromConfig(cfg)
	db := dynamodb.NewFromConfig(cfg)
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	l := &lane{sqs: q, ledger: dynamo.NewLedger(db, emulatortest.LedgerTable(t, db), nil)}
	l.route.Name = "orders"
	l.route.Key = "orderId" // the bodies are the sample's orders
	l.route.DLQURL, _ = emulatortest.Queue(t, q, emulatortest.Name(t, "dlq")+suffix)
	l.route.SourceURL, _ = emulatortest.Queue(t, q, emulatortest.Name(t, "src")+suffix)
	l.route.ParkingURL, _ = emulatortest.Queue(t, q, emulatortest.Name(t, "park")+suffix)
	return l
}

// engine replays at once (a backoff of at most 1 ms) and hides messages it
// leaves for at most about 2 s.
func (l *lane) engine() *replay.Engine { return l.engineWith(l.sqs, l.ledger) }

// engineWith is an engine on the ports q and ledger (the lane's, or
// wrappers of them), with its options modified by mod.
func (l *lane) engineWith(q replay.Queue, ledger replay.Ledger, mod ...func(*replay.Options)) *replay.Engine {
	o := replay.Options{
		Policy: replay.Policy{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}, DecisionWindow: time.Second,
		Logger: slog.New(slog.DiscardHandler),
	}
	for _, m := range mod {
		m(&o)
	}
	return replay.New(q, ledger, o)
}

func (l *lane) run(t *testing.T, e *replay.Engine) (replay.Summary, error) {
	t.Helper()
	return e.Run(context.Background(), replay.Request{Routes: []replay.Route{l.route}})
}

func (l *lane) send(t *testing.T, url, body, group string, attrs map[string]types.MessageAttributeValue) string {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}
	if group != "" {
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(group), aws.String(fmt.Sprint(time.Now().UnixNano()))
	}
	out, err := l.sqs.SendMessage(context.Background(), in)
	if err != nil {
		t.Fatalf("send to %s: %v", url, err)
	}
	return aws.ToString(out.MessageId)
}

// drain receives everything in url (deleting nothing).
func (l *lane) drain(t *testing.T, url string) []types.Message {
	t.Helper()
	var all []types.Message
	for {
		out, err := l.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 30,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return all
		}
		all = append(all, out.Messages...)
	}
}

func TestReplayOnTheEmulator(t *testing.T) {
	l := newLane(t, false)
	ids := map[string]string{}
	for i := range 15 {
		body := order(fmt.Sprintf("ORD-E2E-%02d", i))
		ids[body] = l.send(t, l.route.DLQURL, body, "", map[string]types.MessageAttributeValue{"traceId": strAttr(fmt.Sprint(i))})
	}
	// Under load the SDK may send one of them twice (a lost answer, see
	// sendCounter): the DLQ then holds a 16th message, a copy of one body
	// under an id the test does not know, and the engine replays it too.
	n := l.depth(t, l.route.DLQURL)
	if n < 15 {
		t.Fatalf("%d messages in the DLQ after 15 sends", n)
	}
	s, err := l.run(t, l.engine())
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s.Total, counts{Examined: n, DeadLettered: n, Replayed: n})
	if left := l.drain(t, l.route.DLQURL); len(left) != 0 {
		t.Fatalf("%d messages left in the DLQ", len(left))
	}
	got := l.drain(t, l.route.SourceURL)
	if len(got) != n {
		t.Fatalf("%d messages in the source, want %d", len(got), n)
	}
	for _, m := range got {
		meta, producer, found, err := replay.Read(m.MessageAttributes)
		if err != nil || !found {
			t.Fatalf("no metadata: %v", err)
		}
		original := meta.OriginalMessageID == ids[aws.ToString(m.Body)] || n > 15 && !slices.Contains(slices.Collect(maps.Values(ids)), meta.OriginalMessageID)
		if meta.ReplayCount != 1 || !original || meta.RunID != s.RunID || producer["traceId"].StringValue == nil {
			t.Fatalf("metadata = %+v, producer attributes = %v", meta, producer)
		}
		if len(m.MessageAttributes) != 2 {
			t.Fatalf("%d attributes, want the producer's one and ours", len(m.MessageAttributes))
		}
	}
	last, found, err := l.ledger.LastRun(context.Background())
	if err != nil || !found || last.RunID != s.RunID || last.Total.Replayed != n {
		t.Fatalf("ledger run = %+v, %v, %v", last, found, err)
	}
	hist, err := l.ledger.History(context.Background(), record.HistoryKey("ORD-E2E-00", ""))
	if err != nil || len(hist) < 1 || len(hist) > 1+n-15 || slices.ContainsFunc(hist, func(r record.Message) bool { return r.State != record.Sent }) {
		t.Fatalf("history = %+v, %v", hist, err)
	}
}

func TestMaxReplaysParkOnTheEmulator(t *testing.T) {
	l := newLane(t, false)
	key, err := replay.SealKey(context.Background(), l.ledger, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	meta := replay.Metadata{ReplayCount: 3, OriginalMessageID: "orig", LastReplayAt: time.Now()}.Sealed(key, order("ORD-P"), l.route.SourceURL)
	attrs, err := replay.Attributes(nil, meta)
	if err != nil {
		t.Fatal(err)
	}
	l.send(t, l.route.DLQURL, order("ORD-P"), "", attrs)
	s, err := l.run(t, l.engine())
	if err != nil {
		t.Fatal(err)
	}
	// A replay that came back (its metadata verifies): no new dead letter.
	checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 0, Parked: map[string]int{replay.ReasonReplayExhausted: 1}})
	parked := l.drain(t, l.route.ParkingURL)
	if len(parked) != 1 {
		t.Fatalf("%d in the parking queue", len(parked))
	}
	meta, _, _, err = replay.Read(parked[0].MessageAttributes)
	if err != nil || meta.Reason != replay.ReasonReplayExhausted || meta.ReplayCount != 3 || meta.OriginalMessageID != "orig" {
		t.Fatalf("metadata = %+v, %v", meta, err)
	}
	if n := len(l.drain(t, l.route.SourceURL)) + len(l.drain(t, l.route.DLQURL)); n != 0 {
		t.Fatalf("%d messages elsewhere", n)
	}
}

// depth is every message url holds, from the queue's attributes: unlike a
// receive, reading them twice changes nothing.
func (l *lane) depth(t *testing.T, url string) int {
	t.Helper()
	visible, inFlight, delayed := emulatortest.Depth(t, l.sqs, url)
	return visible + inFlight + delayed
}

// sendCounter is the lane's SQS client as the engine sees it, counting the
// messages the engine asks to send and the SDK's extra attempts of those
// sends. Under load the SDK can lose the answer of a call the emulator has
// applied (net/http's writeLoop closes the connection while the answer is
// read: "use of closed network connection", aws/aws-sdk-go-v2#1825) and
// sends the call again: every entry of that batch may then arrive twice.
// The design accepts that duplicate (the consumer absorbs it); a second
// send by the engine is what these tests forbid.
type sendCounter struct {
	replay.Queue
	mu      sync.Mutex
	entries int // entries of the engine's SendMessageBatch calls
	retried int // entries of the SDK's attempts after the first
}

func (c *sendCounter) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	attempts := 0
	count := middleware.FinalizeMiddlewareFunc("countAttempts", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		attempts++ // after the retry middleware: once per attempt
		return next.HandleFinalize(ctx, in)
	})
	optFns = append(slices.Clone(optFns), func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error { return s.Finalize.Insert(count, "Retry", middleware.After) })
	})
	out, err := c.Queue.SendMessageBatch(ctx, in, optFns...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries += len(in.Entries)
	c.retried += max(0, attempts-1) * len(in.Entries)
	return out, err
}

func TestCrashBetweenSendAndDeleteOnTheEmulator(t *testing.T) {
	for _, lockstep := range []bool{true, false} {
		t.Run(map[bool]string{true: "lockstep", false: "pipelined"}[lockstep], func(t *testing.T) {
			l := newLane(t, false)
			for i := range 4 {
				l.send(t, l.route.DLQURL, order(fmt.Sprintf("ORD-C-%d", i)), "", nil)
			}
			// 4, or one more for each send the SDK retried after the emulator
			// had applied it (see sendCounter).
			n := l.depth(t, l.route.DLQURL)
			sends := &sendCounter{Queue: l.sqs}
			// The process dies as the first delete goes out: in lockstep the
			// batch's SENT records are written by then; pipelined, they may
			// not be (they go beside the deletes), and the recovery sends
			// those messages again.
			cr := crash.New(crash.AtFirst("DeleteMessageBatch"))
			crashing := l.engineWith(cr.Queue(sends), cr.Ledger(l.ledger), func(o *replay.Options) { o.Lockstep = lockstep })
			if _, err := l.run(t, crashing); !errors.Is(err, crash.ErrCrash) {
				t.Fatalf("err = %v", err)
			}
			sent := sends.entries
			time.Sleep(2500 * time.Millisecond) // the receive visibility (the decision window) ends
			s, err := l.run(t, l.engineWith(sends, l.ledger, func(o *replay.Options) { o.Lockstep = lockstep }))
			if err != nil {
				t.Fatal(err)
			}
			c := s.Total
			if c.Examined != n || c.Recovered+c.Replayed != n || lockstep && c.Recovered != n {
				t.Fatalf("the recovery examined %d, recovered %d and replayed %d of the %d the crash left (lockstep %v)", c.Examined, c.Recovered, c.Replayed, n, lockstep)
			}
			if sends.entries != sent+c.Replayed {
				t.Fatalf("the engine sent %d messages, want the %d before the crash and the %d replayed by the recovery", sends.entries, sent, c.Replayed)
			}
			// The source is counted from its attributes: a drain's receive
			// retried by the SDK would hide what the lost answer held.
			switch got := l.depth(t, l.route.SourceURL); {
			case got < sends.entries || got > sends.entries+sends.retried:
				t.Fatalf("%d messages in the source, want %d, plus at most the %d entries the SDK sent again", got, sends.entries, sends.retried)
			case got > sends.entries:
				t.Logf("%d messages in the source: %d copies from SDK retries of SendMessageBatch, not from the engine", got, got-sends.entries)
			}
			if left := l.depth(t, l.route.DLQURL); left != 0 {
				t.Fatalf("%d left in the DLQ", left)
			}
		})
	}
}

func TestFIFOOnTheEmulator(t *testing.T) {
	l := newLane(t, true)
	var want []string
	for i := range 6 {
		body := order(fmt.Sprintf("ORD-F-%d", i))
		l.send(t, l.route.DLQURL, body, fmt.Sprintf("g%d", i%2), nil)
		want = append(want, body)
	}
	s, err := l.run(t, l.engine())
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s.Total, counts{Examined: 6, DeadLettered: 6, Replayed: 6})
	got := map[string][]string{}
	for _, m := range l.drain(t, l.route.SourceURL) {
		g := m.Attributes["MessageGroupId"]
		got[g] = append(got[g], aws.ToString(m.Body))
		// The emulator's drain only hands out one in-flight group message
		// at a time; delete to see the next.
		if _, err := l.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(l.route.SourceURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	for len(got["g0"])+len(got["g1"]) < 6 {
		more := l.drain(t, l.route.SourceURL)
		if len(more) == 0 {
			break
		}
		for _, m := range more {
			g := m.Attributes["MessageGroupId"]
			got[g] = append(got[g], aws.ToString(m.Body))
			if _, err := l.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(l.route.SourceURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(got["g0"], []string{want[0], want[2], want[4]}) || !slices.Equal(got["g1"], []string{want[1], want[3], want[5]}) {
		t.Fatalf("source groups = %v", got)
	}
}

// SQS redrive keeps the message id, so the original message id in our
// metadata is the one the producer's message had in the source queue.
func TestRedriveKeepsTheMessageIDOnTheEmulator(t *testing.T) {
	l := newLane(t, false)
	ctx := context.Background()
	arn, err := l.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(l.route.DLQURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(emulatortest.Name(t, "redriven")), Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, arn.Attributes["QueueArn"]),
	}})
	if err != nil {
		t.Fatal(err)
	}
	source := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = l.sqs.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(source)})
	})
	l.route.SourceURL = source
	id := l.send(t, source, order("ORD-R"), "", nil)
	for range 2 { // the consumer fails once; the next receive moves it
		if _, err := l.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(source), VisibilityTimeout: 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
	}
	s, err := l.run(t, l.engine())
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 1, Replayed: 1})
	got := l.drain(t, source)
	if len(got) != 1 {
		t.Fatalf("%d in the source", len(got))
	}
	meta, _, _, err := replay.Read(got[0].MessageAttributes)
	if err != nil || meta.OriginalMessageID != id {
		t.Fatalf("original message id %q, want %q (%v)", meta.OriginalMessageID, id, err)
	}
}
