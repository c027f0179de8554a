package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/metrics"
	"github.com/homingdlq/homing/settings"
)

// emf is an EMF line as CloudWatch reads it.
type emf struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// checkEMF decodes line, checks it against the EMF specification (one
// directive; every dimension and metric a member of the line, a metric a
// number) and returns its members.
func checkEMF(t *testing.T, line string, wantAt int64, wantNamespace string, wantDims []string) map[string]any {
	t.Helper()
	var l emf
	var members map[string]any
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, line)
	}
	if err := json.Unmarshal([]byte(line), &members); err != nil {
		t.Fatal(err)
	}
	if l.AWS.Timestamp != wantAt || len(l.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("_aws = %+v", l.AWS)
	}
	d := l.AWS.CloudWatchMetrics[0]
	if d.Namespace != wantNamespace || len(d.Dimensions) != 1 || !slices.Equal(d.Dimensions[0], wantDims) {
		t.Fatalf("directive %+v, want namespace %s and dimensions %v", d, wantNamespace, wantDims)
	}
	for _, dim := range d.Dimensions[0] {
		if _, ok := members[dim].(string); !ok {
			t.Errorf("dimension %s has no string value in the line", dim)
		}
	}
	if len(d.Metrics) == 0 || len(d.Metrics) > 100 {
		t.Fatalf("%d metrics", len(d.Metrics))
	}
	for _, m := range d.Metrics {
		if m.Unit != "Count" {
			t.Errorf("%s: unit %q", m.Name, m.Unit)
		}
		if _, ok := members[m.Name].(float64); !ok {
			t.Errorf("metric %s has no numeric value in the line", m.Name)
		}
	}
	return members
}

func TestConsumerWritesValidEMF(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	c := &metrics.Consumer{Config: metrics.Config{Namespace: "Homing", Lane: "Homing/Orders"}, W: &out, Now: func() time.Time { return at }}
	err := c.Write(metrics.Counts{Processed: 9, Failed: 2, Duplicates: 1, Unrecorded: 1, InDoubt: 1,
		Invalid: map[string]int{"missing-tax-id": 2, "invalid-tax-id": 1}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want the lane's and one per reason:\n%s", len(lines), out.String())
	}
	lane := checkEMF(t, lines[0], at.UnixMilli(), "Homing", []string{"Lane"})
	want := map[string]any{"Lane": "Homing/Orders", "RecordsProcessed": 9.0, "RecordsFailed": 2.0, "RecordsInvalid": 3.0,
		"DuplicatesAbsorbed": 1.0, "CompletionsUnrecorded": 1.0, "InDoubtTakeovers": 1.0}
	if len(lane) != len(want)+1 {
		t.Errorf("members %v, want _aws and %v", lane, want)
	}
	for k, v := range want {
		if lane[k] != v {
			t.Errorf("%s = %v, want %v", k, lane[k], v)
		}
	}
	for i, reason := range []string{"invalid-tax-id", "missing-tax-id"} { // sorted
		m := checkEMF(t, lines[i+1], at.UnixMilli(), "Homing", []string{"Lane", "Reason"})
		if m["Lane"] != "Homing/Orders" || m["Reason"] != reason || m["RecordsInvalid"] != float64(map[string]int{"invalid-tax-id": 1, "missing-tax-id": 2}[reason]) {
			t.Errorf("line %d = %v", i+1, m)
		}
	}
}

// An invocation without invalid records writes one line, with zeros: the
// alarms see a data point for every minute the consumer ran.
func TestConsumerWritesZeros(t *testing.T) {
	var out bytes.Buffer
	c := &metrics.Consumer{Config: metrics.Config{Namespace: "N", Lane: "L"}, W: &out, Now: func() time.Time { return time.UnixMilli(5) }}
	if err := c.Write(metrics.Counts{Processed: 1}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "\n"); got != 1 {
		t.Fatalf("%d lines:\n%s", got, out.String())
	}
	m := checkEMF(t, strings.TrimSpace(out.String()), 5, "N", []string{"Lane"})
	if m["RecordsFailed"] != 0.0 || m["RecordsInvalid"] != 0.0 {
		t.Fatalf("line = %v", m)
	}
}

func TestTallyCountsOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		record  func(ctx context.Context)
		want    metrics.Counts
		noTally bool
	}{
		{"each outcome", func(ctx context.Context) {
			for _, o := range []batch.Outcome{batch.Succeeded, batch.Failed, batch.Panicked, batch.NotStarted, batch.Blocked} {
				metrics.Record(ctx, o, "")
			}
			metrics.Record(ctx, batch.Invalid, "no-items")
			metrics.Record(ctx, batch.Invalid, "no-items")
		}, metrics.Counts{Processed: 7, Failed: 4, Invalid: map[string]int{"no-items": 2}}, false},
		{"receiver outcomes", func(ctx context.Context) {
			metrics.Idempotency(ctx, idempotency.Outcome{})
			metrics.Idempotency(ctx, idempotency.Outcome{Duplicate: true})
			metrics.Idempotency(ctx, idempotency.Outcome{InDoubt: true, Resolution: idempotency.ResolvedApplied, Unrecorded: true})
		}, metrics.Counts{Duplicates: 1, InDoubt: 1, Unrecorded: 1}, false},
		{"no tally in ctx: nothing, no panic", func(ctx context.Context) {
			metrics.Record(ctx, batch.Failed, "")
			metrics.Idempotency(ctx, idempotency.Outcome{Duplicate: true})
		}, metrics.Counts{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tally := &metrics.Tally{}
			ctx := context.Background()
			if !tt.noTally {
				ctx = metrics.NewContext(ctx, tally)
			}
			tt.record(ctx)
			got := tally.Counts()
			if got.Processed != tt.want.Processed || got.Failed != tt.want.Failed || got.Duplicates != tt.want.Duplicates ||
				got.InDoubt != tt.want.InDoubt || got.Unrecorded != tt.want.Unrecorded || got.InvalidTotal() != tt.want.InvalidTotal() ||
				got.Invalid["no-items"] != tt.want.Invalid["no-items"] {
				t.Fatalf("counts = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWrapWritesOneTallyPerInvocation(t *testing.T) {
	var out bytes.Buffer
	c := &metrics.Consumer{Config: metrics.Config{Namespace: "N", Lane: "L"}, W: &out}
	process := c.Wrap(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for range ev.Records {
			metrics.Record(ctx, batch.Failed, "")
		}
		return events.SQSEventResponse{}, nil
	}, nil)
	for range 2 {
		if _, err := process(context.Background(), events.SQSEvent{Records: make([]events.SQSMessage, 3)}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for _, l := range lines { // a fresh tally per invocation
		if !strings.Contains(l, `"RecordsFailed":3`) || !strings.Contains(l, `"RecordsProcessed":3`) {
			t.Fatalf("line = %s", l)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWrapReportsAFailedWrite(t *testing.T) {
	var got error
	c := &metrics.Consumer{Config: metrics.Config{Namespace: "N", Lane: "L"}, W: failingWriter{}}
	process := c.Wrap(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, nil
	}, func(err error) { got = err })
	resp, err := process(context.Background(), events.SQSEvent{})
	if err != nil || resp.BatchItemFailures == nil {
		t.Fatalf("the batch's answer changed: %+v, %v", resp, err)
	}
	if got == nil || !strings.Contains(got.Error(), "lane L") {
		t.Fatalf("onError got %v", got)
	}
}

func TestLoadAndValidate(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    metrics.Config
		wantErr []string
	}{
		{"defaults", nil, metrics.Config{Namespace: "Homing", Lane: "invoice"}, nil},
		{"powertools variables", map[string]string{"POWERTOOLS_SERVICE_NAME": "Homing/Orders", "POWERTOOLS_METRICS_NAMESPACE": "Acme/Billing"},
			metrics.Config{Namespace: "Acme/Billing", Lane: "Homing/Orders"}, nil},
		{"reserved namespace", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": "AWS/Lambda"}, metrics.Config{}, []string{"AWS/ prefix"}},
		{"bad characters", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": "Homing*", "POWERTOOLS_SERVICE_NAME": "lane\n"}, metrics.Config{},
			[]string{"POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_SERVICE_NAME"}},
		{"blank", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": " ", "POWERTOOLS_SERVICE_NAME": " "}, metrics.Config{},
			[]string{"POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_SERVICE_NAME"}},
		{"too long", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": strings.Repeat("n", 256)}, metrics.Config{}, []string{"1..255"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := metrics.Load(settings.NewReader(func(k string) string { return tt.env[k] }), "invoice")
			err := c.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil || c != tt.want {
					t.Fatalf("config %+v, %v; want %+v", c, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("config %+v valid, want errors %v", c, tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
