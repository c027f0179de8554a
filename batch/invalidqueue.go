package batch

import (
	"context"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/invalid"
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

// Publish sends msg with r to the invalid queue, in numbered parts when the
// body is too large to carry the verdict beside it (docs/PACKAGES.md#batch).
// It returns an error unless SQS accepted every message; the caller must then
// treat the record as not processed.
func (q *InvalidQueue) Publish(ctx context.Context, msg events.SQSMessage, r Rejection) error {
	meta := invalid.Metadata{
		Reason:      r.Reason,
		Detail:      r.Detail,
		SourceQueue: msg.EventSourceARN,
		MessageID:   msg.MessageId,
		Consumer:    q.consumer,
		At:          q.now().UTC(),
	}
	producer := MessageAttributes(msg.MessageAttributes)
	attrs, err := invalid.Stamp(producer, meta)
	if err != nil {
		return fmt.Errorf("publish %s to %s: %w", msg.MessageId, q.queueURL, err)
	}
	if envelope.MessageBytes(len(msg.Body), attrs) <= envelope.MaxMessageBytes {
		return q.send(ctx, msg, 0, msg.Body, attrs)
	}
	parts, err := split(msg.Body, producer, meta)
	if err != nil {
		return fmt.Errorf("publish %s to %s: %w", msg.MessageId, q.queueURL, err)
	}
	for i, p := range parts {
		if err := q.send(ctx, msg, i+1, p.body, p.attrs); err != nil {
			return err
		}
	}
	return nil
}

// send sends part (0: the whole message) of msg, body and attrs, to the
// invalid queue.
func (q *InvalidQueue) send(ctx context.Context, msg events.SQSMessage, part int, body string, attrs map[string]types.MessageAttributeValue) error {
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(q.queueURL),
		MessageBody:       aws.String(body),
		MessageAttributes: attrs,
	}
	if settings.IsFIFO(q.queueURL) {
		group := msg.Attributes["MessageGroupId"]
		if group == "" {
			group = q.consumer
		}
		in.MessageGroupId = aws.String(group)
		id := msg.MessageId
		if part > 0 {
			id += "\n" + strconv.Itoa(part) // an SQS message id has no newline
		}
		in.MessageDeduplicationId = aws.String(invalid.DeduplicationID(msg.EventSourceARN, id))
	}
	if _, err := q.sender.SendMessage(ctx, in); err != nil {
		if part > 0 {
			return fmt.Errorf("publish part %d of %s to %s: %w", part, msg.MessageId, q.queueURL, err)
		}
		return fmt.Errorf("publish %s to %s: %w", msg.MessageId, q.queueURL, err)
	}
	return nil
}

// part is one message of a body sent in parts.
type part struct {
	body  string
	attrs map[string]types.MessageAttributeValue
}

// split cuts body into the parts Publish sends, each within SQS's largest
// message beside its stamped verdict: the first with the producer's
// attributes, the others with the verdict alone. It fails when the
// producer's attributes leave the first part no room.
func split(body string, producer map[string]types.MessageAttributeValue, meta invalid.Metadata) ([]part, error) {
	stamp := func(i, n int) (map[string]types.MessageAttributeValue, error) {
		m := meta
		m.Part = i
		m.Parts = n
		if i > 1 {
			return invalid.Stamp(nil, m)
		}
		return invalid.Stamp(producer, m)
	}
	// Cut for n parts; the count's digits change the room a little, so
	// cut again when more were needed (fewer digits leave more room).
	for n := 2; ; {
		var bodies []string
		for i, rest := 1, body; rest != ""; i++ {
			attrs, err := stamp(i, n)
			if err != nil {
				return nil, err
			}
			room := envelope.MaxMessageBytes - envelope.MessageBytes(0, attrs)
			if room < utf8.UTFMax {
				return nil, fmt.Errorf("cut a body of %d bytes: %d bytes of attributes leave no room for it in part %d", len(body), envelope.MessageBytes(0, attrs), i)
			}
			end := min(room, len(rest))
			for end < len(rest) && end > 0 && !utf8.RuneStart(rest[end]) {
				end--
			}
			if end == 0 {
				end = min(room, len(rest)) // not UTF-8: cut where it fits
			}
			bodies = append(bodies, rest[:end])
			rest = rest[end:]
		}
		if len(bodies) > n {
			n = len(bodies)
			continue
		}
		parts := make([]part, len(bodies))
		for i, b := range bodies {
			attrs, err := stamp(i+1, len(bodies))
			if err != nil {
				return nil, err
			}
			parts[i] = part{body: b, attrs: attrs}
		}
		return parts, nil
	}
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
