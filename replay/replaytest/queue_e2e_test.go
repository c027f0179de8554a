//go:build e2e

package replaytest_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// queueFeatures declares, by implementation name, what each lacks of SQS's
// documented behaviour; an implementation not named here (AWS) is held to
// all of it. TestEmulatorGapQueue keeps every declaration true. Where two
// disagree, localstack/README.md says which one AWS's documentation backs.
func queueFeatures(name string) replaytest.QueueFeatures {
	f := replaytest.SQSFeatures()
	switch name {
	case "ministack": // 1.5.33
		f.AttributeLimit = false        // 11 message attributes accepted
		f.DeleteAgainSucceeds = false   // ReceiptHandleIsInvalid
		f.ListDeadLetterSources = false // InvalidAction
	case "moto": // 5.2.5
		f.AttributeLimit = false              // 11 message attributes accepted
		f.EmptyVisibilityBatchRefused = false // an empty ChangeMessageVisibilityBatch succeeds
		f.DeadLetterSourceARN = false         // no DeadLetterQueueSourceArn on a dead letter
		f.DeduplicationAfterDelete = false    // a duplicate is delivered once the first is deleted
		// A head released before its successors waits for them, then comes
		// after them: messages of a group visible together come last first.
		f.FIFOInFlightSuccessorsLockTheGroup = false
	case "localstack": // localstack-core 2026.3.0, host mode
		f.AttributeLimit = false // 11 message attributes accepted
		// A released message (or one back from its timeout) reopens its
		// group while the group's other messages are still in flight.
		f.FIFOInFlightSuccessorsLockTheGroup = false
		// An in-flight message stays hidden, past its own timeout, until
		// every message received before it (any group) is back.
		f.FIFOOtherGroupsRetryOnTime = false
	}
	return f
}

func queueHarness(e emulatortest.Endpoint) replaytest.QueueHarness {
	q := sqs.NewFromConfig(e.Config)
	create := func(t *testing.T, name string, attrs map[string]string) (string, string) {
		t.Helper()
		suffix := ""
		if settings.IsFIFO(name) {
			name, suffix = name[:len(name)-len(".fifo")], ".fifo"
		}
		name = emulatortest.Name(t, name) + suffix
		if attrs == nil {
			return emulatortest.Queue(t, q, name)
		}
		return queueWithAttributes(t, q, name, attrs)
	}
	return replaytest.QueueHarness{
		Queue: q,
		NewQueue: func(t *testing.T, name string) string {
			url, _ := create(t, name, nil)
			return url
		},
		NewQueueWithAttributes: create,
		Features:               queueFeatures(e.Name),
	}
}

// queueWithAttributes is emulatortest.Queue with attributes.
func queueWithAttributes(t *testing.T, q *sqs.Client, name string, attrs map[string]string) (string, string) {
	t.Helper()
	ctx := context.Background()
	all := map[string]string{}
	for k, v := range attrs {
		all[k] = v
	}
	if settings.IsFIFO(name) {
		all["FifoQueue"] = "true"
	}
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: all})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = q.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	got, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("get ARN of %s: %v", name, err)
	}
	return url, got.Attributes["QueueArn"]
}

// TestQueueContractOnTheEmulator runs the queue contract, redrive and FIFO
// deduplication included, on every SQS implementation (ministack, moto,
// LocalStack in host mode).
func TestQueueContractOnTheEmulator(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.SQS, func(t *testing.T, e emulatortest.Endpoint) {
		replaytest.RunQueue(t, queueHarness(e))
	})
}

// Emulator gaps: each behaviour of SQS that queueFeatures declares absent
// for an implementation. A subtest fails when it starts behaving as
// documented: then change its declaration, and the contract checks it.
func TestEmulatorGapQueue(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.SQS, func(t *testing.T, e emulatortest.Endpoint) {
		replaytest.RunQueueGaps(t, queueHarness(e))
	})
}

// TestEngineReplaysARedriveOnEachQueue runs the replay engine on what SQS's
// own redrive left in the DLQ, on every SQS implementation (with the
// in-memory ledger, so that LocalStack's host mode, which has no DynamoDB,
// runs it too): a standard and a FIFO lane each get their dead letter back
// in the source queue, body, producer attribute and group kept, with the
// source message's id as the original id in our metadata.
func TestEngineReplaysARedriveOnEachQueue(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.SQS, func(t *testing.T, e emulatortest.Endpoint) {
		for _, suffix := range []string{"", ".fifo"} {
			t.Run("queue"+suffix, func(t *testing.T) {
				h := queueHarness(e)
				ctx := context.Background()
				q := h.Queue.(*sqs.Client)
				dlq, dlqARN := h.NewQueueWithAttributes(t, "engine-dlq"+suffix, nil)
				source, _ := h.NewQueueWithAttributes(t, "engine-src"+suffix, map[string]string{
					"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlqARN),
				})
				parking := h.NewQueue(t, "engine-park"+suffix)
				in := &sqs.SendMessageInput{QueueUrl: aws.String(source), MessageBody: aws.String(`{"orderId":"ORD-ENGINE"}`),
					MessageAttributes: map[string]sqstypes.MessageAttributeValue{"producer": {DataType: aws.String("String"), StringValue: aws.String("p")}}}
				if suffix != "" {
					in.MessageGroupId, in.MessageDeduplicationId = aws.String("g"), aws.String("engine-1")
				}
				sent, err := q.SendMessage(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				// The consumer fails it once; the next receive moves it (a
				// short poll of a busy emulator may come back empty first).
				received := 0
				for range 6 {
					out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(source), WaitTimeSeconds: 1})
					if err != nil {
						t.Fatal(err)
					}
					if len(out.Messages) == 0 && received > 0 {
						break
					}
					received += len(out.Messages)
					for _, m := range out.Messages {
						if _, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(source), ReceiptHandle: m.ReceiptHandle}); err != nil {
							t.Fatal(err)
						}
					}
				}
				engine := replay.New(q, replaytest.NewMemoryLedger(nil), replay.Options{
					Policy:         replay.Policy{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond},
					DecisionWindow: time.Second,
					Logger:         slog.New(slog.DiscardHandler),
				})
				s, err := engine.Run(ctx, replay.Request{Routes: []replay.Route{{Name: "orders", SourceURL: source, DLQURL: dlq, ParkingURL: parking}}})
				if err != nil {
					t.Fatal(err)
				}
				if s.Total.Examined != 1 || s.Total.Replayed != 1 || s.Total.Errors != 0 {
					t.Fatalf("counts = %+v, want 1 examined and replayed", s.Total)
				}
				back := emulatortest.Receive(t, q, source, "", 1)
				if len(back) != 1 {
					t.Fatalf("%d messages back in the source queue, want 1", len(back))
				}
				m := back[0]
				if m.Body != `{"orderId":"ORD-ENGINE"}` || aws.ToString(m.MessageAttributes["producer"].StringValue) != "p" {
					t.Fatalf("replayed message = %+v", m)
				}
				if suffix != "" && m.Attributes["MessageGroupId"] != "g" {
					t.Fatalf("MessageGroupId = %q, want g", m.Attributes["MessageGroupId"])
				}
				attrs := map[string]sqstypes.MessageAttributeValue{}
				for name, a := range m.MessageAttributes {
					attrs[name] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
				}
				meta, _, ok, err := replay.Read(attrs)
				if err != nil || !ok || meta.OriginalMessageID != aws.ToString(sent.MessageId) || meta.ReplayCount != 1 {
					t.Fatalf("metadata = %+v (ours %v, %v), want original id %s and count 1", meta, ok, err, aws.ToString(sent.MessageId))
				}
				if visible, inFlight, delayed := emulatortest.Depth(t, q, dlq); visible+inFlight+delayed != 0 {
					t.Fatalf("the DLQ still holds %d messages", visible+inFlight+delayed)
				}
			})
		}
	})
}
