package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MaxAttributes is SQS's limit of message attributes per message.
const MaxAttributes = 10

// ErrNameTaken is returned by [Pack] when the producer already uses the name
// of our metadata attribute.
var ErrNameTaken = errors.New("envelope: attribute name already used by the producer")

// Attribute is the JSON form of one folded producer attribute.
type Attribute struct {
	DataType    string  `json:"t"`
	StringValue *string `json:"s,omitempty"`
	BinaryValue []byte  `json:"b,omitempty"`
}

type document struct {
	Meta     json.RawMessage      `json:"meta"`
	Overflow map[string]Attribute `json:"overflow,omitempty"`
}

// FromEvent converts the attributes of a Lambda SQS record to the SDK's form.
// List values are not supported by SQS and are dropped by it already.
func FromEvent(in map[string]events.SQSMessageAttribute) map[string]types.MessageAttributeValue {
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

// Pack returns the attributes to send: the producer's, plus one String
// attribute called name that holds meta as JSON. At most [MaxAttributes] are
// returned; producer attributes that do not fit are folded into ours. The
// producer map is not modified.
func Pack(producer map[string]types.MessageAttributeValue, name string, meta any) (map[string]types.MessageAttributeValue, error) {
	if _, ok := producer[name]; ok {
		return nil, fmt.Errorf("pack %q: %w", name, ErrNameTaken)
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("pack %q: encode metadata: %w", name, err)
	}
	doc := document{Meta: raw}
	out := make(map[string]types.MessageAttributeValue, min(len(producer)+1, MaxAttributes))
	names := make([]string, 0, len(producer))
	for n := range producer {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		a := producer[n]
		if i < MaxAttributes-1 {
			out[n] = a
			continue
		}
		if doc.Overflow == nil {
			doc.Overflow = make(map[string]Attribute)
		}
		doc.Overflow[n] = Attribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("pack %q: encode envelope: %w", name, err)
	}
	out[name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(body))}
	return out, nil
}

// Unpack is the inverse of [Pack]: it decodes our attribute called name into
// meta (when meta is not nil) and returns the producer's attributes with any
// folded ones restored. found is false, and producer is attrs without change,
// when the message carries no attribute called name.
func Unpack(attrs map[string]types.MessageAttributeValue, name string, meta any) (producer map[string]types.MessageAttributeValue, found bool, err error) {
	ours, ok := attrs[name]
	if !ok {
		return attrs, false, nil
	}
	var doc document
	if err := json.Unmarshal([]byte(aws.ToString(ours.StringValue)), &doc); err != nil {
		return nil, true, fmt.Errorf("unpack %q: %w", name, err)
	}
	if meta != nil {
		if err := json.Unmarshal(doc.Meta, meta); err != nil {
			return nil, true, fmt.Errorf("unpack %q: metadata: %w", name, err)
		}
	}
	producer = make(map[string]types.MessageAttributeValue, len(attrs)-1+len(doc.Overflow))
	for n, a := range attrs {
		if n != name {
			producer[n] = a
		}
	}
	for n, a := range doc.Overflow {
		producer[n] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	return producer, true, nil
}
