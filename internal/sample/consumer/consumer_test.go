package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/consumer"
	"github.com/homingdlq/homing/internal/sample/tax"
	"github.com/homingdlq/homing/invalid"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var fixedNow = time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC)

// fakeTax issues INV-<orderId>; orders whose id ends in -DOWN fail as if the
// service were down, -REJECT ones are refused with HTTP 422.
type fakeTax struct {
	mu     sync.Mutex
	issued map[string]int
}

func (f *fakeTax) IssueInvoice(_ context.Context, req tax.InvoiceRequest) (tax.Invoice, error) {
	switch {
	case strings.HasSuffix(req.OrderID, "-DOWN"):
		return tax.Invoice{}, fmt.Errorf("issue invoice for %s: 4 attempts: status 503", req.OrderID)
	case strings.HasSuffix(req.OrderID, "-REJECT"):
		return tax.Invoice{}, &tax.RejectedError{Status: 422, Detail: "customer tax id is blocked for invoicing"}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.issued == nil {
		f.issued = map[string]int{}
	}
	f.issued[req.OrderID]++
	return tax.Invoice{Number: "INV-" + req.OrderID}, nil
}

type fakeSQS struct {
	mu   sync.Mutex
	sent []*sqs.SendMessageInput
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, in)
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprintf("invalid-%d", len(f.sent)))}, nil
}

type fixture struct {
	tax     *fakeTax
	sqs     *fakeSQS
	store   *idempotency.MemoryStore
	handler lambda.Handler
	logs    *bytes.Buffer
	metrics *bytes.Buffer
}

func newFixture(t *testing.T, concurrency int, invalidQueue string) *fixture {
	t.Helper()
	cfg, err := consumer.LoadConfig(func(key string) string {
		return map[string]string{
			"INVALID_QUEUE_URL": invalidQueue,
			"IDEMPOTENCY_TABLE": "idempotency",
			"TAX_SERVICE_URL":   "http://127.0.0.1:1",
			"CONCURRENCY":       fmt.Sprint(concurrency),
		}[key]
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{tax: &fakeTax{}, sqs: &fakeSQS{}, store: idempotency.NewMemoryStore(), logs: &bytes.Buffer{}, metrics: &bytes.Buffer{}}
	p := consumer.New(cfg, consumer.Deps{
		Sender: f.sqs, Store: f.store, Invoicer: f.tax, Now: func() time.Time { return fixedNow },
		Logger: slog.New(slog.NewJSONHandler(f.logs, nil)), Metrics: f.metrics,
	})
	f.handler = lambda.NewHandler(p)
	return f
}

// publication is what a golden file records of one message sent to the
// invalid queue.
type publication struct {
	SourceMessageID        string            `json:"sourceMessageId"`
	BodyUnchanged          bool              `json:"bodyUnchanged"`
	Metadata               invalid.Metadata  `json:"metadata"`
	ProducerAttributes     map[string]string `json:"producerAttributes,omitempty"`
	MessageGroupID         string            `json:"messageGroupId,omitempty"`
	MessageDeduplicationID string            `json:"messageDeduplicationId,omitempty"`
}

type golden struct {
	Response json.RawMessage `json:"response"`
	Invalid  []publication   `json:"invalid"`
	Invoices map[string]int  `json:"invoices"`
}

// sqsEventFiles lists the sample SQS events; events/replay-*.json belong to
// the replay function.
func sqsEventFiles() []string {
	all, _ := filepath.Glob("../../../events/*.json")
	var files []string
	for _, f := range all {
		if !strings.HasPrefix(filepath.Base(f), "replay-") {
			files = append(files, f)
		}
	}
	return files
}

func TestEvents(t *testing.T) {
	files := sqsEventFiles()
	if len(files) == 0 {
		t.Fatal("no sample events found")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			payload, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var ev events.SQSEvent
			if err := json.Unmarshal(payload, &ev); err != nil {
				t.Fatal(err)
			}
			queue := "https://sqs.us-east-1.amazonaws.com/000000000000/orders-invalid"
			if strings.HasSuffix(ev.Records[0].EventSourceARN, ".fifo") {
				queue += ".fifo"
			}
			// One record at a time, so that in-batch duplicates resolve in
			// a fixed order; TestConcurrentDuplicates covers the rest.
			f := newFixture(t, 1, queue)
			resp, err := f.handler.Invoke(context.Background(), payload)
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			got := golden{Response: resp, Invalid: []publication{}, Invoices: map[string]int{}}
			bodies := map[string]string{}
			for _, r := range ev.Records {
				bodies[r.MessageId] = r.Body
			}
			for _, in := range f.sqs.sent {
				meta, producer, found, err := invalid.Read(in.MessageAttributes)
				if err != nil || !found {
					t.Fatalf("publication without metadata: %v", err)
				}
				p := publication{
					SourceMessageID:        meta.MessageID,
					BodyUnchanged:          aws.ToString(in.MessageBody) == bodies[meta.MessageID],
					Metadata:               meta,
					MessageGroupID:         aws.ToString(in.MessageGroupId),
					MessageDeduplicationID: aws.ToString(in.MessageDeduplicationId),
				}
				for n, a := range producer {
					if p.ProducerAttributes == nil {
						p.ProducerAttributes = map[string]string{}
					}
					p.ProducerAttributes[n] = aws.ToString(a.StringValue)
				}
				got.Invalid = append(got.Invalid, p)
			}
			sort.Slice(got.Invalid, func(i, j int) bool { return got.Invalid[i].SourceMessageID < got.Invalid[j].SourceMessageID })
			for id, n := range f.tax.issued {
				got.Invoices[id] = n
			}
			compareGolden(t, filepath.Join("testdata", name+".golden.json"), got)
		})
	}
}

func compareGolden(t *testing.T, path string, got golden) {
	t.Helper()
	var compact bytes.Buffer
	if err := json.Compact(&compact, got.Response); err != nil {
		t.Fatal(err)
	}
	got.Response = compact.Bytes()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./functions/consumer -update` to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, b, want)
	}
}

// Two deliveries of the same order in one batch, processed at once: exactly
// one invoice; the loser is either absorbed as a duplicate or reported as a
// failure (redelivered later), never invoiced twice and never lost.
func TestConcurrentDuplicates(t *testing.T) {
	payload, err := os.ReadFile("../../../events/duplicate-same-payload.json")
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		f := newFixture(t, 10, "https://sqs.local/000/orders-invalid")
		out, err := f.handler.Invoke(context.Background(), payload)
		if err != nil {
			t.Fatal(err)
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if n := f.tax.issued["ORD-2026-000501"]; n != 1 {
			t.Fatalf("invoiced %d times, want 1", n)
		}
		if len(resp.BatchItemFailures) > 1 || len(f.sqs.sent) != 0 {
			t.Fatalf("failures %v, invalid publications %d", resp.BatchItemFailures, len(f.sqs.sent))
		}
		if len(resp.BatchItemFailures) == 1 {
			// The redelivery is absorbed.
			redelivered := strings.Replace(string(payload), "AQEB", "AQEC", -1)
			out, _ = f.handler.Invoke(context.Background(), []byte(redelivered))
			if string(out) != `{"batchItemFailures":[]}` || f.tax.issued["ORD-2026-000501"] != 1 {
				t.Fatalf("redelivery: %s, invoices %d", out, f.tax.issued["ORD-2026-000501"])
			}
		}
	}
}

func TestLogsOneLinePerRecordWithTheFixedKeys(t *testing.T) {
	payload, err := os.ReadFile("../../../events/batch-mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 4, "https://sqs.local/000/orders-invalid")
	if _, err := f.handler.Invoke(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(f.logs.String()), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d log lines for 10 records:\n%s", len(lines), f.logs)
	}
	outcomes := map[string]int{}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["messageId"] == nil || m["outcome"] == nil || m["queue"] == nil {
			t.Errorf("line without messageId/outcome/queue: %s", l)
		}
		if m["outcome"] == "invalid" && m["reason"] == nil {
			t.Errorf("invalid line without reason: %s", l)
		}
		if m["outcome"] == "succeeded" && (m["orderId"] == nil || m["invoiceNumber"] == nil) {
			t.Errorf("success line without orderId/invoiceNumber: %s", l)
		}
		outcomes[m["outcome"].(string)]++
	}
	if outcomes["succeeded"] != 3 || outcomes["invalid"] != 7 {
		t.Fatalf("outcomes = %v", outcomes)
	}
}

// The sample mixed batch, invoked twice: the metrics of each invocation
// on the function's stdout, in EMF, the second counting duplicates.
func TestMetricsPerInvocation(t *testing.T) {
	payload, err := os.ReadFile("../../../events/batch-mixed.json")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 4, "https://sqs.local/000/orders-invalid")
	for range 2 {
		if _, err := f.handler.Invoke(context.Background(), payload); err != nil {
			t.Fatal(err)
		}
	}
	type line struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
			}
		} `json:"_aws"`
		Lane, Reason                                                        string
		RecordsProcessed, RecordsFailed, RecordsInvalid, DuplicatesAbsorbed int
	}
	var lanes []line
	reasons := map[string]int{}
	for _, raw := range strings.Split(strings.TrimSpace(f.metrics.String()), "\n") {
		var l line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		if l.AWS.Timestamp != fixedNow.UnixMilli() || len(l.AWS.CloudWatchMetrics) != 1 || l.AWS.CloudWatchMetrics[0].Namespace != "Homing" || l.Lane != "invoice" {
			t.Fatalf("line %s", raw)
		}
		if l.Reason == "" {
			lanes = append(lanes, l)
		} else {
			reasons[l.Reason] += l.RecordsInvalid
		}
	}
	if len(lanes) != 2 || lanes[0].RecordsProcessed != 10 || lanes[0].RecordsInvalid != 7 || lanes[0].DuplicatesAbsorbed != 0 ||
		lanes[1].DuplicatesAbsorbed != 3 || lanes[1].RecordsFailed != 0 {
		t.Fatalf("lane lines = %+v", lanes)
	}
	n := 0
	for _, v := range reasons {
		n += v
	}
	if n != 14 {
		t.Fatalf("invalid by reason = %v, want 14 over both invocations", reasons)
	}
}

func TestLoadConfig(t *testing.T) {
	base := map[string]string{
		"INVALID_QUEUE_URL": "https://sqs.local/000/invalid",
		"IDEMPOTENCY_TABLE": "idem",
		"TAX_SERVICE_URL":   "http://127.0.0.1:8080",
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string
	}{
		{name: "defaults", env: base},
		{name: "nothing set", env: map[string]string{}, wantErr: []string{"INVALID_QUEUE_URL is required", "IDEMPOTENCY_TABLE is required", "TAX_SERVICE_URL is required"}},
		{name: "bad numbers", env: map[string]string{"CONCURRENCY": "many", "MAX_PAYLOAD_BYTES": "2000000"}, wantErr: []string{`CONCURRENCY="many"`, "MAX_PAYLOAD_BYTES=2000000"}},
		{name: "payload limit above what the source queue accepts", env: map[string]string{"MAX_PAYLOAD_BYTES": "1048576"}, wantErr: []string{"MAX_PAYLOAD_BYTES=1048576"}},
		{name: "consumer name that breaks keys", env: map[string]string{"CONSUMER_NAME": "in#voice"}, wantErr: []string{`CONSUMER_NAME="in#voice"`}},
		{name: "bad metric names", env: map[string]string{"POWERTOOLS_METRICS_NAMESPACE": "AWS/Lambda", "POWERTOOLS_SERVICE_NAME": " "},
			wantErr: []string{"POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_SERVICE_NAME"}},
		{name: "bad durations", env: map[string]string{"TAX_BUDGET": "soon", "RECORD_LIFETIME": "24h", "DEADLINE_MARGIN": "-1s"}, wantErr: []string{`TAX_BUDGET="soon"`, "RECORD_LIFETIME=24h: want >= 432h", "DEADLINE_MARGIN=-1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			if tt.name != "nothing set" {
				for k, v := range base {
					env[k] = v
				}
			}
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, err := consumer.LoadConfig(func(k string) string { return env[k] })
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				want := consumer.Config{InvalidQueueURL: base["INVALID_QUEUE_URL"], IdempotencyTable: "idem", TaxServiceURL: base["TAX_SERVICE_URL"],
					ConsumerName: "invoice", Concurrency: 10, DeadlineMargin: 2 * time.Second, TaxBudget: 10 * time.Second,
					RecordLifetime: 720 * time.Hour, MaxPayloadBytes: 256 << 10, FailureRecords: true,
					Metrics: emf.Config{Namespace: "Homing", Lane: "invoice"}}
				if cfg != want {
					t.Fatalf("cfg = %+v, want %+v", cfg, want)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
