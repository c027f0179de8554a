package batch_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/invalid"
)

type fakeSender struct {
	sent []*sqs.SendMessageInput
	err  error
}

func (s *fakeSender) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.sent = append(s.sent, in)
	return &sqs.SendMessageOutput{MessageId: aws.String("new-id")}, nil
}

var at = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func record(arn string, nAttrs int) events.SQSMessage {
	m := events.SQSMessage{MessageId: "m-1", Body: `{"orderId":"ORD-1"}`, EventSourceARN: arn, Attributes: map[string]string{}}
	if nAttrs > 0 {
		m.MessageAttributes = map[string]events.SQSMessageAttribute{}
	}
	for i := range nAttrs {
		m.MessageAttributes[fmt.Sprintf("p%02d", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(fmt.Sprint(i))}
	}
	return m
}

var rejection = batch.Rejection{Reason: "invalid-tax-id", Detail: "customer.taxId: check digits do not match"}

func TestPublish(t *testing.T) {
	for _, n := range []int{0, 3, 9, 10} {
		t.Run(fmt.Sprintf("%d producer attributes", n), func(t *testing.T) {
			s := &fakeSender{}
			p := batch.NewInvalidQueue(s, "https://sqs.local/000/orders-invalid", "invoice", func() time.Time { return at })
			msg := record("arn:aws:sqs:us-east-1:000:orders", n)
			if err := p.Publish(context.Background(), msg, rejection); err != nil {
				t.Fatal(err)
			}
			if len(s.sent) != 1 {
				t.Fatalf("sent %d messages", len(s.sent))
			}
			in := s.sent[0]
			if aws.ToString(in.MessageBody) != msg.Body || aws.ToString(in.QueueUrl) != "https://sqs.local/000/orders-invalid" {
				t.Fatalf("sent %+v", in)
			}
			if in.MessageGroupId != nil || in.MessageDeduplicationId != nil {
				t.Fatal("standard queue got FIFO fields")
			}
			if len(in.MessageAttributes) > envelope.MaxAttributes {
				t.Fatalf("%d attributes, SQS allows %d", len(in.MessageAttributes), envelope.MaxAttributes)
			}
			meta, producer, found, err := invalid.Read(in.MessageAttributes)
			if err != nil || !found {
				t.Fatalf("Read: found=%v err=%v", found, err)
			}
			want := invalid.Metadata{Reason: rejection.Reason, Detail: rejection.Detail, SourceQueue: msg.EventSourceARN, MessageID: "m-1", Consumer: "invoice", At: at}
			if meta != want {
				t.Fatalf("metadata = %+v, want %+v", meta, want)
			}
			if wantAttrs := batch.MessageAttributes(msg.MessageAttributes); !reflect.DeepEqual(producer, wantAttrs) && !(len(producer) == 0 && len(wantAttrs) == 0) {
				t.Fatalf("producer attributes = %v, want %v", producer, wantAttrs)
			}
		})
	}
}

func TestPublishFIFO(t *testing.T) {
	s := &fakeSender{}
	p := batch.NewInvalidQueue(s, "https://sqs.local/000/orders-invalid.fifo", "invoice", func() time.Time { return at })
	msg := record("arn:aws:sqs:us-east-1:000:orders.fifo", 1)
	msg.Attributes["MessageGroupId"] = "customer-42"
	for range 2 {
		if err := p.Publish(context.Background(), msg, rejection); err != nil {
			t.Fatal(err)
		}
	}
	a, b := s.sent[0], s.sent[1]
	if aws.ToString(a.MessageGroupId) != "customer-42" {
		t.Errorf("group = %q", aws.ToString(a.MessageGroupId))
	}
	if id := aws.ToString(a.MessageDeduplicationId); id == "" || id != aws.ToString(b.MessageDeduplicationId) {
		t.Errorf("deduplication ids %q and %q must be equal and set", id, aws.ToString(b.MessageDeduplicationId))
	}
	if invalid.DeduplicationID(msg.EventSourceARN, "m-2") == aws.ToString(a.MessageDeduplicationId) {
		t.Error("another message got the same deduplication id")
	}
}

func TestPublishFIFOFromStandardSource(t *testing.T) {
	s := &fakeSender{}
	p := batch.NewInvalidQueue(s, "https://sqs.local/000/orders-invalid.fifo", "invoice", nil)
	if err := p.Publish(context.Background(), record("arn:aws:sqs:us-east-1:000:orders", 0), rejection); err != nil {
		t.Fatal(err)
	}
	if aws.ToString(s.sent[0].MessageGroupId) != "invoice" {
		t.Errorf("group = %q, want the consumer name", aws.ToString(s.sent[0].MessageGroupId))
	}
}

func TestPublishError(t *testing.T) {
	cause := errors.New("throttled")
	p := batch.NewInvalidQueue(&fakeSender{err: cause}, "q", "invoice", nil)
	if err := p.Publish(context.Background(), record("arn", 0), rejection); !errors.Is(err, cause) {
		t.Fatalf("err = %v, want it to wrap the cause", err)
	}
}

// A message declared invalid before and sent back as it was published
// carries our attribute from its producer's side: it is kept as data under
// the neutral name, never decoded, and the new verdict is ours.
func TestPublishKeepsAnEarlierVerdictAsData(t *testing.T) {
	s := &fakeSender{}
	p := batch.NewInvalidQueue(s, "q", "invoice", func() time.Time { return at })
	msg := record("arn", 10)
	if err := p.Publish(context.Background(), msg, rejection); err != nil {
		t.Fatal(err)
	}
	again := record("arn", 0)
	again.MessageAttributes = map[string]events.SQSMessageAttribute{}
	for name, a := range s.sent[0].MessageAttributes {
		again.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	if err := p.Publish(context.Background(), again, batch.Rejection{Reason: "total-mismatch", Detail: "d"}); err != nil {
		t.Fatal(err)
	}
	meta, producer, _, err := invalid.Read(s.sent[1].MessageAttributes)
	if err != nil || meta.Reason != "total-mismatch" {
		t.Fatalf("meta = %+v, err = %v", meta, err)
	}
	prev, ok := producer[invalid.AttributeName+envelope.NeutralSuffix]
	if !ok || aws.ToString(prev.StringValue) != aws.ToString(s.sent[0].MessageAttributes[invalid.AttributeName].StringValue) {
		t.Fatalf("the earlier verdict is not kept as data: %v", producer)
	}
	if len(producer) != 10 {
		t.Fatalf("%d producer attributes, want the 9 native ones and the earlier verdict", len(producer))
	}
}

// Item 13: a producer's attribute of our name is data, never decoded: a
// malformed value must not block the invalid lane.
func TestPublishNeutralisesAProducerCopyOfOurName(t *testing.T) {
	for _, n := range []int{0, 9} {
		t.Run(fmt.Sprintf("%d other attributes", n), func(t *testing.T) {
			msg := record("arn", n)
			if msg.MessageAttributes == nil {
				msg.MessageAttributes = map[string]events.SQSMessageAttribute{}
			}
			msg.MessageAttributes[invalid.AttributeName] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("{not ours")}
			s := &fakeSender{}
			p := batch.NewInvalidQueue(s, "q", "invoice", nil)
			if err := p.Publish(context.Background(), msg, rejection); err != nil {
				t.Fatalf("err = %v, want the record published", err)
			}
			if len(s.sent[0].MessageAttributes) > envelope.MaxAttributes {
				t.Fatalf("%d attributes", len(s.sent[0].MessageAttributes))
			}
			meta, producer, found, err := invalid.Read(s.sent[0].MessageAttributes)
			if err != nil || !found || meta.Reason != rejection.Reason {
				t.Fatalf("meta=%+v found=%v err=%v", meta, found, err)
			}
			if v := producer[invalid.AttributeName+envelope.NeutralSuffix]; aws.ToString(v.StringValue) != "{not ours" {
				t.Fatalf("producer attributes = %v, want the copy kept as data", producer)
			}
		})
	}
}

// Item 12: every metadata field is bounded, so the metadata always fits the
// reserve the source queue keeps for it.
func TestPublishBoundsTheMetadata(t *testing.T) {
	msg := record(strings.Repeat("a", 5000), 0)
	msg.MessageId = strings.Repeat("m", 5000)
	s := &fakeSender{}
	p := batch.NewInvalidQueue(s, "q", strings.Repeat("c", 5000), nil)
	long := strings.Repeat("\u0001<\"", 10000)
	if err := p.Publish(context.Background(), msg, batch.Rejection{Reason: long, Detail: long}); err != nil {
		t.Fatal(err)
	}
	meta, _, _, err := invalid.Read(s.sent[0].MessageAttributes)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]struct {
		value string
		limit int
	}{
		"reason": {meta.Reason, invalid.MaxReasonBytes}, "detail": {meta.Detail, invalid.MaxDetailBytes},
		"sourceQueue": {meta.SourceQueue, invalid.MaxNameBytes}, "messageId": {meta.MessageID, invalid.MaxNameBytes},
		"consumer": {meta.Consumer, invalid.MaxNameBytes},
	} {
		if len(f.value) > f.limit+3 || f.value == "" {
			t.Errorf("%s is %d bytes, limit %d", name, len(f.value), f.limit)
		}
	}
}

func TestMessageAttributes(t *testing.T) {
	in := map[string]events.SQSMessageAttribute{
		"s": {DataType: "String", StringValue: aws.String("v")},
		"b": {DataType: "Binary", BinaryValue: []byte{1}},
	}
	got := batch.MessageAttributes(in)
	want := map[string]types.MessageAttributeValue{
		"s": {DataType: aws.String("String"), StringValue: aws.String("v")},
		"b": {DataType: aws.String("Binary"), BinaryValue: []byte{1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
