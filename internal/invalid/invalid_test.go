package invalid_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/batch"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/invalid"
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
			p := invalid.NewPublisher(s, "https://sqs.local/000/orders-invalid", "invoice", func() time.Time { return at })
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
			if wantAttrs := envelope.FromEvent(msg.MessageAttributes); !reflect.DeepEqual(producer, wantAttrs) && !(len(producer) == 0 && len(wantAttrs) == 0) {
				t.Fatalf("producer attributes = %v, want %v", producer, wantAttrs)
			}
		})
	}
}

func TestPublishFIFO(t *testing.T) {
	s := &fakeSender{}
	p := invalid.NewPublisher(s, "https://sqs.local/000/orders-invalid.fifo", "invoice", func() time.Time { return at })
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
	p := invalid.NewPublisher(s, "https://sqs.local/000/orders-invalid.fifo", "invoice", nil)
	if err := p.Publish(context.Background(), record("arn:aws:sqs:us-east-1:000:orders", 0), rejection); err != nil {
		t.Fatal(err)
	}
	if aws.ToString(s.sent[0].MessageGroupId) != "invoice" {
		t.Errorf("group = %q, want the consumer name", aws.ToString(s.sent[0].MessageGroupId))
	}
}

func TestPublishError(t *testing.T) {
	cause := errors.New("throttled")
	p := invalid.NewPublisher(&fakeSender{err: cause}, "q", "invoice", nil)
	if err := p.Publish(context.Background(), record("arn", 0), rejection); !errors.Is(err, cause) {
		t.Fatalf("err = %v, want it to wrap the cause", err)
	}
}

func TestPublishReplacesAnEarlierVerdict(t *testing.T) {
	s := &fakeSender{}
	p := invalid.NewPublisher(s, "q", "invoice", func() time.Time { return at })
	msg := record("arn", 10)
	if err := p.Publish(context.Background(), msg, rejection); err != nil {
		t.Fatal(err)
	}
	// The operator fixes the producer and sends the message back as it was
	// published; it is still invalid, for another reason.
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
	if !reflect.DeepEqual(producer, envelope.FromEvent(msg.MessageAttributes)) {
		t.Fatalf("producer attributes = %v", producer)
	}
}

func TestPublishRefusesACorruptAttributeOfOurName(t *testing.T) {
	msg := record("arn", 0)
	msg.MessageAttributes = map[string]events.SQSMessageAttribute{invalid.AttributeName: {DataType: "String", StringValue: aws.String("x")}}
	p := invalid.NewPublisher(&fakeSender{}, "q", "invoice", nil)
	if err := p.Publish(context.Background(), msg, rejection); err == nil {
		t.Fatal("want an error: the record must stay in its queue")
	}
}
