package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Queue is the part of the SQS client the engine uses.
type Queue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// maxBatch is SQS's limit of entries per batch call and messages per receive.
const maxBatch = 10

// inBatches calls call for items [0,n) in chunks of maxBatch, giving the
// entries the ids "m0".."m9", and returns the error of every item whose entry
// failed: the entry's own error, the call's error, or "missing" when the
// answer does not mention the entry. call returns the ids of the successful
// entries and the failed entries.
func inBatches(n int, call func(start int, ids []string) (ok []string, failed []types.BatchResultErrorEntry, err error)) map[int]error {
	errs := map[int]error{}
	for start := 0; start < n; start += maxBatch {
		ids := make([]string, min(maxBatch, n-start))
		for i := range ids {
			ids[i] = "m" + strconv.Itoa(i)
		}
		ok, failed, err := call(start, ids)
		if err != nil {
			for i := range ids {
				errs[start+i] = err
			}
			continue
		}
		pending := make(map[string]int, len(ids))
		for i, id := range ids {
			pending[id] = i
		}
		for _, id := range ok {
			delete(pending, id)
		}
		for _, f := range failed {
			if i, found := pending[aws.ToString(f.Id)]; found {
				errs[start+i] = fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
				delete(pending, aws.ToString(f.Id))
			}
		}
		for _, i := range pending {
			errs[start+i] = errors.New("entry missing from the batch answer")
		}
	}
	return errs
}

// successful returns the ids of the successful entries of a batch answer.
func successful[E any](entries []E, id func(E) *string) []string {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = aws.ToString(id(e))
	}
	return ids
}

// visibility is one visibility change: a message and its new timeout.
type visibility struct {
	id, receipt string
	seconds     int32
}

// changeVisibility applies changes to messages of queueURL: one
// ChangeMessageVisibility call for a single message, one
// ChangeMessageVisibilityBatch call per 10 otherwise. It returns the error of
// each message (by id) whose change failed.
func changeVisibility(ctx context.Context, q Queue, queueURL string, changes []visibility) map[string]error {
	failed := map[string]error{}
	if len(changes) == 1 {
		c := changes[0]
		_, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(c.receipt), VisibilityTimeout: c.seconds,
		})
		if err != nil {
			failed[c.id] = fmt.Errorf("change visibility of %s in %s: %w", c.id, queueURL, err)
		}
		return failed
	}
	errs := inBatches(len(changes), func(start int, ids []string) ([]string, []types.BatchResultErrorEntry, error) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(ids))
		for i, id := range ids {
			c := changes[start+i]
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String(c.receipt), VisibilityTimeout: c.seconds}
		}
		out, err := q.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if err != nil {
			return nil, nil, err
		}
		return successful(out.Successful, func(e types.ChangeMessageVisibilityBatchResultEntry) *string { return e.Id }), out.Failed, nil
	})
	for i, err := range errs {
		failed[changes[i].id] = fmt.Errorf("change visibility of %s in %s: %w", changes[i].id, queueURL, err)
	}
	return failed
}

// deleteMessages deletes messages from queueURL, 10 per DeleteMessageBatch
// call, and returns the error of each message (by id) not deleted.
func deleteMessages(ctx context.Context, q Queue, queueURL string, ids, receipts []string) map[string]error {
	errs := inBatches(len(ids), func(start int, keys []string) ([]string, []types.BatchResultErrorEntry, error) {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(keys))
		for i, k := range keys {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(k), ReceiptHandle: aws.String(receipts[start+i])}
		}
		out, err := q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if err != nil {
			return nil, nil, err
		}
		return successful(out.Successful, func(e types.DeleteMessageBatchResultEntry) *string { return e.Id }), out.Failed, nil
	})
	failed := make(map[string]error, len(errs))
	for i, err := range errs {
		failed[ids[i]] = fmt.Errorf("delete %s from %s: %w", ids[i], queueURL, err)
	}
	return failed
}
