package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/invalid"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/posting"
)

// metricLine is the part of an EMF line the test reads.
type metricLine struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
		}
	} `json:"_aws"`
	Lane, Reason, ErrorClass                                    string
	RecordsProcessed, RecordsFailed, RecordsInvalid             int
	DuplicatesAbsorbed, CompletionsUnrecorded, InDoubtTakeovers int
}

// The lane's handler writes, per invocation, the metrics the lane's alarms
// watch, counted from what it did: every record, each batch item failure,
// each invalid message sent (by reason), and on the second delivery every
// acknowledged valid payment as a duplicate (nothing is posted twice).
func TestHandlerWritesTheLanesMetrics(t *testing.T) {
	var ev events.SQSEvent // valid, invalid and failing (frozen account) records
	book := &ledger.Memory{}
	for _, file := range []string{"batch-mixed.json", "frozen-account.json"} {
		payload, err := os.ReadFile("../../events/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var part events.SQSEvent
		if err := json.Unmarshal(payload, &part); err != nil {
			t.Fatal(err)
		}
		for _, r := range part.Records {
			if a := r.Attributes["MessageGroupId"]; strings.HasPrefix(a, "FROZEN-") {
				if err := book.Freeze(context.Background(), a, true); err != nil {
					t.Fatal(err)
				}
			}
		}
		ev.Records = append(ev.Records, part.Records...)
	}
	cfg, err := posting.LoadConfig(func(key string) string {
		return map[string]string{"INVALID_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/payments-invalid.fifo",
			"IDEMPOTENCY_TABLE": "idempotency", "ENTRIES_TABLE": "entries"}[key]
	})
	if err != nil {
		t.Fatal(err)
	}
	metrics := emf.LoadConfig(func(key string) string {
		return map[string]string{settings.ServiceName.Env: "Homing/Payments", settings.MetricsNamespace.Env: "Acme/Ledger"}[key]
	}, cfg.ConsumerName)
	if err := metrics.Validate(); err != nil {
		t.Fatal(err)
	}
	queue := &fakeSQS{}
	p := posting.NewProcessor(cfg, posting.Deps{Sender: queue, Store: idempotency.NewMemoryStore(), Ledger: book,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return fixedNow }})
	var out bytes.Buffer
	h := newHandler(p, metrics, &out, slog.New(slog.DiscardHandler))

	for delivery := range 2 {
		out.Reset()
		sentBefore := len(queue.sent)
		resp, err := h(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]int{}
		for _, in := range queue.sent[sentBefore:] {
			meta, _, _, err := invalid.Read(in.MessageAttributes)
			if err != nil {
				t.Fatal(err)
			}
			reasons[meta.Reason]++
		}
		invalidSent := len(queue.sent) - sentBefore
		var lane *metricLine
		byReason := map[string]int{}
		byClass := 0 // failed records on the lines by error class
		for _, raw := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var l metricLine
			if err := json.Unmarshal([]byte(raw), &l); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			if len(l.AWS.CloudWatchMetrics) != 1 || l.AWS.CloudWatchMetrics[0].Namespace != "Acme/Ledger" || l.Lane != "Homing/Payments" || l.AWS.Timestamp == 0 {
				t.Fatalf("line %s", raw)
			}
			if l.Reason != "" {
				byReason[l.Reason] += l.RecordsInvalid
				continue
			}
			if l.ErrorClass != "" {
				byClass += l.RecordsFailed
				continue
			}
			if lane != nil {
				t.Fatalf("two lane lines in one invocation:\n%s", out.String())
			}
			lane = &l
		}
		if lane == nil {
			t.Fatalf("delivery %d: no lane line:\n%s", delivery, out.String())
		}
		if invalidSent == 0 || len(resp.BatchItemFailures) == 0 {
			t.Fatalf("the events should have invalid and failing records: %d, %d", invalidSent, len(resp.BatchItemFailures))
		}
		if lane.RecordsProcessed != len(ev.Records) || lane.RecordsFailed != len(resp.BatchItemFailures) || lane.RecordsInvalid != invalidSent {
			t.Errorf("delivery %d: %+v; want %d processed, %d failed, %d invalid", delivery, *lane, len(ev.Records), len(resp.BatchItemFailures), invalidSent)
		}
		if byClass != lane.RecordsFailed {
			t.Errorf("delivery %d: %d failed records by error class, want the lane line's %d", delivery, byClass, lane.RecordsFailed)
		}
		if len(byReason) != len(reasons) {
			t.Errorf("delivery %d: reason lines %v, want %v", delivery, byReason, reasons)
		}
		for r, n := range reasons {
			if byReason[r] != n {
				t.Errorf("delivery %d: reason lines %v, want %v", delivery, byReason, reasons)
			}
		}
		acknowledgedValid := lane.RecordsProcessed - lane.RecordsFailed - lane.RecordsInvalid
		if delivery == 1 && (acknowledgedValid == 0 || lane.DuplicatesAbsorbed != acknowledgedValid) {
			t.Errorf("second delivery: %d duplicates, want every one of the %d valid payments acknowledged", lane.DuplicatesAbsorbed, acknowledgedValid)
		}
	}
}
