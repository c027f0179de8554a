//go:build e2e

package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/sample/consumer"
	"github.com/homingdlq/homing/internal/sample/tax"
	"github.com/homingdlq/homing/internal/sample/taxstub"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/invalid"
)

// lane is the consumer wired to real queues and a real table on the
// emulator, the real tax client and the tax stand-in.
type lane struct {
	sqs        *sqs.Client
	sourceURL  string
	sourceARN  string
	invalidURL string
	stub       *taxstub.Server
	process    func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

func newLane(t *testing.T, fifo bool) *lane {
	cfg := emulatortest.Config(t)
	q := sqs.NewFromConfig(cfg)
	db := dynamodb.NewFromConfig(cfg)
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	l := &lane{sqs: q, stub: taxstub.New()}
	l.sourceURL, l.sourceARN = emulatortest.Queue(t, q, emulatortest.Name(t, "orders")+suffix)
	l.invalidURL, _ = emulatortest.Queue(t, q, emulatortest.Name(t, "invalid")+suffix)
	table := emulatortest.IdempotencyTable(t, db)
	srv := httptest.NewServer(l.stub)
	t.Cleanup(srv.Close)
	taxClient, err := tax.New(srv.URL, nil, tax.Options{MaxAttempts: 2, BaseDelay: time.Millisecond, Budget: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := consumer.LoadConfig(func(k string) string {
		return map[string]string{"INVALID_QUEUE_URL": l.invalidURL, "IDEMPOTENCY_TABLE": table, "TAX_SERVICE_URL": srv.URL}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	p := consumer.New(c, consumer.Deps{Sender: q, Store: dynamo.NewIdempotencyStore(db, table), Invoicer: taxClient, Logger: slog.New(slog.DiscardHandler)})
	l.process = p
	return l
}

func (l *lane) send(t *testing.T, body, group string, attrs map[string]types.MessageAttributeValue) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(l.sourceURL), MessageBody: aws.String(body), MessageAttributes: attrs}
	if group != "" {
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(fmt.Sprintf("%d", time.Now().UnixNano()))
	}
	if _, err := l.sqs.SendMessage(context.Background(), in); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// drain plays the event source mapping: receive a batch, invoke, delete what
// succeeded, make the failures visible again; until the queue is empty or
// rounds run out. It returns the number of failures reported.
func (l *lane) drain(t *testing.T, rounds int) int {
	t.Helper()
	failures := 0
	for range rounds {
		records := emulatortest.Receive(t, l.sqs, l.sourceURL, l.sourceARN, 0)
		if len(records) == 0 {
			return failures
		}
		resp, err := l.process(context.Background(), events.SQSEvent{Records: records})
		if err != nil {
			t.Fatal(err)
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		failures += len(failed)
		for _, r := range records {
			if failed[r.MessageId] {
				_, err = l.sqs.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(l.sourceURL), ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: 0})
			} else {
				_, err = l.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(l.sourceURL), ReceiptHandle: aws.String(r.ReceiptHandle)})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return failures
}

type invalidMessage struct {
	body     string
	meta     invalid.Metadata
	producer map[string]types.MessageAttributeValue
	group    string
	attrs    int
}

func (l *lane) invalidMessages(t *testing.T) []invalidMessage {
	t.Helper()
	var out []invalidMessage
	for range 10 {
		recv, err := l.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(l.invalidURL), MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(recv.Messages) == 0 {
			break
		}
		for _, m := range recv.Messages {
			meta, producer, found, err := invalid.Read(m.MessageAttributes)
			if err != nil || !found {
				t.Fatalf("invalid message without metadata: %v", err)
			}
			out = append(out, invalidMessage{aws.ToString(m.Body), meta, producer, m.Attributes["MessageGroupId"], len(m.MessageAttributes)})
		}
	}
	return out
}

func eventBodies(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile("../../../events/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, r := range ev.Records {
		bodies = append(bodies, r.Body)
	}
	return bodies
}

func TestConsumerLaneOnTheEmulator(t *testing.T) {
	l := newLane(t, false)
	for _, b := range eventBodies(t, "batch-mixed.json") {
		l.send(t, b, "", nil)
	}
	dup := eventBodies(t, "duplicate-same-payload.json")
	conflict := eventBodies(t, "duplicate-conflicting-payload.json")
	for _, b := range append(dup, conflict...) {
		l.send(t, b, "", nil)
	}
	// A producer that already uses all ten attributes, with an invalid order.
	full := map[string]types.MessageAttributeValue{}
	for i := range envelope.MaxAttributes {
		full[fmt.Sprintf("producer-%02d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("v", i))}
	}
	l.send(t, eventBodies(t, "batch-mixed.json")[6], "", full) // invalid-tax-id

	l.drain(t, 20)

	invoices := l.stub.Invoices()
	for _, id := range []string{"ORD-2026-000201", "ORD-2026-000202", "ORD-2026-000203", "ORD-2026-000501", "ORD-2026-000601"} {
		if invoices[id] != 1 {
			t.Errorf("%s invoiced %d times, want exactly 1", id, invoices[id])
		}
	}
	if len(invoices) != 5 {
		t.Errorf("invoices = %v, want 5 orders", invoices)
	}
	reasons := map[string]int{}
	for _, m := range l.invalidMessages(t) {
		reasons[m.meta.Reason]++
		if m.meta.SourceQueue != l.sourceARN || m.meta.Consumer != "invoice" || m.meta.MessageID == "" || m.meta.At.IsZero() {
			t.Errorf("metadata = %+v", m.meta)
		}
		if m.attrs > envelope.MaxAttributes {
			t.Errorf("invalid message has %d attributes", m.attrs)
		}
		if len(m.producer) > 0 && !equalAttrs(m.producer, full) {
			t.Errorf("producer attributes not restored: %v", m.producer)
		}
	}
	want := map[string]int{"malformed-json": 1, "unknown-version": 1, "missing-tax-id": 1, "invalid-tax-id": 2,
		"total-mismatch": 1, "no-items": 1, "unknown-currency": 1, "conflicting-duplicate": 1}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("invalid queue reasons = %v, want %v", reasons, want)
	}
	if left := emulatortest.Receive(t, l.sqs, l.sourceURL, l.sourceARN, 0); len(left) != 0 {
		t.Errorf("%d messages left in the source queue", len(left))
	}
}

func TestConsumerLaneServiceDownLosesNothing(t *testing.T) {
	l := newLane(t, false)
	if err := l.stub.SetMode(taxstub.Mode{Mode: "down"}); err != nil {
		t.Fatal(err)
	}
	bodies := eventBodies(t, "batch-mixed.json")[:3] // the valid ones
	for _, b := range bodies {
		l.send(t, b, "", nil)
	}
	if failures := l.drain(t, 3); failures != 9 {
		t.Fatalf("%d failures over 3 rounds, want 9 (3 orders x 3 receives)", failures)
	}
	if n := len(l.stub.Invoices()); n != 0 {
		t.Fatalf("%d invoices while down", n)
	}
	// Back up: every order is invoiced once, nothing went to the invalid lane.
	_ = l.stub.SetMode(taxstub.Mode{Mode: "up"})
	if failures := l.drain(t, 5); failures != 0 {
		t.Fatalf("%d failures after recovery", failures)
	}
	for id, n := range l.stub.Invoices() {
		if n != 1 {
			t.Errorf("%s invoiced %d times", id, n)
		}
	}
	if n := len(l.stub.Invoices()); n != 3 {
		t.Errorf("%d orders invoiced, want 3", n)
	}
	if m := l.invalidMessages(t); len(m) != 0 {
		t.Errorf("%d messages in the invalid queue", len(m))
	}
}

func TestConsumerLaneFIFO(t *testing.T) {
	l := newLane(t, true)
	bodies := eventBodies(t, "fifo-two-groups.json")
	groups := []string{"customer-a", "customer-a", "customer-a", "customer-b", "customer-b"}
	for i, b := range bodies {
		l.send(t, b, groups[i], nil)
	}
	invalidBody := eventBodies(t, "batch-mixed.json")[7] // total-mismatch
	l.send(t, invalidBody, "customer-b", nil)
	l.drain(t, 1) // ORD-...-402-DOWN fails; 403 is blocked behind it
	invoices := l.stub.Invoices()
	if invoices["ORD-2026-000403"] != 0 {
		t.Fatal("a record behind a failure in its group was processed")
	}
	if invoices["ORD-2026-000401"] != 1 || invoices["ORD-2026-000404"] != 1 || invoices["ORD-2026-000405"] != 1 {
		t.Fatalf("invoices = %v", invoices)
	}
	msgs := l.invalidMessages(t)
	if len(msgs) != 1 || msgs[0].group != "customer-b" || msgs[0].body != invalidBody || msgs[0].meta.Reason != "total-mismatch" {
		t.Fatalf("invalid queue = %+v", msgs)
	}
}

func equalAttrs(a, b map[string]types.MessageAttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || aws.ToString(v.StringValue) != aws.ToString(w.StringValue) || aws.ToString(v.DataType) != aws.ToString(w.DataType) || !slices.Equal(v.BinaryValue, w.BinaryValue) {
			return false
		}
	}
	return true
}
