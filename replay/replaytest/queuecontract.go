package replaytest

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/replay"
)

// SendQueue is a replay.Queue that can also send one message, as the SQS
// client and MemoryQueue can.
type SendQueue interface {
	replay.Queue
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// QueueHarness is what RunQueue needs of an SQS implementation.
type QueueHarness struct {
	Queue SendQueue
	// NewQueue creates a queue with default attributes, FIFO when name
	// ends in ".fifo", and returns its URL.
	NewQueue func(t *testing.T, name string) string
	// NewQueueWithAttributes creates a queue as NewQueue does, with attrs
	// (RedrivePolicy, ...) set, and returns its URL and ARN: the redrive
	// rules make their DLQs and source queues with it.
	NewQueueWithAttributes func(t *testing.T, name string, attrs map[string]string) (url, arn string)
	// Features declares the documented behaviours the implementation has
	// ([SQSFeatures] for all of them); the zero value declares none.
	Features QueueFeatures
}

// RunQueue runs the contract of the SQS behaviour the replay engine relies
// on, so that MemoryQueue can be checked against the emulators (and AWS):
// one named subtest per rule, those of [QueueFeatures] only where
// h.Features declares them. Besides messages, visibility, batches and FIFO
// groups, the rules cover redrive (receive counts, the move after
// maxReceiveCount keeping the message id, attributes and a standard
// queue's SentTimestamp, FIFO redrive) and FIFO deduplication after a
// delete.
func RunQueue(t *testing.T, h QueueHarness) {
	ctx := context.Background()
	q := h.Queue
	send := func(t *testing.T, url, body, group string, attrs map[string]types.MessageAttributeValue) string {
		t.Helper()
		in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}
		if group != "" {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(group), aws.String(body)
		}
		out, err := q.SendMessage(ctx, in)
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		return aws.ToString(out.MessageId)
	}
	receive := func(t *testing.T, url string, n int32) []types.Message {
		t.Helper()
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: n, VisibilityTimeout: 60, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		return out.Messages
	}
	// receiveN receives until it has want messages, trying a few times: a
	// short poll of SQS (and a busy emulator) may come back with fewer.
	receiveN := func(t *testing.T, url string, n int32, want int) []types.Message {
		t.Helper()
		var got []types.Message
		for range 3 {
			got = append(got, receive(t, url, n)...)
			if len(got) >= want {
				break
			}
		}
		return got
	}

	t.Run("a message comes back as sent with its system attributes", func(t *testing.T) {
		url := h.NewQueue(t, "contract-roundtrip")
		attrs := map[string]types.MessageAttributeValue{
			"s": {DataType: aws.String("String"), StringValue: aws.String("v")},
			"n": {DataType: aws.String("Number"), StringValue: aws.String("42")},
			"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 0xff}},
		}
		id := send(t, url, `{"orderId":"ORD-1"}`, "", attrs)
		got := receiveN(t, url, 10, 1)
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
	})

	t.Run("a received message is hidden until released", func(t *testing.T) {
		url := h.NewQueue(t, "contract-visibility")
		send(t, url, "a", "", nil)
		send(t, url, "b", "", nil)
		got := receiveN(t, url, 10, 2)
		if len(got) != 2 {
			t.Fatalf("received %d", len(got))
		}
		if again := receive(t, url, 10); len(again) != 0 {
			t.Fatalf("received %d hidden messages", len(again))
		}
		attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameMessageRetentionPeriod,
		}})
		if err != nil {
			t.Fatal(err)
		}
		if a := attrs.Attributes; a["ApproximateNumberOfMessages"] != "0" || a["ApproximateNumberOfMessagesNotVisible"] != "2" || a["MessageRetentionPeriod"] != "345600" {
			t.Fatalf("attributes = %v", a)
		}
		if _, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
		out, err := q.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
			{Id: aws.String("b"), ReceiptHandle: got[1].ReceiptHandle, VisibilityTimeout: 0},
			{Id: aws.String("bogus"), ReceiptHandle: aws.String("not-a-receipt-handle"), VisibilityTimeout: 0},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Successful) != 1 || aws.ToString(out.Successful[0].Id) != "b" || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "bogus" {
			t.Fatalf("batch answer = %+v", out)
		}
		again := receiveN(t, url, 10, 2)
		if len(again) != 2 || again[0].Attributes["ApproximateReceiveCount"] != "2" {
			t.Fatalf("after release: %v", again)
		}
	})

	t.Run("batch calls take 1 to 10 distinct entries and answer per entry", func(t *testing.T) {
		url := h.NewQueue(t, "contract-batch")
		entries := make([]types.SendMessageBatchRequestEntry, 11)
		for i := range entries {
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String("e" + strconv.Itoa(i)), MessageBody: aws.String("x")}
		}
		var tooMany *types.TooManyEntriesInBatchRequest
		if _, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); !errors.As(err, &tooMany) {
			t.Fatalf("11 entries: err = %v", err)
		}
		var notDistinct *types.BatchEntryIdsNotDistinct
		twice := []types.SendMessageBatchRequestEntry{entries[0], entries[0]}
		if _, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: twice}); !errors.As(err, &notDistinct) {
			t.Fatalf("repeated ids: err = %v", err)
		}
		var empty *types.EmptyBatchRequest
		if _, err := q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{}}); !errors.As(err, &empty) {
			t.Fatalf("no entries: err = %v", err)
		}
		out, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries[:10]})
		if err != nil || len(out.Successful) != 10 {
			t.Fatalf("10 entries: %+v, %v", out, err)
		}
		got := receiveN(t, url, 10, 1)
		del := []types.DeleteMessageBatchRequestEntry{
			{Id: aws.String("ok"), ReceiptHandle: got[0].ReceiptHandle},
			{Id: aws.String("bad"), ReceiptHandle: aws.String("not-a-receipt-handle")},
		}
		dout, err := q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
		if err != nil || len(dout.Successful) != 1 || aws.ToString(dout.Successful[0].Id) != "ok" || len(dout.Failed) != 1 || aws.ToString(dout.Failed[0].Id) != "bad" {
			t.Fatalf("delete answer = %+v, %v", dout, err)
		}
	})

	t.Run("FIFO groups come in order and wait while a message is in flight", func(t *testing.T) {
		url := h.NewQueue(t, "contract-order.fifo")
		send(t, url, "g1-a", "g1", nil)
		send(t, url, "g1-b", "g1", nil)
		send(t, url, "g2-a", "g2", nil)
		send(t, url, "g1-a", "g1", nil) // the same deduplication id within 5 minutes: dropped
		first := receiveN(t, url, 1, 1)
		if got := bodies(first); len(got) != 1 || got[0] != "g1-a" {
			t.Fatalf("first receive = %v", got)
		}
		if first[0].Attributes["MessageGroupId"] != "g1" {
			t.Fatalf("MessageGroupId = %q", first[0].Attributes["MessageGroupId"])
		}
		if got := bodies(receiveN(t, url, 10, 1)); len(got) != 1 || got[0] != "g2-a" {
			t.Fatalf("while g1-a is in flight: %v, want only g2-a", got)
		}
		if _, err := q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("a"), ReceiptHandle: first[0].ReceiptHandle}}}); err != nil {
			t.Fatal(err)
		}
		if got := bodies(receiveN(t, url, 10, 1)); len(got) != 1 || got[0] != "g1-b" {
			t.Fatalf("after deleting g1-a: %v, want g1-b (and the duplicate dropped)", got)
		}
	})

	runRedrive(t, h)
	runDeclaredFeatures(t, h)
}
