package batch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/invalid"
)

// sqsSender refuses what SQS refuses for size: a message over 1 MiB, an
// empty body, a body that is not UTF-8; it keeps what it accepts.
type sqsSender struct{ sent []*sqs.SendMessageInput }

func (s *sqsSender) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	body := aws.ToString(in.MessageBody)
	if n := envelope.MessageBytes(len(body), in.MessageAttributes); n > envelope.MaxMessageBytes || body == "" || !utf8.ValidString(body) {
		return nil, fmt.Errorf("InvalidParameterValue: a message of %d bytes (body %d, valid UTF-8 %v)", n, len(body), utf8.ValidString(body))
	}
	s.sent = append(s.sent, in)
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprint("new-", len(s.sent)))}, nil
}

// An invalid message as large as SQS takes (a source queue sized at 1 MiB,
// outside the construct) still reaches the invalid queue (issue 30, item
// 5): its body in parts, each with the verdict numbered, their bodies in
// order the body, the producer's attributes on the first; nothing lost.
func TestPublishAMessageAsLargeAsSQSTakes(t *testing.T) {
	const maxBody = envelope.MaxMessageBytes
	verdict, err := invalid.Stamp(nil, invalid.Metadata{Reason: rejection.Reason, Detail: rejection.Detail,
		SourceQueue: "arn:aws:sqs:us-east-1:000:orders", MessageID: "m-1", Consumer: "invoice", At: at})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		queue  string
		body   string
		nAttrs int
	}{
		{"1 MiB of ASCII", "https://sqs.local/000/orders-invalid", strings.Repeat("x", maxBody), 0},
		{"1 MiB of two-byte runes", "https://sqs.local/000/orders-invalid", strings.Repeat("é", maxBody/2), 0},
		{"four-byte runes, ten attributes", "https://sqs.local/000/orders-invalid", strings.Repeat("😀", (maxBody-200)/4), 10},
		{"FIFO", "https://sqs.local/000/orders-invalid.fifo", strings.Repeat("y", maxBody), 3},
		{"just over what fits whole", "https://sqs.local/000/orders-invalid", strings.Repeat("z", maxBody-envelope.MessageBytes(0, verdict)+1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &sqsSender{}
			q := batch.NewInvalidQueue(s, tt.queue, "invoice", func() time.Time { return at })
			msg := record("arn:aws:sqs:us-east-1:000:orders", tt.nAttrs)
			msg.Body = tt.body
			if msg.Attributes == nil {
				msg.Attributes = map[string]string{}
			}
			msg.Attributes["MessageGroupId"] = "g-1"
			if err := q.Publish(context.Background(), msg, rejection); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			if len(s.sent) < 2 {
				t.Fatalf("sent %d messages, want the body in parts", len(s.sent))
			}
			var joined strings.Builder
			dedup := map[string]bool{}
			for i, in := range s.sent {
				meta, producer, found, err := invalid.Read(in.MessageAttributes)
				if err != nil || !found {
					t.Fatalf("part %d: Read: found=%v err=%v", i+1, found, err)
				}
				want := invalid.Metadata{Reason: rejection.Reason, Detail: rejection.Detail, SourceQueue: msg.EventSourceARN, MessageID: "m-1",
					Consumer: "invoice", At: at, Part: i + 1, Parts: len(s.sent)}
				if meta != want {
					t.Fatalf("part %d: verdict %+v, want %+v", i+1, meta, want)
				}
				if wantAttrs := map[bool]int{true: tt.nAttrs, false: 0}[i == 0]; len(producer) != wantAttrs {
					t.Fatalf("part %d: %d producer attributes, want %d", i+1, len(producer), wantAttrs)
				}
				if in.MessageDeduplicationId != nil {
					if dedup[*in.MessageDeduplicationId] || aws.ToString(in.MessageGroupId) != "g-1" {
						t.Fatalf("part %d: deduplication id %s seen before, or group %s", i+1, *in.MessageDeduplicationId, aws.ToString(in.MessageGroupId))
					}
					dedup[*in.MessageDeduplicationId] = true
				}
				joined.WriteString(aws.ToString(in.MessageBody))
			}
			if joined.String() != tt.body {
				t.Fatalf("the parts' bodies join to %d bytes, the body is %d", joined.Len(), len(tt.body))
			}
		})
	}
}

// A body that fits beside its verdict is sent whole, unnumbered.
func TestPublishWholeWhenItFits(t *testing.T) {
	s := &sqsSender{}
	q := batch.NewInvalidQueue(s, "https://sqs.local/000/orders-invalid", "invoice", func() time.Time { return at })
	msg := events.SQSMessage{MessageId: "m-1", Body: strings.Repeat("x", envelope.MaxSourceMessageBytes), EventSourceARN: "arn:aws:sqs:us-east-1:000:orders"}
	if err := q.Publish(context.Background(), msg, rejection); err != nil {
		t.Fatal(err)
	}
	meta, _, _, err := invalid.Read(s.sent[0].MessageAttributes)
	if len(s.sent) != 1 || err != nil || meta.Part != 0 || meta.Parts != 0 {
		t.Fatalf("sent %d, verdict %+v, %v; want one whole message", len(s.sent), meta, err)
	}
}
