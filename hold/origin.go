package hold

import (
	"encoding/json"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// Attribute is the message attribute of the records the consumer sends to
// its own source queue: a held record sent back as its group's new head
// ({"origin":"<id>"}), or a drain trigger ({"drain":true}, body
// [TriggerBody]). The name is the toolkit's: a producer must not set it.
const Attribute = "homing-hold"

// TriggerBody is the body of a drain trigger.
const TriggerBody = "homing-hold: drain"

// seqWidth is the width [Seq] pads to: SQS sequence numbers are up to 128
// bits, 39 decimal digits.
const seqWidth = 40

type marker struct {
	Origin string `json:"origin,omitempty"`
	Drain  bool   `json:"drain,omitempty"`
}

// Origin is the original id of a record: the id its message had when the
// producer's copy was first received, whatever copies carried it since (a
// replay, a held record sent back). The head of a hold is named by it.
func Origin(r events.SQSMessage) string {
	return OriginOf(r.MessageId, Attributes(r.MessageAttributes))
}

// OriginOf is [Origin] of a message with id and attributes as the SQS API
// returns them (the replay engine's and dlq's view of a dead letter).
func OriginOf(id string, attrs map[string]types.MessageAttributeValue) string {
	var meta struct {
		OriginalMessageID string `json:"originalMessageId"`
	}
	producer := attrs
	if _, ok := attrs[envelope.ReplayAttributeName]; ok {
		p, _, err := envelope.Unpack(attrs, envelope.ReplayAttributeName, &meta)
		if err == nil {
			producer = p
		} else {
			meta.OriginalMessageID = ""
		}
	}
	if m, ok := markerOf(producer); ok && m.Origin != "" {
		return m.Origin
	}
	if meta.OriginalMessageID != "" {
		return meta.OriginalMessageID
	}
	return id
}

// IsTrigger reports whether r is a drain trigger: it carries no effect, and
// the consumer never hands it to the lane's handler.
func IsTrigger(r events.SQSMessage) bool {
	m, ok := markerOf(Attributes(r.MessageAttributes))
	return ok && m.Drain && r.Body == TriggerBody
}

func markerOf(attrs map[string]types.MessageAttributeValue) (marker, bool) {
	a, ok := attrs[Attribute]
	if !ok || a.StringValue == nil {
		return marker{}, false
	}
	var m marker
	if err := json.Unmarshal([]byte(*a.StringValue), &m); err != nil {
		return marker{}, false
	}
	return m, true
}

func markerAttribute(m marker) types.MessageAttributeValue {
	b, _ := json.Marshal(m) // a struct of a string and a bool
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(b))}
}

// Seq is the order key of a FIFO record: its SequenceNumber, zero-padded so
// that keys sort as the numbers do; "" when the record has none (it is not
// from a FIFO queue).
func Seq(r events.SQSMessage) string {
	n := r.Attributes["SequenceNumber"]
	if n == "" || len(n) > seqWidth || strings.Trim(n, "0123456789") != "" {
		return ""
	}
	return strings.Repeat("0", seqWidth-len(n)) + n
}

// Group is the MessageGroupId of a FIFO record ("" when it has none).
func Group(r events.SQSMessage) string { return r.Attributes["MessageGroupId"] }

// Attributes converts a record's message attributes to the SQS API's.
func Attributes(in map[string]events.SQSMessageAttribute) map[string]types.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(in))
	for name, a := range in {
		out[name] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue,
			BinaryValue: a.BinaryValue, StringListValues: a.StringListValues, BinaryListValues: a.BinaryListValues}
	}
	return out
}
