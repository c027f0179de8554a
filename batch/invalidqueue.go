package batch

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/settings"
)

// Sender is the part of the SQS client an [InvalidQueue] uses.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// InvalidQueue is the [InvalidChannel] that sends rejected records to one SQS
// queue, body and producer attributes unchanged, the verdict packed by
// [invalid.Stamp]. It is safe for concurrent use.
//
// For a FIFO invalid queue the message keeps the source's MessageGroupId (or
// uses the consumer name when the source is a standard queue), and its
// deduplication id is [invalid.DeduplicationID] of the source queue and
// message id, so a record published twice (the acknowledgement after
// publishing lost) is stored once.
type InvalidQueue struct {
	sender   Sender
	queueURL string
	consumer string
	now      func() time.Time
}

// NewInvalidQueue returns an InvalidQueue to queueURL that signs its metadata
// with the consumer's name. now may be nil (time.Now). It panics with the
// message "batch: NewInvalidQueue: nil Sender" when s is nil, which would
// fail every publication.
func NewInvalidQueue(s Sender, queueURL, consumer string, now func() time.Time) *InvalidQueue {
	if s == nil {
		panic("batch: NewInvalidQueue: nil Sender")
	}
	if now == nil {
		now = time.Now
	}
	return &InvalidQueue{sender: s, queueURL: queueURL, consumer: consumer, now: now}
}

var _ InvalidChannel = (*InvalidQueue)(nil)

// Publish sends msg with r to the invalid queue. It returns an error, and the
// caller must then treat the record as not processed, unless SQS accepted the
// message.
func (q *InvalidQueue) Publish(ctx context.Context, msg events.SQSMessage, r Rejection) error {
	attrs, err := invalid.Stamp(MessageAttributes(msg.MessageAttributes), invalid.Metadata{
		Reason:      r.Reason,
		Detail:      r.Detail,
		SourceQueue: msg.EventSourceARN,
		MessageID:   msg.MessageId,
		Consumer:    q.consumer,
		At:          q.now().UTC(),
	})
	if err != nil {
		return fmt.Errorf("publish %s to %s: %w", msg.MessageId, q.queueURL, err)
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(q.queueURL),
		MessageBody:       aws.String(msg.Body),
		MessageAttributes: attrs,
	}
	if settings.IsFIFO(q.queueURL) {
		group := msg.Attributes["MessageGroupId"]
		if group == "" {
			group = q.consumer
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(invalid.DeduplicationID(msg.EventSourceARN, msg.MessageId))
	}
	if _, err := q.sender.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("publish %s to %s: %w", msg.MessageId, q.queueURL, err)
	}
	return nil
}

// MessageAttributes converts the attributes of a Lambda SQS record to the SDK's form.
// List values are not supported by SQS and are dropped by it already.
func MessageAttributes(in map[string]events.SQSMessageAttribute) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(in))
	for name, a := range in {
		out[name] = types.MessageAttributeValue{
			DataType:    aws.String(a.DataType),
			StringValue: a.StringValue,
			BinaryValue: a.BinaryValue,
		}
	}
	return out
}
