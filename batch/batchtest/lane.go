package batchtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// LaneOptions shape a [Lane]. The zero value takes the defaults.
type LaneOptions struct {
	MaxReceiveCount int           // receives before the redrive moves a message to the DLQ; default 3
	Visibility      time.Duration // the source queue's visibility timeout; default 30 s
	Retention       time.Duration // the source queue's message retention; default 4 days (SQS's)
	BatchSize       int           // records per invocation, 1..10; default 10
	Key             string        // the route's business key expression (replay.Route.Key)
	PayloadHash     string        // the route's payload hash expression (replay.Route.PayloadHash)
}

// Lane is a lane in memory, on a manual clock: a source queue redriven to a
// DLQ after MaxReceiveCount receives, invalid and parking queues, the event
// source mapping ([Lane.Poll], [Lane.Drain]) and the replay engine
// ([Lane.Replay]). It is not safe for concurrent use; the consumer it
// invokes may call the queues concurrently (docs/PACKAGES.md#batch).
type Lane struct {
	Queue      *replaytest.MemoryQueue  // every queue of the lane
	Clock      *replaytest.Clock        // the clock of the queues, the ledger and the engine
	Ledger     *replaytest.MemoryLedger // the replay ledger
	Route      replay.Route             // the queues' URLs and the key expressions
	InvalidURL string                   // the invalid queue

	opts LaneOptions
	arn  string

	mu    sync.Mutex
	wakes []time.Time // when source messages the lane saw hidden come back
}

// NewLane returns the lane name (".fifo" makes its queues FIFO queues),
// its clock showing the present. It panics on options out of bounds.
func NewLane(name string, o LaneOptions) *Lane {
	if o.MaxReceiveCount == 0 {
		o.MaxReceiveCount = 3
	}
	if o.Visibility == 0 {
		o.Visibility = 30 * time.Second
	}
	if o.BatchSize == 0 {
		o.BatchSize = 10
	}
	if o.Retention == 0 {
		o.Retention = settings.DefaultSourceRetention
	}
	if o.BatchSize < 1 || o.BatchSize > 10 || o.Visibility < time.Second || o.MaxReceiveCount < 1 || o.Retention < time.Minute {
		panic(fmt.Sprintf("batchtest: NewLane: options out of bounds: %+v", o))
	}
	base, suffix := name, ""
	if settings.IsFIFO(name) {
		base = strings.TrimSuffix(name, ".fifo")
		suffix = ".fifo"
	}
	clock := replaytest.NewClock(time.Now().UTC().Truncate(time.Millisecond))
	q := replaytest.NewMemoryQueue(clock.Now)
	must := func(url string, err error) string {
		if err != nil {
			panic("batchtest: NewLane: " + err.Error())
		}
		return url
	}
	l := &Lane{Queue: q, Clock: clock, Ledger: replaytest.NewMemoryLedger(clock.Now), opts: o}
	l.Route = replay.Route{Name: base, Key: o.Key, PayloadHash: o.PayloadHash}
	l.Route.DLQURL = must(q.CreateQueue(base+"-dlq"+suffix, map[string]string{"MessageRetentionPeriod": "1209600"}))
	redrive, _ := json.Marshal(map[string]any{"deadLetterTargetArn": q.ARN(l.Route.DLQURL), "maxReceiveCount": o.MaxReceiveCount})
	l.Route.SourceURL = must(q.CreateQueue(name, map[string]string{
		"VisibilityTimeout": strconv.Itoa(int(o.Visibility / time.Second)), "RedrivePolicy": string(redrive),
		"MessageRetentionPeriod": strconv.Itoa(int(o.Retention / time.Second)),
	}))
	l.Route.ParkingURL = must(q.CreateQueue(base+"-parking"+suffix, map[string]string{"MessageRetentionPeriod": "1209600"}))
	l.InvalidURL = must(q.CreateQueue(base+"-invalid"+suffix, map[string]string{"MessageRetentionPeriod": "1209600"}))
	l.arn = q.ARN(l.Route.SourceURL)
	return l
}

// Invalid returns the lane's invalid queue as the consumer's
// batch.InvalidChannel, its verdicts signed by consumer.
func (l *Lane) Invalid(consumer string) *batch.InvalidQueue {
	return batch.NewInvalidQueue(l.Queue, l.InvalidURL, consumer, l.Clock.Now)
}

// Publish sends body to the source queue, as a producer does, and returns
// its message id. On a FIFO lane the message group is group[0] (default
// "g") and the deduplication id the body's.
func (l *Lane) Publish(ctx context.Context, body string, group ...string) (string, error) {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(l.Route.SourceURL), MessageBody: aws.String(body)}
	if settings.IsFIFO(l.Route.SourceURL) {
		g := "g"
		if len(group) > 0 {
			g = group[0]
		}
		sum := sha256.Sum256([]byte(body))
		in.MessageGroupId = aws.String(g)
		in.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
	}
	out, err := l.Queue.SendMessage(ctx, in)
	if err != nil {
		return "", fmt.Errorf("publish to %s: %w", l.Route.SourceURL, err)
	}
	return aws.ToString(out.MessageId), nil
}

// Poll is one poll of the event source mapping: it receives up to
// BatchSize visible records of the source queue, invokes consume with
// them, and deletes those it acknowledged. A consume error, or a batch
// item failure that names no record of the batch, fails the whole batch,
// as Lambda does; failed records stay until their visibility timeout
// ends. It returns the records delivered.
func (l *Lane) Poll(ctx context.Context, consume func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) (int, error) {
	out, err := l.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(l.Route.SourceURL), MaxNumberOfMessages: int32(l.opts.BatchSize),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil || len(out.Messages) == 0 {
		return 0, err
	}
	l.wake(l.opts.Visibility)
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
	receipts := map[string]string{}
	for i, m := range out.Messages {
		ev.Records[i] = l.record(m)
		receipts[ev.Records[i].MessageId] = ev.Records[i].ReceiptHandle
	}
	resp, err := consume(ctx, ev)
	if err != nil {
		return len(ev.Records), nil // the whole batch fails
	}
	for _, f := range resp.BatchItemFailures {
		if _, ok := receipts[f.ItemIdentifier]; !ok {
			return len(ev.Records), nil // Lambda fails the batch
		}
		delete(receipts, f.ItemIdentifier)
	}
	var entries []types.DeleteMessageBatchRequestEntry
	for _, r := range ev.Records {
		if h, ok := receipts[r.MessageId]; ok {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(entries))), ReceiptHandle: aws.String(h)})
		}
	}
	if len(entries) > 0 {
		del, err := l.Queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(l.Route.SourceURL), Entries: entries})
		if err != nil {
			return len(ev.Records), fmt.Errorf("delete acknowledged records: %w", err)
		}
		if len(del.Failed) > 0 {
			return len(ev.Records), fmt.Errorf("delete acknowledged records: %s", aws.ToString(del.Failed[0].Message))
		}
	}
	return len(ev.Records), nil
}

// record is m as the event source mapping hands it to Lambda.
func (l *Lane) record(m types.Message) events.SQSMessage {
	r := events.SQSMessage{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes,
		EventSource: "aws:sqs", EventSourceARN: l.arn, AWSRegion: "us-east-1",
	}
	if len(m.MessageAttributes) > 0 {
		r.MessageAttributes = make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for name, a := range m.MessageAttributes {
			r.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
	}
	return r
}

// ErrNotDrained is returned by [Lane.Drain] when the source queue still
// holds messages after every one could have been received
// MaxReceiveCount times and moved.
var ErrNotDrained = errors.New("batchtest: the source queue did not drain")

// Drain polls until the source queue is empty: whenever nothing is
// visible, it advances the clock to a second past the end of the first
// visibility it knows of (a poll's, or a hide through the queues of
// [Lane.Keeper]), so that a record the consumer keeps failing comes back
// until the redrive moves it to the DLQ after MaxReceiveCount receives, or
// the consumer parks it. It returns the first Poll error, or ErrNotDrained
// when the queue stops shrinking.
func (l *Lane) Drain(ctx context.Context, consume func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) error {
	left := len(l.Queue.Messages(l.Route.SourceURL))
	for waits := 0; ; {
		n, err := l.Poll(ctx, consume)
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		now := len(l.Queue.Messages(l.Route.SourceURL))
		if now == 0 {
			return nil
		}
		if now < left { // some left the queue: a long FIFO group drains a head at a time
			left = now
			waits = 0
		}
		if waits++; waits > 4*(l.opts.MaxReceiveCount+1) {
			return ErrNotDrained
		}
		l.Clock.Advance(l.nextWake())
	}
}

// wake notes that a source message hidden now comes back after d.
func (l *Lane) wake(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wakes = append(l.wakes, l.Clock.Now().Add(d))
}

// nextWake is how long until a second past the first visibility that has
// not ended; a visibility timeout and a second when none is known.
func (l *Lane) nextWake() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Clock.Now()
	l.wakes = slices.DeleteFunc(l.wakes, func(w time.Time) bool { return !w.After(now) })
	if len(l.wakes) == 0 {
		return l.opts.Visibility + time.Second
	}
	return slices.MinFunc(l.wakes, time.Time.Compare).Sub(now) + time.Second
}

// Keeper returns the group order of a consumer of the lane's FIFO source
// (batch.Options.Groups), its parks in s: the lane's queues, with the
// source's retention; a parked group waits for [Lane.Releaser]. Set its
// OnError to fifo.Skip (Store nil) for a lane that skips, and the lane's
// MaxReceiveCount above its MaxReceives, as the construct does.
func (l *Lane) Keeper(s fifo.Store) *fifo.Keeper {
	return &fifo.Keeper{Store: s, Queue: laneQueue{l}, SourceURL: l.Route.SourceURL, ParkingURL: l.Route.ParkingURL,
		Retention: l.opts.Retention}
}

// Releaser returns the operator's release of the lane's parked groups,
// whose parks are in s.
func (l *Lane) Releaser(s fifo.Store) *fifo.Releaser {
	return &fifo.Releaser{Store: s, Queue: laneQueue{l}, ParkingURL: l.Route.ParkingURL, SourceURL: l.Route.SourceURL, Now: l.Clock.Now}
}

// laneQueue is the lane's queues as a consumer and a release call them:
// Drain learns when a source message they hide comes back.
type laneQueue struct{ l *Lane }

var (
	_ fifo.Queue        = laneQueue{}
	_ fifo.ReleaseQueue = laneQueue{}
)

func (q laneQueue) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return q.l.Queue.SendMessage(ctx, in)
}

func (q laneQueue) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return q.l.Queue.ReceiveMessage(ctx, in)
}

func (q laneQueue) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	out, err := q.l.Queue.ChangeMessageVisibility(ctx, in)
	if err == nil && aws.ToString(in.QueueUrl) == q.l.Route.SourceURL {
		q.l.wake(time.Duration(in.VisibilityTimeout) * time.Second)
	}
	return out, err
}

func (q laneQueue) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	out, err := q.l.Queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: in.QueueUrl,
		Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("single"), ReceiptHandle: in.ReceiptHandle}}})
	if err != nil {
		return nil, err
	}
	if len(out.Failed) > 0 {
		return nil, fmt.Errorf("delete: %s: %s", aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// Replay runs the replay engine once over the lane's DLQ, with opts on the
// lane's ledger and clock (its Now and Sleep; a nil Logger discards), and
// returns the run's summary.
func (l *Lane) Replay(ctx context.Context, opts replay.Options) (replay.Summary, error) {
	opts.Now = l.Clock.Now
	opts.Sleep = l.Clock.Sleep
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return replay.New(l.Queue, l.Ledger, opts).Run(ctx, replay.Request{Routes: []replay.Route{l.Route}})
}
