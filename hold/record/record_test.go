package record_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/record"
	"github.com/homingdlq/homing/internal/envelope"
)

func stringAttr(s string) events.SQSMessageAttribute {
	return events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(s)}
}

func replayed(t *testing.T, original string, producer map[string]types.MessageAttributeValue) map[string]events.SQSMessageAttribute {
	t.Helper()
	attrs, err := envelope.Pack(producer, envelope.ReplayAttributeName, map[string]any{"originalMessageId": original, "replayCount": 1})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]events.SQSMessageAttribute{}
	for name, a := range attrs {
		out[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	return out
}

func TestOrigin(t *testing.T) {
	marker := map[string]types.MessageAttributeValue{hold.Attribute: {DataType: aws.String("String"), StringValue: aws.String(`{"origin":"first"}`)}}
	for _, tc := range []struct {
		name  string
		attrs map[string]events.SQSMessageAttribute
		want  string
	}{
		{"a producer's record is its own origin", nil, "id-now"},
		{"a replay's metadata is not read (a producer may copy it)", replayed(t, "dead-lettered", nil), "id-now"},
		{"a held record sent back names its first id", map[string]events.SQSMessageAttribute{hold.Attribute: stringAttr(`{"origin":"first"}`)}, "first"},
		{"the hold marker wins over the replay's id", replayed(t, "sent-back-copy", marker), "first"},
		{"a marker that does not decode is ignored", map[string]events.SQSMessageAttribute{hold.Attribute: stringAttr(`{`)}, "id-now"},
		{"replay metadata that does not decode is ignored", map[string]events.SQSMessageAttribute{envelope.ReplayAttributeName: stringAttr(`not json`)}, "id-now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := record.Origin(events.SQSMessage{MessageId: "id-now", MessageAttributes: tc.attrs}); got != tc.want {
				t.Fatalf("Origin = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSeqSortsAsTheNumbers(t *testing.T) {
	seq := func(n string) string {
		return record.Seq(events.SQSMessage{Attributes: map[string]string{"SequenceNumber": n}})
	}
	if a, b := seq("9"), seq("18446744073709551616"); !(a < b) || len(a) != len(b) {
		t.Fatalf("Seq(9) = %q, Seq(2^64) = %q: want equal widths, in numeric order", a, b)
	}
	for _, bad := range []string{"", "12a", "-1", "1234567890123456789012345678901234567890123"} {
		if got := seq(bad); got != "" {
			t.Errorf("Seq(%q) = %q, want \"\"", bad, got)
		}
	}
}

func TestATriggerNeedsItsBodyAndItsMarker(t *testing.T) {
	drain := map[string]events.SQSMessageAttribute{hold.Attribute: stringAttr(`{"drain":true}`)}
	for _, tc := range []struct {
		msg  events.SQSMessage
		want bool
	}{
		{events.SQSMessage{Body: hold.TriggerBody, MessageAttributes: drain}, true},
		{events.SQSMessage{Body: `{"paymentId":"p1"}`, MessageAttributes: drain}, false},
		{events.SQSMessage{Body: hold.TriggerBody}, false},
		{events.SQSMessage{Body: hold.TriggerBody, MessageAttributes: map[string]events.SQSMessageAttribute{hold.Attribute: stringAttr(`{"origin":"x"}`)}}, false},
	} {
		if got := record.IsTrigger(tc.msg); got != tc.want {
			t.Errorf("IsTrigger(%q, %v) = %v, want %v", tc.msg.Body, tc.msg.MessageAttributes, got, tc.want)
		}
	}
}

func TestAHeldRecordRoundTrips(t *testing.T) {
	r := events.SQSMessage{MessageId: "m1", ReceiptHandle: "rh", Body: "b", Attributes: map[string]string{"SequenceNumber": "7", "MessageGroupId": "g"},
		MessageAttributes: map[string]events.SQSMessageAttribute{"a": stringAttr("v")}}
	m, err := record.Held(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := record.Of(m)
	if err != nil {
		t.Fatal(err)
	}
	r.ReceiptHandle = ""
	if m.Seq != hold.PadSeq("7") || back.Body != r.Body || back.MessageId != r.MessageId || record.Group(back) != "g" ||
		aws.ToString(back.MessageAttributes["a"].StringValue) != "v" || back.ReceiptHandle != "" {
		t.Fatalf("held %+v came back as %+v", r, back)
	}
	if _, err := record.Of(hold.Message{Seq: "1", Record: []byte("{")}); err == nil {
		t.Fatal("a held record that is not JSON decoded")
	}
}

func TestParseOnError(t *testing.T) {
	for in, want := range map[string]hold.OnError{"": hold.KeepHeld, "hold": hold.KeepHeld, "skip": hold.Skip} {
		if got, err := hold.ParseOnError(in); err != nil || got != want {
			t.Errorf("ParseOnError(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := hold.ParseOnError("off"); err == nil {
		t.Error(`ParseOnError("off") succeeded, want an error`)
	}
}
