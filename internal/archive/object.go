package archive

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/payload"
	"github.com/homingdlq/homing/replay"
)

// Version is the version of the [Object] format this package writes.
const Version = 1

// The queue roles an object comes from.
const (
	Parking = "parking"
	Invalid = "invalid"
)

// Object is one archived message. Its size is bounded by SQS's: the body
// and the attributes are the message's own (at most 1 MiB), the rest is
// metadata of bounded fields.
type Object struct {
	Version   int    `json:"version"`
	Lane      string `json:"lane"`
	Queue     string `json:"queue"` // Parking or Invalid
	QueueURL  string `json:"queueUrl"`
	MessageID string `json:"messageId"` // the message's id in Queue
	// Key is the business key the lane's key expression finds in the body
	// ("" when none).
	Key  string `json:"key,omitempty"`
	Body string `json:"body"`
	// Attributes are the message attributes as received, ours included, so
	// that a restore sends the message as it was.
	Attributes map[string]Attribute `json:"attributes,omitempty"`
	// System holds the SQS system attributes of the message (SentTimestamp,
	// ApproximateReceiveCount, MessageGroupId, SequenceNumber, ...).
	System map[string]string `json:"system,omitempty"`
	// Reason is why the message is where it was: the park reason or the
	// invalid verdict's reason.
	Reason string `json:"reason,omitempty"`
	// Replay is the engine's metadata, when it carries metadata the
	// engine sealed (Queue.Verifier).
	Replay *replay.Metadata `json:"replay,omitempty"`
	// Invalid is the consumer's verdict, on the invalid queue's messages.
	Invalid *invalid.Metadata `json:"invalid,omitempty"`
	// Failure is the consumer's failure record of the original message,
	// when one was found.
	Failure    *Failure  `json:"failure,omitempty"`
	SentAt     time.Time `json:"sentAt"`
	ArchivedAt time.Time `json:"archivedAt"`
}

// Attribute is one message attribute.
type Attribute struct {
	DataType    string  `json:"dataType"`
	StringValue *string `json:"stringValue,omitempty"`
	BinaryValue []byte  `json:"binaryValue,omitempty"`
}

// Failure is a consumer's failure record (docs/CONTRACT.md#failure-records).
type Failure struct {
	Class    string    `json:"class"`
	Message  string    `json:"message"`
	Failures int       `json:"failures"`
	FirstAt  time.Time `json:"firstAt"`
	LastAt   time.Time `json:"lastAt"`
}

// MessageAttributes returns the attributes as SQS takes them.
func (o Object) MessageAttributes() map[string]types.MessageAttributeValue {
	if len(o.Attributes) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(o.Attributes))
	for name, a := range o.Attributes {
		out[name] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	return out
}

// OriginalMessageID is the id under which the consumer first saw the
// message: the replay metadata's or the invalid verdict's, else MessageID.
func (o Object) OriginalMessageID() string {
	switch {
	case o.Replay != nil && o.Replay.OriginalMessageID != "":
		return o.Replay.OriginalMessageID
	case o.Invalid != nil && o.Invalid.MessageID != "":
		return o.Invalid.MessageID
	}
	return o.MessageID
}

// newObject is m of queue as archived at now; key finds its business key.
func newObject(lane string, q Queue, m types.Message, key payload.Key, now time.Time) Object {
	o := Object{
		Version:    Version,
		Lane:       lane,
		Queue:      q.Role,
		QueueURL:   q.URL,
		MessageID:  aws.ToString(m.MessageId),
		Body:       aws.ToString(m.Body),
		ArchivedAt: now.UTC(),
		SentAt:     sentAt(m),
	}
	if k, ok := key.Of([]byte(o.Body)); ok {
		o.Key = k
	}
	if len(m.MessageAttributes) > 0 {
		o.Attributes = make(map[string]Attribute, len(m.MessageAttributes))
		for name, a := range m.MessageAttributes {
			o.Attributes[name] = Attribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
	}
	if len(m.Attributes) > 0 {
		o.System = m.Attributes
	}
	// Only what the engine sealed is our metadata, and only the invalid
	// queue's verdict the consumer's: anything else is the producer's,
	// kept in Attributes and never taken as a reason or an original id.
	if verified, _ := q.Verifier.Check(m); verified {
		if meta, _, _, err := replay.Read(m.MessageAttributes); err == nil {
			o.Replay = &meta
			o.Reason = meta.Reason
		}
	}
	if q.Role == Invalid {
		if meta, _, found, err := invalid.Read(m.MessageAttributes); found && err == nil {
			o.Invalid = &meta
			o.Reason = meta.Reason
		}
	}
	return o
}

// withFailure adds f, a failure record of the original message.
func (o *Object) withFailure(f batch.Failure) {
	o.Failure = &Failure{Class: f.Class, Message: f.Message, Failures: f.Failures, FirstAt: f.FirstAt, LastAt: f.LastAt}
}

// sentAt is m's SentTimestamp, the zero time when it has none.
func sentAt(m types.Message) time.Time {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
