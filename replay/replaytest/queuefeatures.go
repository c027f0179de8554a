package replaytest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueFeatures declares which of SQS's documented behaviours an
// implementation has, as watermill's tests.Features do: [RunQueue] checks
// the declared ones and skips the others, naming the declaration, and
// [RunQueueGaps] fails when an implementation shows a behaviour it declares
// absent, so a declaration cannot outlive its gap.
type QueueFeatures struct {
	// AttributeLimit: a message with more than ten message attributes is
	// refused (SQS developer guide, message attributes: "up to 10").
	AttributeLimit bool
	// EmptyVisibilityBatchRefused: ChangeMessageVisibilityBatch without
	// entries fails with EmptyBatchRequest, as every batch call does (API
	// reference, ChangeMessageVisibilityBatch errors).
	EmptyVisibilityBatchRefused bool
	// DeleteAgainSucceeds: deleting with a receipt handle whose message is
	// already deleted succeeds (API reference, DeleteMessage: with a receipt
	// handle other than the latest "the request will still succeed"). A
	// delete the SDK retries after its answer was lost meets this case.
	DeleteAgainSucceeds bool
	// DeadLetterSourceARN: a message moved to a DLQ carries the source
	// queue's ARN in its DeadLetterQueueSourceArn system attribute (API
	// reference, ReceiveMessage, MessageSystemAttributeNames).
	DeadLetterSourceARN bool
	// ListDeadLetterSources: ListDeadLetterSourceQueues names the queues
	// whose RedrivePolicy targets a DLQ (API reference); the Queue must
	// implement [DeadLetterSourceLister].
	ListDeadLetterSources bool
	// DeduplicationAfterDelete: a FIFO message sent with the deduplication
	// id of one sent within 5 minutes is accepted but not delivered, also
	// when the first was received and deleted meanwhile (developer guide,
	// FIFO key terms: SQS "continues tracking the deduplication ID even
	// after the message has been received and deleted"). The engine's
	// replay after a crash between send and delete relies on it.
	DeduplicationAfterDelete bool
}

// SQSFeatures is what Amazon SQS documents: every feature.
func SQSFeatures() QueueFeatures {
	return QueueFeatures{
		AttributeLimit:              true,
		EmptyVisibilityBatchRefused: true,
		DeleteAgainSucceeds:         true,
		DeadLetterSourceARN:         true,
		ListDeadLetterSources:       true,
		DeduplicationAfterDelete:    true,
	}
}

// queueFeature is one declarable behaviour and the check that shows it.
type queueFeature struct {
	name     string
	declared func(QueueFeatures) bool
	// check returns "" when the implementation behaves as documented, or
	// what it did instead.
	check func(t *testing.T, h QueueHarness) string
}

var queueFeatures = []queueFeature{
	{
		name:     "more than ten message attributes are refused",
		declared: func(f QueueFeatures) bool { return f.AttributeLimit },
		check: func(t *testing.T, h QueueHarness) string {
			url := h.NewQueue(t, "contract-attributes")
			attrs := map[string]types.MessageAttributeValue{}
			for i := range 11 {
				attrs[fmt.Sprintf("a%02d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
			}
			_, err := h.Queue.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), MessageAttributes: attrs})
			if err == nil {
				return "a message with 11 attributes was accepted"
			}
			return ""
		},
	},
	{
		name:     "a visibility batch without entries is refused",
		declared: func(f QueueFeatures) bool { return f.EmptyVisibilityBatchRefused },
		check: func(t *testing.T, h QueueHarness) string {
			url := h.NewQueue(t, "contract-empty-visibility")
			_, err := h.Queue.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{}})
			var empty *types.EmptyBatchRequest
			if !errors.As(err, &empty) {
				return fmt.Sprintf("ChangeMessageVisibilityBatch without entries answered err = %v", err)
			}
			return ""
		},
	},
	{
		name:     "deleting a deleted message again succeeds",
		declared: func(f QueueFeatures) bool { return f.DeleteAgainSucceeds },
		check: func(t *testing.T, h QueueHarness) string {
			ctx := context.Background()
			url := h.NewQueue(t, "contract-delete-again")
			if _, err := h.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
				t.Fatal(err)
			}
			var got []types.Message
			for range 3 {
				out, err := h.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1, VisibilityTimeout: 60, WaitTimeSeconds: 1})
				if err != nil {
					t.Fatal(err)
				}
				if got = out.Messages; len(got) == 1 {
					break
				}
			}
			if len(got) != 1 {
				t.Fatalf("received %d messages, want 1", len(got))
			}
			entries := []types.DeleteMessageBatchRequestEntry{{Id: aws.String("m"), ReceiptHandle: got[0].ReceiptHandle}}
			for i, what := range []string{"first", "second"} {
				out, err := h.Queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				switch {
				case err != nil && i == 0:
					t.Fatalf("first delete: %v", err)
				case err == nil && len(out.Failed) > 0 && i == 0:
					t.Fatalf("first delete failed: %s", aws.ToString(out.Failed[0].Code))
				case err != nil:
					return fmt.Sprintf("the %s delete answered err = %v", what, err)
				case len(out.Failed) > 0:
					return fmt.Sprintf("the %s delete failed with %s", what, aws.ToString(out.Failed[0].Code))
				}
			}
			return ""
		},
	},
	{
		name:     "a dead letter names its source queue",
		declared: func(f QueueFeatures) bool { return f.DeadLetterSourceARN },
		check:    checkDeadLetterSourceARN,
	},
	{
		name:     "ListDeadLetterSourceQueues names a DLQ's source",
		declared: func(f QueueFeatures) bool { return f.ListDeadLetterSources },
		check:    checkListDeadLetterSources,
	},
	{
		name:     "a FIFO duplicate is dropped within 5 minutes, also after the first was deleted",
		declared: func(f QueueFeatures) bool { return f.DeduplicationAfterDelete },
		check:    checkDeduplicationAfterDelete,
	},
}

// runDeclaredFeatures is RunQueue's part for the declarable behaviours.
func runDeclaredFeatures(t *testing.T, h QueueHarness) {
	for _, f := range queueFeatures {
		t.Run(f.name, func(t *testing.T) {
			if !f.declared(h.Features) {
				t.Skip("declared absent in QueueHarness.Features (RunQueueGaps checks the declaration)")
			}
			if got := f.check(t, h); got != "" {
				t.Fatal(got)
			}
		})
	}
}

// RunQueueGaps checks every behaviour h.Features declares absent: a
// subtest fails when the implementation now behaves as SQS documents,
// telling the reader to declare the feature (the gap is closed); it logs
// the gap otherwise. Run it as a TestEmulatorGap* test beside the
// declarations.
func RunQueueGaps(t *testing.T, h QueueHarness) {
	for _, f := range queueFeatures {
		if f.declared(h.Features) {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			got := f.check(t, h)
			if got == "" {
				t.Fatalf("the gap is closed: %q now holds; declare it in QueueHarness.Features (and drop this tripwire's case)", f.name)
			}
			t.Logf("gap still present: %s (documented: %s)", got, f.name)
		})
	}
}
