package hold

import (
	"encoding/json"
	"strings"

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

// OriginOf is the original id of a message with id and attributes as the
// SQS API returns them: the name its group's hold knows it by. It is the
// origin [Attribute] names, which the consumer puts on a held record it
// sends back and the replay on a dead letter of a held group it sends
// back; otherwise the message's own id (a producer's message, and a dead
// letter, which keeps the id it had in the source). The replay's metadata
// is never read for it: a producer may copy or make up that metadata, and
// only the engine can check its seal (record.Origin is the same for a
// Lambda record).
func OriginOf(id string, attrs map[string]types.MessageAttributeValue) string {
	producer := attrs
	if _, ok := attrs[envelope.ReplayAttributeName]; ok {
		// The engine may have folded the producer's attributes, ours among
		// them, into its own (envelope.Pack).
		var meta struct{}
		if p, _, err := envelope.Unpack(attrs, envelope.ReplayAttributeName, &meta); err == nil {
			producer = p
		}
	}
	if m, ok := markerOf(producer); ok && m.Origin != "" {
		return m.Origin
	}
	return id
}

// IsTriggerOf reports whether a message of body and attrs is a drain
// trigger: it carries no effect, and the consumer never hands it to the
// lane's handler.
func IsTriggerOf(body string, attrs map[string]types.MessageAttributeValue) bool {
	m, ok := markerOf(attrs)
	return ok && m.Drain && body == TriggerBody
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

// OriginAttribute is [Attribute] naming origin: what the replay puts on a
// dead letter of a held group it sends back, so that the consumer knows the
// head by the name it gave it (the replay's own metadata names the message
// as the engine first saw it, and may be a producer's copy).
func OriginAttribute(origin string) types.MessageAttributeValue {
	return markerAttribute(marker{Origin: origin})
}

func markerAttribute(m marker) types.MessageAttributeValue {
	b, _ := json.Marshal(m) // a struct of a string and a bool
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(b))}
}

// PadSeq is the order key of a FIFO SequenceNumber: zero-padded so that
// keys sort as the numbers do; "" when n is not one.
func PadSeq(n string) string {
	if n == "" || len(n) > seqWidth || strings.Trim(n, "0123456789") != "" {
		return ""
	}
	return strings.Repeat("0", seqWidth-len(n)) + n
}
