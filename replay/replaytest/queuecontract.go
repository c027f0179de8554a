package replaytest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/suite"
	"github.com/homingdlq/homing/replay"
)

// SendQueue is a replay.Queue that can also send one message, as the SQS
// client and MemoryQueue can.
type SendQueue interface {
	replay.Queue
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// QueueHarness is what the queue contract needs of an SQS implementation.
type QueueHarness struct {
	Queue SendQueue
	// NewQueue creates a queue with default attributes, FIFO when name
	// ends in ".fifo", and returns its URL. The suite gives each test
	// names of its own (from t.Name()); a harness on a shared account may
	// make them unique to the run.
	NewQueue func(t *testing.T, name string) string
	// NewQueueWithAttributes creates a queue as NewQueue does, with attrs
	// (RedrivePolicy, ...) set, and returns its URL and ARN: the redrive
	// tests make their DLQs and source queues with it.
	NewQueueWithAttributes func(t *testing.T, name string, attrs map[string]string) (url, arn string)
	// Now and Sleep are the clock the FIFO lock tests wait on for visibility
	// timeouts of seconds to end (nil: the wall clock and a real sleep); a
	// MemoryQueue's harness passes the clock the queue runs on.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Features declares the documented behaviours the implementation has
	// ([SQSFeatures] for all of them); the zero value declares none.
	Features QueueFeatures
}

// queueRule is one rule of the queue contract, a test function of its own;
// queueRules lists them all.
type queueRule func(t *testing.T, h QueueHarness)

// queueRules returns the contract of the SQS behaviour the replay engine
// relies on, one test per rule, in the order [RunQueue] runs them: messages,
// visibility, batches and FIFO groups (the lock an in-flight message holds
// on its group, kept and released by visibility changes); redrive (receive counts, the move
// after maxReceiveCount keeping the message id, attributes and a standard
// queue's SentTimestamp, FIFO redrive); and the behaviours of
// [QueueFeatures], each skipped unless the harness declares it.
func queueRules() []queueRule {
	return []queueRule{
		testMessageComesBackAsSent,
		testReceivedMessageIsHiddenUntilReleased,
		testBatchCallsTakeOneToTenDistinctEntries,
		testFIFOGroupsComeInOrder,
		testFIFOInFlightHeadLocksItsGroup,
		testFIFOVisibilityChangeHoldsAndReleasesTheGroup,
		testFIFOGroupComesBackHeadFirst,
		testFIFOHeldHeadKeepsItsGroupLocked,
		testRedriveMovesAfterMaxReceiveCount,
		testFIFORedriveMovesTheGroupsHead,
		testMoreThanTenAttributesAreRefused,
		testEmptyVisibilityBatchIsRefused,
		testDeleteAgainSucceeds,
		testDeadLetterNamesItsSource,
		testListDeadLetterSourceQueues,
		testDeduplicationAfterDelete,
		testFIFOInFlightSuccessorsLockTheGroup,
		testFIFOOtherGroupsRetryOnTime,
	}
}

// RunQueue runs every test of queueRules against h as a subtest named
// after its function (go test -run 'QueueContract/TestFIFOGroupsComeInOrder'),
// so that MemoryQueue is held to what the emulators (and AWS) do.
func RunQueue(t *testing.T, h QueueHarness) {
	t.Helper()
	suite.Run(t, h, queueRules())
}

// queueClient is what the tests do with a QueueHarness's Queue.
type queueClient struct {
	q SendQueue
}

// send sends body to url, in group with deduplication id dedup when group
// is not empty, and returns the message id.
func (c queueClient) send(t *testing.T, url, body, group, dedup string, attrs map[string]types.MessageAttributeValue) string {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}
	if group != "" {
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(dedup)
	}
	out, err := c.q.SendMessage(t.Context(), in)
	if err != nil {
		t.Fatalf("send %s: %v", body, err)
	}
	return aws.ToString(out.MessageId)
}

// receive receives up to n messages with every attribute, hidden for 60 s.
func (c queueClient) receive(t *testing.T, url string, n int32) []types.Message {
	t.Helper()
	out, err := c.q.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: n, VisibilityTimeout: 60, WaitTimeSeconds: 1,
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("receive from %s: %v", url, err)
	}
	return out.Messages
}

// receiveN receives until it has want messages, trying a few times: a short
// poll (and a busy emulator) may come back with fewer.
func (c queueClient) receiveN(t *testing.T, url string, n int32, want int) []types.Message {
	t.Helper()
	var got []types.Message
	for range 3 {
		got = append(got, c.receive(t, url, n)...)
		if len(got) >= want {
			break
		}
	}
	return got
}

// release makes a received message visible again at once, as a consumer
// that fails it does (the event source mapping leaves it to its visibility
// timeout; a release is the same receive, sooner).
func (c queueClient) release(t *testing.T, url string, m types.Message) {
	t.Helper()
	if _, err := c.q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatalf("release %s: %v", aws.ToString(m.MessageId), err)
	}
}

func (c queueClient) delete(t *testing.T, url string, m types.Message) {
	t.Helper()
	out, err := c.q.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("d"), ReceiptHandle: m.ReceiptHandle}}})
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("delete %s: %+v, %v", aws.ToString(m.MessageId), out, err)
	}
}

func bodies(msgs []types.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = aws.ToString(m.Body)
	}
	return out
}

// testMessageComesBackAsSent: a received message has the id, body and
// message attributes it was sent with, a receipt handle, a receive count
// of 1 and its timestamps.
func testMessageComesBackAsSent(t *testing.T, h QueueHarness) {
	c := queueClient{q: h.Queue}
	url := h.NewQueue(t, queueName(t, "q"))
	attrs := map[string]types.MessageAttributeValue{
		"s": {DataType: aws.String("String"), StringValue: aws.String("v")},
		"n": {DataType: aws.String("Number"), StringValue: aws.String("42")},
		"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 0xff}},
	}
	id := c.send(t, url, `{"orderId":"ORD-1"}`, "", "", attrs)
	got := c.receiveN(t, url, 10, 1)
	if len(got) != 1 {
		t.Fatalf("received %d messages", len(got))
	}
	m := got[0]
	if aws.ToString(m.MessageId) != id || aws.ToString(m.Body) != `{"orderId":"ORD-1"}` || aws.ToString(m.ReceiptHandle) == "" {
		t.Fatalf("message = %+v", m)
	}
	for name, want := range attrs {
		a := m.MessageAttributes[name]
		if aws.ToString(a.DataType) != aws.ToString(want.DataType) || aws.ToString(a.StringValue) != aws.ToString(want.StringValue) || string(a.BinaryValue) != string(want.BinaryValue) {
			t.Errorf("attribute %s = %+v", name, a)
		}
	}
	if m.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("ApproximateReceiveCount = %q", m.Attributes["ApproximateReceiveCount"])
	}
	for _, name := range []string{"SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
		if ms, err := strconv.ParseInt(m.Attributes[name], 10, 64); err != nil || ms <= 0 {
			t.Errorf("%s = %q", name, m.Attributes[name])
		}
	}
}

// testReceivedMessageIsHiddenUntilReleased: a received message is hidden
// (the queue's attributes count it in flight) until a visibility change
// releases it; a visibility batch answers per entry.
func testReceivedMessageIsHiddenUntilReleased(t *testing.T, h QueueHarness) {
	c := queueClient{q: h.Queue}
	ctx := t.Context()
	url := h.NewQueue(t, queueName(t, "q"))
	c.send(t, url, "a", "", "", nil)
	c.send(t, url, "b", "", "", nil)
	got := c.receiveN(t, url, 10, 2)
	if len(got) != 2 {
		t.Fatalf("received %d", len(got))
	}
	if again := c.receive(t, url, 10); len(again) != 0 {
		t.Fatalf("received %d hidden messages", len(again))
	}
	attrs, err := h.Queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameMessageRetentionPeriod,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if a := attrs.Attributes; a["ApproximateNumberOfMessages"] != "0" || a["ApproximateNumberOfMessagesNotVisible"] != "2" || a["MessageRetentionPeriod"] != "345600" {
		t.Fatalf("attributes = %v", a)
	}
	if _, err := h.Queue.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	out, err := h.Queue.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("b"), ReceiptHandle: got[1].ReceiptHandle, VisibilityTimeout: 0},
		{Id: aws.String("bogus"), ReceiptHandle: aws.String("not-a-receipt-handle"), VisibilityTimeout: 0},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 1 || aws.ToString(out.Successful[0].Id) != "b" || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "bogus" {
		t.Fatalf("batch answer = %+v", out)
	}
	again := c.receiveN(t, url, 10, 2)
	if len(again) != 2 || again[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after release: %v", again)
	}
}

// testBatchCallsTakeOneToTenDistinctEntries: a batch call of 11 entries,
// of repeated ids or of none fails as SQS does; one of 10 succeeds, and a
// delete batch answers per entry.
func testBatchCallsTakeOneToTenDistinctEntries(t *testing.T, h QueueHarness) {
	c := queueClient{q: h.Queue}
	ctx := t.Context()
	url := h.NewQueue(t, queueName(t, "q"))
	entries := make([]types.SendMessageBatchRequestEntry, 11)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String("e" + strconv.Itoa(i)), MessageBody: aws.String("x")}
	}
	var tooMany *types.TooManyEntriesInBatchRequest
	if _, err := h.Queue.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); !errors.As(err, &tooMany) {
		t.Fatalf("11 entries: err = %v", err)
	}
	var notDistinct *types.BatchEntryIdsNotDistinct
	twice := []types.SendMessageBatchRequestEntry{entries[0], entries[0]}
	if _, err := h.Queue.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: twice}); !errors.As(err, &notDistinct) {
		t.Fatalf("repeated ids: err = %v", err)
	}
	var empty *types.EmptyBatchRequest
	if _, err := h.Queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{}}); !errors.As(err, &empty) {
		t.Fatalf("no entries: err = %v", err)
	}
	out, err := h.Queue.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries[:10]})
	if err != nil || len(out.Successful) != 10 {
		t.Fatalf("10 entries: %+v, %v", out, err)
	}
	got := c.receiveN(t, url, 10, 1)
	del := []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("ok"), ReceiptHandle: got[0].ReceiptHandle},
		{Id: aws.String("bad"), ReceiptHandle: aws.String("not-a-receipt-handle")},
	}
	dout, err := h.Queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
	if err != nil || len(dout.Successful) != 1 || aws.ToString(dout.Successful[0].Id) != "ok" || len(dout.Failed) != 1 || aws.ToString(dout.Failed[0].Id) != "bad" {
		t.Fatalf("delete answer = %+v, %v", dout, err)
	}
}

// testFIFOGroupsComeInOrder: a FIFO queue delivers a group in order, holds
// it while a message of it is in flight, delivers other groups meanwhile,
// and drops a duplicate sent within 5 minutes.
func testFIFOGroupsComeInOrder(t *testing.T, h QueueHarness) {
	c := queueClient{q: h.Queue}
	url := h.NewQueue(t, queueName(t, "q.fifo"))
	c.send(t, url, "g1-a", "g1", "g1-a", nil)
	c.send(t, url, "g1-b", "g1", "g1-b", nil)
	c.send(t, url, "g2-a", "g2", "g2-a", nil)
	c.send(t, url, "g1-a", "g1", "g1-a", nil) // the same deduplication id within 5 minutes: dropped
	first := c.receiveN(t, url, 1, 1)
	if got := bodies(first); len(got) != 1 || got[0] != "g1-a" {
		t.Fatalf("first receive = %v", got)
	}
	if first[0].Attributes["MessageGroupId"] != "g1" {
		t.Fatalf("MessageGroupId = %q", first[0].Attributes["MessageGroupId"])
	}
	if got := bodies(c.receiveN(t, url, 10, 1)); len(got) != 1 || got[0] != "g2-a" {
		t.Fatalf("while g1-a is in flight: %v, want only g2-a", got)
	}
	if _, err := h.Queue.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("a"), ReceiptHandle: first[0].ReceiptHandle}}}); err != nil {
		t.Fatal(err)
	}
	if got := bodies(c.receiveN(t, url, 10, 1)); len(got) != 1 || got[0] != "g1-b" {
		t.Fatalf("after deleting g1-a: %v, want g1-b (and the duplicate dropped)", got)
	}
}
