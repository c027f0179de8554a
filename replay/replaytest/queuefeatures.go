package replaytest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/homingdlq/homing/internal/suite"
)

// QueueFeatures declares which of SQS's documented behaviours an
// implementation has, as watermill's tests.Features do: the test of each
// (testMoreThanTenAttributesAreRefused, ...) runs where the harness
// declares it and skips, naming the field, where it does not; and
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
	// FIFOInFlightSuccessorsLockTheGroup: a FIFO group's messages in flight
	// lock it also when they follow its visible head: a head received with
	// its successors and released before them is not delivered until they
	// are back, and then comes first, the rest in order (developer guide,
	// FIFO message ordering and visibility timeout: no message of a group
	// is returned while one of it is in flight). A head retried sooner than
	// the queue's VisibilityTimeout meets this case.
	FIFOInFlightSuccessorsLockTheGroup bool
	// FIFOOtherGroupsRetryOnTime: a FIFO message comes back when its own
	// visibility timeout ends, also while a message of another group,
	// received before it, stays hidden longer (developer guide, visibility
	// timeout). A group whose head waits hours must not delay the others.
	FIFOOtherGroupsRetryOnTime bool
}

// SQSFeatures is what Amazon SQS documents: every feature.
func SQSFeatures() QueueFeatures {
	return QueueFeatures{
		AttributeLimit:                     true,
		EmptyVisibilityBatchRefused:        true,
		DeleteAgainSucceeds:                true,
		DeadLetterSourceARN:                true,
		ListDeadLetterSources:              true,
		DeduplicationAfterDelete:           true,
		FIFOInFlightSuccessorsLockTheGroup: true,
		FIFOOtherGroupsRetryOnTime:         true,
	}
}

// queueFeature is one field of QueueFeatures and the check that shows the
// behaviour it declares.
type queueFeature struct {
	name     string // the QueueFeatures field
	declared func(QueueFeatures) bool
	// check returns "" when the implementation behaves as documented, or
	// what it did instead.
	check func(t *testing.T, h QueueHarness) string
}

// The features, one per field of QueueFeatures.
var (
	attributeLimit = queueFeature{
		name:     "AttributeLimit",
		declared: func(f QueueFeatures) bool { return f.AttributeLimit },
		check:    checkAttributeLimit,
	}
	emptyVisibilityBatchRefused = queueFeature{
		name:     "EmptyVisibilityBatchRefused",
		declared: func(f QueueFeatures) bool { return f.EmptyVisibilityBatchRefused },
		check:    checkEmptyVisibilityBatchRefused,
	}
	deleteAgainSucceeds = queueFeature{
		name:     "DeleteAgainSucceeds",
		declared: func(f QueueFeatures) bool { return f.DeleteAgainSucceeds },
		check:    checkDeleteAgainSucceeds,
	}
	deadLetterSourceARN = queueFeature{
		name:     "DeadLetterSourceARN",
		declared: func(f QueueFeatures) bool { return f.DeadLetterSourceARN },
		check:    checkDeadLetterSourceARN,
	}
	listDeadLetterSources = queueFeature{
		name:     "ListDeadLetterSources",
		declared: func(f QueueFeatures) bool { return f.ListDeadLetterSources },
		check:    checkListDeadLetterSources,
	}
	deduplicationAfterDelete = queueFeature{
		name:     "DeduplicationAfterDelete",
		declared: func(f QueueFeatures) bool { return f.DeduplicationAfterDelete },
		check:    checkDeduplicationAfterDelete,
	}
	fifoInFlightSuccessorsLockTheGroup = queueFeature{
		name:     "FIFOInFlightSuccessorsLockTheGroup",
		declared: func(f QueueFeatures) bool { return f.FIFOInFlightSuccessorsLockTheGroup },
		check:    checkFIFOInFlightSuccessorsLockTheGroup,
	}
	fifoOtherGroupsRetryOnTime = queueFeature{
		name:     "FIFOOtherGroupsRetryOnTime",
		declared: func(f QueueFeatures) bool { return f.FIFOOtherGroupsRetryOnTime },
		check:    checkFIFOOtherGroupsRetryOnTime,
	}
)

// queueFeatures returns every feature, in the order of QueueFeatures.
func queueFeatures() []queueFeature {
	return []queueFeature{attributeLimit, emptyVisibilityBatchRefused, deleteAgainSucceeds, deadLetterSourceARN, listDeadLetterSources, deduplicationAfterDelete,
		fifoInFlightSuccessorsLockTheGroup, fifoOtherGroupsRetryOnTime}
}

// test is the feature's test: skipped unless h declares the feature, failed
// when the implementation does not behave as documented.
func (f queueFeature) test(t *testing.T, h QueueHarness) {
	t.Helper()
	suite.Needs(t, f.declared(h.Features), f.name)
	if got := f.check(t, h); got != "" {
		t.Fatal(got)
	}
}

// testMoreThanTenAttributesAreRefused: a message with 11 message attributes
// is refused. It needs [QueueFeatures].AttributeLimit.
func testMoreThanTenAttributesAreRefused(t *testing.T, h QueueHarness) { attributeLimit.test(t, h) }

// testEmptyVisibilityBatchIsRefused: ChangeMessageVisibilityBatch without
// entries fails with EmptyBatchRequest. It needs
// [QueueFeatures].EmptyVisibilityBatchRefused.
func testEmptyVisibilityBatchIsRefused(t *testing.T, h QueueHarness) {
	emptyVisibilityBatchRefused.test(t, h)
}

// testDeleteAgainSucceeds: deleting a deleted message again succeeds. It
// needs [QueueFeatures].DeleteAgainSucceeds.
func testDeleteAgainSucceeds(t *testing.T, h QueueHarness) { deleteAgainSucceeds.test(t, h) }

// testDeadLetterNamesItsSource: a dead letter carries its source queue's
// ARN. It needs [QueueFeatures].DeadLetterSourceARN.
func testDeadLetterNamesItsSource(t *testing.T, h QueueHarness) { deadLetterSourceARN.test(t, h) }

// testListDeadLetterSourceQueues: ListDeadLetterSourceQueues names a DLQ's
// source. It needs [QueueFeatures].ListDeadLetterSources.
func testListDeadLetterSourceQueues(t *testing.T, h QueueHarness) { listDeadLetterSources.test(t, h) }

// testDeduplicationAfterDelete: a FIFO duplicate is dropped within 5
// minutes, also after the first was deleted. It needs
// [QueueFeatures].DeduplicationAfterDelete.
func testDeduplicationAfterDelete(t *testing.T, h QueueHarness) {
	deduplicationAfterDelete.test(t, h)
}

// testFIFOInFlightSuccessorsLockTheGroup: a head released before its
// successors received with it waits for them, then comes first. It needs
// [QueueFeatures].FIFOInFlightSuccessorsLockTheGroup.
func testFIFOInFlightSuccessorsLockTheGroup(t *testing.T, h QueueHarness) {
	fifoInFlightSuccessorsLockTheGroup.test(t, h)
}

// testFIFOOtherGroupsRetryOnTime: a group's message comes back on its own
// time while another group's head stays hidden longer. It needs
// [QueueFeatures].FIFOOtherGroupsRetryOnTime.
func testFIFOOtherGroupsRetryOnTime(t *testing.T, h QueueHarness) {
	fifoOtherGroupsRetryOnTime.test(t, h)
}

// RunQueueGaps checks every behaviour h.Features declares absent, as a
// subtest named after its QueueFeatures field: it fails when the
// implementation now behaves as SQS documents, telling the reader to
// declare the feature (the gap is closed); it logs the gap otherwise. Run
// it as a TestEmulatorGap* test beside the declarations.
func RunQueueGaps(t *testing.T, h QueueHarness) {
	t.Helper()
	for _, f := range queueFeatures() {
		if f.declared(h.Features) {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			got := f.check(t, h)
			if got == "" {
				t.Fatalf("the gap is closed: the implementation now has QueueFeatures.%s; declare it in QueueHarness.Features", f.name)
			}
			t.Logf("gap still present: %s (QueueFeatures.%s)", got, f.name)
		})
	}
}

// checkAttributeLimit is QueueFeatures.AttributeLimit's check.
func checkAttributeLimit(t *testing.T, h QueueHarness) string {
	url := h.NewQueue(t, queueName(t, "q"))
	attrs := map[string]types.MessageAttributeValue{}
	for i := range 11 {
		attrs[fmt.Sprintf("a%02d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	_, err := h.Queue.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), MessageAttributes: attrs})
	if err == nil {
		return "a message with 11 attributes was accepted"
	}
	return ""
}

// checkEmptyVisibilityBatchRefused is
// QueueFeatures.EmptyVisibilityBatchRefused's check.
func checkEmptyVisibilityBatchRefused(t *testing.T, h QueueHarness) string {
	url := h.NewQueue(t, queueName(t, "q"))
	_, err := h.Queue.ChangeMessageVisibilityBatch(t.Context(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{}})
	var empty *types.EmptyBatchRequest
	if !errors.As(err, &empty) {
		return fmt.Sprintf("ChangeMessageVisibilityBatch without entries answered err = %v", err)
	}
	return ""
}

// checkDeleteAgainSucceeds is QueueFeatures.DeleteAgainSucceeds's check.
func checkDeleteAgainSucceeds(t *testing.T, h QueueHarness) string {
	ctx := t.Context()
	url := h.NewQueue(t, queueName(t, "q"))
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
}
