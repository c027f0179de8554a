// Package record is package hold's side of a Lambda SQS record
// (events.SQSMessage): its original id, its order key, its group, whether
// it is a drain trigger, and a held record's encoding. It is apart from
// hold so that the replay engine, which speaks the SQS API's types, does
// not depend on Lambda's.
package record

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/hold"
)

// Origin is the original id of a record (hold.OriginOf): the id its
// message had when the producer's copy was first received, whatever copies
// carried it since. The head of a hold is named by it.
func Origin(r events.SQSMessage) string {
	return hold.OriginOf(r.MessageId, Attributes(r.MessageAttributes))
}

// IsTrigger reports whether r is a drain trigger (hold.IsTriggerOf).
func IsTrigger(r events.SQSMessage) bool {
	return hold.IsTriggerOf(r.Body, Attributes(r.MessageAttributes))
}

// Seq is the order key of a FIFO record: its SequenceNumber, zero-padded
// (hold.PadSeq); "" when it has none (it is not from a FIFO queue).
func Seq(r events.SQSMessage) string { return hold.PadSeq(r.Attributes["SequenceNumber"]) }

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

// Held is r as a hold keeps it: its order key, and r as JSON without its
// receipt handle.
func Held(r events.SQSMessage) (hold.Message, error) {
	r.ReceiptHandle = ""
	b, err := json.Marshal(r)
	if err != nil {
		return hold.Message{}, fmt.Errorf("record: encode %s: %w", r.MessageId, err)
	}
	return hold.Message{Seq: Seq(r), Record: b}, nil
}

// Of is the record a held message keeps.
func Of(m hold.Message) (events.SQSMessage, error) {
	var r events.SQSMessage
	if err := json.Unmarshal(m.Record, &r); err != nil {
		return events.SQSMessage{}, fmt.Errorf("record: decode the held record %s: %w", m.Seq, err)
	}
	return r, nil
}

// SendBack sends r, held as seq in h, back to its source queue as its
// group's head (hold.Keeper.SendBack).
func SendBack(ctx context.Context, k *hold.Keeper, h hold.Hold, r events.SQSMessage, seq string) error {
	return k.SendBack(ctx, h, r.Body, Attributes(r.MessageAttributes), Origin(r), seq)
}
