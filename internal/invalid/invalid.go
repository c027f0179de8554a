package invalid

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/batch"
	"github.com/homingdlq/homing/internal/clip"
	"github.com/homingdlq/homing/internal/envelope"
)

// AttributeName is the message attribute that carries [Metadata]. A
// producer's attribute of this name is kept as data under
// envelope.Neutral(AttributeName, ...) ("homing-invalid.prev"), never decoded.
const AttributeName = envelope.InvalidAttributeName

// Bounds of the [Metadata] fields, in bytes before JSON escaping; a longer
// value is cut on a rune boundary and marked with "...". Even fully escaped
// (sixfold), the metadata stays within envelope.MaxMetadataBytes, so any
// message the source queue accepted fits the invalid queue.
const (
	MaxReasonBytes = 64
	MaxDetailBytes = 1024 // the tax service's 422 detail is cut at 512
	MaxNameBytes   = 512  // SourceQueue, MessageID, Consumer
)

// Metadata says why and where a message was declared invalid.
type Metadata struct {
	Reason      string    `json:"reason"`
	Detail      string    `json:"detail"`
	SourceQueue string    `json:"sourceQueue"` // ARN of the queue the record came from
	MessageID   string    `json:"messageId"`   // SQS message id of the record
	Consumer    string    `json:"consumer"`
	At          time.Time `json:"at"`
}

// Sender is the part of the SQS client the publisher uses.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Publisher sends invalid records to one queue. It implements
// batch.InvalidChannel and is safe for concurrent use.
type Publisher struct {
	sender   Sender
	queueURL string
	consumer string
	now      func() time.Time
}

// NewPublisher returns a Publisher to queueURL that signs its metadata with the
// consumer's name. now may be nil (time.Now).
func NewPublisher(s Sender, queueURL, consumer string, now func() time.Time) *Publisher {
	if now == nil {
		now = time.Now
	}
	return &Publisher{sender: s, queueURL: queueURL, consumer: consumer, now: now}
}

var _ batch.InvalidChannel = (*Publisher)(nil)

// Publish sends msg with r to the invalid queue. It returns an error, and the
// caller must then treat the record as not processed, unless SQS accepted the
// message.
func (p *Publisher) Publish(ctx context.Context, msg events.SQSMessage, r batch.Rejection) error {
	meta := Metadata{
		Reason:      clip.String(r.Reason, MaxReasonBytes),
		Detail:      clip.String(r.Detail, MaxDetailBytes),
		SourceQueue: clip.String(msg.EventSourceARN, MaxNameBytes),
		MessageID:   clip.String(msg.MessageId, MaxNameBytes),
		Consumer:    clip.String(p.consumer, MaxNameBytes),
		At:          p.now().UTC(),
	}
	attrs, err := envelope.Pack(neutralise(envelope.FromEvent(msg.MessageAttributes)), AttributeName, meta)
	if err != nil {
		return fmt.Errorf("publish %s to %s: %w", msg.MessageId, p.queueURL, err)
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(p.queueURL),
		MessageBody:       aws.String(msg.Body),
		MessageAttributes: attrs,
	}
	if batch.IsFIFO(p.queueURL) {
		group := msg.Attributes["MessageGroupId"]
		if group == "" {
			group = p.consumer
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(DeduplicationID(msg.EventSourceARN, msg.MessageId))
	}
	if _, err := p.sender.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("publish %s to %s: %w", msg.MessageId, p.queueURL, err)
	}
	return nil
}

// neutralise keeps a producer's attribute of our name as data under the
// neutral name: ours is ours, whatever a message arrives with (a verdict of
// an earlier publication sent back, or a forgery), and is never decoded.
func neutralise(attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	theirs, ok := attrs[AttributeName]
	if !ok {
		return attrs
	}
	delete(attrs, AttributeName)
	attrs[envelope.Neutral(AttributeName, attrs)] = theirs
	return attrs
}

// DeduplicationID is the FIFO deduplication id for a message forwarded from
// a queue: the same source message always gets the same id.
func DeduplicationID(sourceQueue, messageID string) string {
	sum := sha256.Sum256([]byte(sourceQueue + "\n" + messageID))
	return hex.EncodeToString(sum[:])
}

// Read returns the metadata of a message received from the invalid queue and
// the producer's attributes as they were before publishing. found is false
// when the message carries no metadata.
func Read(attrs map[string]types.MessageAttributeValue) (meta Metadata, producer map[string]types.MessageAttributeValue, found bool, err error) {
	producer, found, err = envelope.Unpack(attrs, AttributeName, &meta)
	if err != nil {
		return Metadata{}, nil, found, fmt.Errorf("read invalid-message metadata: %w", err)
	}
	return meta, producer, found, nil
}
