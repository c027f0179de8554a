//go:build e2e

package consumer_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/browse"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/invalid"
)

// These tests run against the stack deployed by `make deploy-local`: the
// real event source mapping invokes the deployed consumer (built by `make
// build`), the real redrive policy moves messages to the DLQ, and the
// consumer calls the tax stand-in. Order ids carry a per-run prefix so runs
// never see each other's orders.

type stack struct {
	sqs                  *sqs.Client
	source, dlq, invalid string
	tax                  *emulatortest.TaxAdmin
	run                  string
}

func deployed(t *testing.T) *stack {
	out := emulatortest.Outputs(t)
	s := &stack{
		sqs:     sqs.NewFromConfig(emulatortest.Config(t)),
		source:  emulatortest.LaneOutput(t, out, emulatortest.SampleLane, settings.OutputSourceQueueURL),
		dlq:     emulatortest.LaneOutput(t, out, emulatortest.SampleLane, settings.OutputDeadLetterQueueURL),
		invalid: emulatortest.LaneOutput(t, out, emulatortest.SampleLane, settings.OutputInvalidQueueURL),
		tax:     emulatortest.NewTaxAdmin(t, emulatortest.Output(t, out, "TaxServiceAdminUrl")),
		run:     fmt.Sprintf("R%d", time.Now().UnixNano()%1e8),
	}
	s.tax.SetMode("up")
	return s
}

// order rewrites a sample body so its orderId is unique to this run.
func (s *stack) order(body string) string {
	return strings.ReplaceAll(body, "ORD-2026-", "ORD-"+s.run+"-")
}

func (s *stack) id(sample string) string {
	return strings.Replace(sample, "ORD-2026-", "ORD-"+s.run+"-", 1)
}

func (s *stack) send(t *testing.T, body string) {
	t.Helper()
	if _, err := s.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(s.source), MessageBody: aws.String(body)}); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// invoicesOfRun returns the stand-in's invoice counts for this run's orders.
func (s *stack) invoicesOfRun(t *testing.T) map[string]int {
	out := map[string]int{}
	for id, n := range s.tax.Invoices() {
		if strings.HasPrefix(id, "ORD-"+s.run+"-") {
			out[id] = n
		}
	}
	return out
}

// takeInvalid takes (receives and deletes) this run's messages from the
// invalid queue, recording their reasons by body.
func (s *stack) takeInvalid(t *testing.T, into map[string]string) {
	t.Helper()
	for _, m := range s.take(t, s.invalid) {
		meta, _, found, err := invalid.Read(m.MessageAttributes)
		if err != nil || !found {
			t.Fatalf("invalid message without metadata: %v", err)
		}
		into[aws.ToString(m.Body)] = meta.Reason
	}
}

// take browses url and deletes and returns this run's messages; other runs'
// messages are left as they were.
func (s *stack) take(t *testing.T, url string) []types.Message {
	t.Helper()
	ctx := context.Background()
	mine, err := browse.All(ctx, s.sqs, url, browse.Options{}, func(m types.Message) bool { return strings.Contains(aws.ToString(m.Body), s.run) })
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mine {
		if _, err := s.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	return mine
}

func TestDeployedConsumerLane(t *testing.T) {
	s := deployed(t)
	bodies := eventBodies(t, "batch-mixed.json")
	for _, b := range bodies {
		s.send(t, s.order(b))
	}
	dup := eventBodies(t, "duplicate-same-payload.json")
	for _, b := range dup {
		s.send(t, s.order(b))
	}
	conflict := eventBodies(t, "duplicate-conflicting-payload.json")
	for _, b := range conflict {
		s.send(t, s.order(b))
	}

	wantInvoices := map[string]int{}
	for _, id := range []string{"ORD-2026-000201", "ORD-2026-000202", "ORD-2026-000203", "ORD-2026-000501", "ORD-2026-000601"} {
		wantInvoices[s.id(id)] = 1
	}
	reasons := map[string]string{}
	emulatortest.Eventually(t, 120*time.Second, func() (bool, string) {
		s.takeInvalid(t, reasons)
		got := s.invoicesOfRun(t)
		return maps.Equal(got, wantInvoices) && len(reasons) == 8, fmt.Sprintf("invoices %v, invalid reasons %v", got, reasons)
	})
	count := map[string]int{}
	for _, r := range reasons {
		count[r]++
	}
	want := map[string]int{"malformed-json": 1, "unknown-version": 1, "missing-tax-id": 1, "invalid-tax-id": 1,
		"total-mismatch": 1, "no-items": 1, "unknown-currency": 1, "conflicting-duplicate": 1}
	if !maps.Equal(count, want) {
		t.Fatalf("invalid reasons = %v, want %v", count, want)
	}
	// Nothing is left behind and nothing was invoiced twice, even after the
	// in-flight duplicates came back.
	emulatortest.Eventually(t, 90*time.Second, func() (bool, string) {
		v, f, d := emulatortest.Depth(t, s.sqs, s.source)
		return v+f+d == 0, fmt.Sprintf("source queue: %d visible, %d in flight, %d delayed", v, f, d)
	})
	if got := s.invoicesOfRun(t); !maps.Equal(got, wantInvoices) {
		t.Fatalf("invoices = %v, want %v", got, wantInvoices)
	}
}

// With the tax service failing, valid orders are neither invoiced nor lost:
// SQS moves them to the DLQ after maxReceiveCount receives (3 locally).
func TestDeployedServiceDownDeadLetters(t *testing.T) {
	s := deployed(t)
	sample := eventBodies(t, "order-valid.json")[0]
	// The stand-in always answers 503 to orders whose id contains DOWN.
	ids := []string{}
	for i := range 2 {
		id := fmt.Sprintf("ORD-%s-DOWN-%d", s.run, i)
		ids = append(ids, id)
		s.send(t, strings.Replace(sample, "ORD-2026-000123", id, 1))
	}
	var moved []types.Message
	emulatortest.Eventually(t, 180*time.Second, func() (bool, string) {
		moved = append(moved, s.take(t, s.dlq)...)
		return len(moved) == len(ids), fmt.Sprintf("%d of %d orders in the DLQ", len(moved), len(ids))
	})
	for _, m := range moved {
		// The count includes our receive from the DLQ.
		if n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"]); n < 3 {
			t.Errorf("moved after %d receives, want maxReceiveCount 3", n)
		}
	}
	if got := s.invoicesOfRun(t); len(got) != 0 {
		t.Fatalf("invoiced while the service failed: %v", got)
	}
}
