package emf_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/emfline"
	"github.com/homingdlq/homing/internal/emfline/emflinetest"
	"github.com/homingdlq/homing/internal/settings"
)

// invalidChannel accepts every rejected record.
type invalidChannel struct{}

func (invalidChannel) Publish(context.Context, events.SQSMessage, batch.Rejection) error { return nil }

// clock is a manual clock from the real now (the deadline of a context
// is on real time).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

const (
	standardARN = "arn:aws:sqs:us-east-1:000000000000:shipments"
	fifoARN     = "arn:aws:sqs:us-east-1:000000000000:shipments.fifo"
)

// everyOutcome is a batch with a record of every outcome, in the order one
// worker runs them; the handler does what the body says.
func everyOutcome() events.SQSEvent {
	std := func(body string) events.SQSMessage {
		return events.SQSMessage{MessageId: "m-" + body, Body: body, EventSourceARN: standardARN}
	}
	fifo := func(body, group string) events.SQSMessage {
		return events.SQSMessage{MessageId: "m-" + body, Body: body, EventSourceARN: fifoARN, Attributes: map[string]string{"MessageGroupId": group}}
	}
	return events.SQSEvent{Records: []events.SQSMessage{
		std("ok"), std("duplicate"), std("in-doubt-unrecorded"),
		std("invalid:no-items"), std("invalid:no-items"), std("invalid:malformed-json"),
		std("fail"), std("panic"),
		fifo("fail", "g1"), fifo("ok", "g1"), // the second is blocked
		std("late"), std("ok"), // the second does not start
	}}
}

// receipt is what a consumer passes from the receiver's outcome: the
// fields emf.Receipt mirrors (this fails to compile if one goes).
func receipt(out idempotency.Outcome) emf.Receipt {
	return emf.Receipt{Duplicate: out.Duplicate, Unrecorded: out.Unrecorded, InDoubt: out.InDoubt}
}

func handler(c *clock) batch.Handler {
	return func(ctx context.Context, msg events.SQSMessage) error {
		if reason, ok := strings.CutPrefix(msg.Body, "invalid:"); ok {
			return batch.Reject(reason, "the test rejects it")
		}
		switch msg.Body {
		case "ok":
			emf.CountReceipt(ctx, receipt(idempotency.Outcome{Result: "r"}))
		case "duplicate":
			emf.CountReceipt(ctx, receipt(idempotency.Outcome{Result: "r", Duplicate: true}))
		case "in-doubt-unrecorded":
			emf.CountReceipt(ctx, receipt(idempotency.Outcome{Result: "r", InDoubt: true, Resolution: idempotency.ResolvedApplied, Unrecorded: true}))
		case "fail":
			return errors.New("downstream unavailable")
		case "panic":
			panic("boom")
		case "late":
			c.Advance(time.Hour) // past the invocation's deadline margin
		}
		return nil
	}
}

// runEveryOutcome runs everyOutcome through the batch processor behind
// the recorder and returns the lines written.
func runEveryOutcome(t *testing.T, invocations int) string {
	t.Helper()
	c := &clock{now: time.Now()}
	p := batch.New(handler(c), invalidChannel{}, batch.Options{Concurrency: 1, Logger: slog.New(slog.DiscardHandler), Now: c.Now,
		OnOutcome: emf.CountOutcome[batch.Outcome]})
	var out bytes.Buffer
	rec := emf.NewRecorder(&out, emf.Config{Namespace: "Homing", Lane: "shipments"})
	rec.Now = func() time.Time { return at }
	process := emf.Wrap(rec, p.Process)
	for range invocations {
		ctx, cancel := context.WithDeadline(context.Background(), c.Now().Add(30*time.Minute))
		resp, err := process(ctx, everyOutcome())
		cancel()
		if err != nil || len(resp.BatchItemFailures) != 5 {
			t.Fatalf("response %+v, %v: want 5 failures (fail, panic, fifo fail, blocked, not started)", resp, err)
		}
	}
	return out.String()
}

func TestRecorderOverEveryOutcome(t *testing.T) {
	lines := emflinetest.Parse(t, runEveryOutcome(t, 1))
	if len(lines) != 7 {
		t.Fatalf("%d lines, want the lane's, one per reason and one per failure class", len(lines))
	}
	lane := lines[0]
	d := lane.AWS.CloudWatchMetrics[0]
	if lane.AWS.Timestamp != at.UnixMilli() || d.Namespace != "Homing" || !slices.Equal(d.Dimensions[0], []string{settings.DimensionLane}) {
		t.Fatalf("_aws = %+v", lane.AWS)
	}
	var names []string
	for _, m := range d.Metrics {
		if m.Unit != "Count" {
			t.Errorf("%s: unit %s", m.Name, m.Unit)
		}
		names = append(names, m.Name)
	}
	if !slices.Equal(names, settings.ConsumerMetrics) {
		t.Errorf("metrics %v, want %v", names, settings.ConsumerMetrics)
	}
	want := map[string]any{
		settings.DimensionLane:               "shipments",
		settings.MetricRecordsProcessed:      12.0,
		settings.MetricRecordsFailed:         5.0, // fail, panic, the FIFO group's failure, the record blocked behind it, the one not started
		settings.MetricRecordsInvalid:        3.0,
		settings.MetricDuplicatesAbsorbed:    1.0,
		settings.MetricCompletionsUnrecorded: 1.0,
		settings.MetricInDoubtTakeovers:      1.0,
	}
	if !maps.Equal(without(lane.Members, "_aws"), want) {
		t.Errorf("lane line %v\nwant %v", without(lane.Members, "_aws"), want)
	}
	for i, r := range []struct {
		reason string
		n      float64
	}{{"malformed-json", 1}, {"no-items", 2}} { // in order
		l := lines[i+1]
		if dims := l.AWS.CloudWatchMetrics[0].Dimensions[0]; !slices.Equal(dims, []string{settings.DimensionLane, settings.DimensionReason}) {
			t.Errorf("reason line dimensions %v", dims)
		}
		if w := map[string]any{"Lane": "shipments", "Reason": r.reason, "RecordsInvalid": r.n}; !maps.Equal(without(l.Members, "_aws"), w) {
			t.Errorf("reason line %v, want %v", without(l.Members, "_aws"), w)
		}
	}
	classes := map[string]any{}
	for _, l := range lines[3:] {
		if dims := l.AWS.CloudWatchMetrics[0].Dimensions[0]; !slices.Equal(dims, []string{settings.DimensionLane, settings.DimensionErrorClass}) {
			t.Errorf("class line dimensions %v", dims)
		}
		classes[l.Members[settings.DimensionErrorClass].(string)] = l.Members[settings.MetricRecordsFailed]
	}
	if want := map[string]any{"errors-errorstring": 2.0, "panic": 1.0, "blocked": 1.0, "deadline": 1.0}; !maps.Equal(classes, want) {
		t.Errorf("failures by class %v, want %v", classes, want)
	}
}

// Ten thousand distinct failure classes give each invocation at most six
// class lines and the lane at most 21 class values: 20 named, "other".
func TestFailureClassesAreBounded(t *testing.T) {
	var out bytes.Buffer
	rec := emf.NewRecorder(&out, emf.Config{Namespace: "Homing", Lane: "shipments"})
	const perInvocation = 10
	seen := map[string]bool{}
	for i := 0; i < 10_000; i += perInvocation {
		process := emf.Wrap(rec, func(ctx context.Context, _ struct{}) (struct{}, error) {
			for j := range perInvocation {
				emf.CountOutcome(ctx, "failed", fmt.Sprintf("class-%d", i+j))
			}
			return struct{}{}, nil
		})
		out.Reset()
		if _, err := process(context.Background(), struct{}{}); err != nil {
			t.Fatal(err)
		}
		lines := emflinetest.Parse(t, out.String())
		if len(lines) > 1+6 {
			t.Fatalf("invocation %d: %d lines", i, len(lines))
		}
		total := 0.0
		for _, l := range lines[1:] {
			seen[l.Members[settings.DimensionErrorClass].(string)] = true
			total += l.Members[settings.MetricRecordsFailed].(float64)
		}
		if total != perInvocation {
			t.Fatalf("invocation %d: %v failures by class, want %d", i, total, perInvocation)
		}
	}
	if len(seen) > 21 || !seen["other"] {
		t.Fatalf("%d class values: %v", len(seen), seen)
	}
}

func without(m map[string]any, key string) map[string]any {
	m = maps.Clone(m)
	delete(m, key)
	return m
}

// Each invocation gets a fresh tally: the second writes what it saw, not
// a sum.
func TestRecorderWritesEachInvocation(t *testing.T) {
	lines := emflinetest.Parse(t, runEveryOutcome(t, 2))
	if len(lines) != 14 {
		t.Fatalf("%d lines, want 7 per invocation", len(lines))
	}
	for _, i := range []int{0, 7} {
		if lines[i].Members["RecordsProcessed"] != 12.0 || lines[i].Members["RecordsFailed"] != 5.0 {
			t.Errorf("invocation line %d: %v", i, lines[i].Members)
		}
	}
}

// An invocation without records or invalid ones writes one line, with
// zeros: the alarms see a data point for every invocation.
func TestRecorderWritesZeros(t *testing.T) {
	var out bytes.Buffer
	rec := emf.NewRecorder(&out, emf.Config{Namespace: "N", Lane: "L"})
	process := emf.Wrap(rec, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	})
	if _, err := process(context.Background(), events.SQSEvent{}); err != nil {
		t.Fatal(err)
	}
	lines := emflinetest.Parse(t, out.String())
	if len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, name := range settings.ConsumerMetrics {
		if lines[0].Members[name] != 0.0 {
			t.Errorf("%s = %v, want 0", name, lines[0].Members[name])
		}
	}
}

// More reasons than one line can carry (a dimension has one value per
// line) are each written, none dropped; a reason CloudWatch rejects costs
// its own line only, and is reported.
func TestRecorderWritesEveryReason(t *testing.T) {
	counts := emf.Counts{Processed: 2*emfline.MaxMetrics + 1, Invalid: map[string]int{"": 1}}
	for i := range 2 * emfline.MaxMetrics {
		counts.Invalid[fmt.Sprintf("reason-%03d", i)] = i + 1
	}
	var out bytes.Buffer
	err := emf.NewRecorder(&out, emf.Config{Namespace: "N", Lane: "L"}).Write(counts)
	if !errors.Is(err, emfline.ErrInvalid) || !strings.Contains(err.Error(), "lane L") {
		t.Fatalf("error %v, want the blank reason reported", err)
	}
	lines := emflinetest.Parse(t, out.String())
	if len(lines) != 1+2*emfline.MaxMetrics {
		t.Fatalf("%d lines, want the lane's and %d reasons", len(lines), 2*emfline.MaxMetrics)
	}
	if lines[0].Members["RecordsInvalid"] != float64(counts.InvalidTotal()) {
		t.Errorf("RecordsInvalid = %v, want %d (the blank reason included)", lines[0].Members["RecordsInvalid"], counts.InvalidTotal())
	}
	for i, l := range lines[1:] {
		if l.Members["Reason"] != fmt.Sprintf("reason-%03d", i) || l.Members["RecordsInvalid"] != float64(i+1) {
			t.Fatalf("reason line %d: %v", i, l.Members)
		}
	}
}

// Records run at once (batch's Concurrency) count into one tally: under
// -race, and exactly.
func TestTallyUnderConcurrentRecords(t *testing.T) {
	const records = 500
	ev := events.SQSEvent{}
	for i := range records {
		body := []string{"ok", "duplicate", "invalid:no-items", "fail"}[i%4]
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprint(i), Body: body, EventSourceARN: standardARN})
	}
	c := &clock{now: time.Now()}
	p := batch.New(handler(c), invalidChannel{}, batch.Options{Concurrency: 16, Logger: slog.New(slog.DiscardHandler),
		OnOutcome: emf.CountOutcome[batch.Outcome]})
	tally := &emf.Tally{}
	if _, err := p.Process(emf.NewContext(context.Background(), tally), ev); err != nil {
		t.Fatal(err)
	}
	got := tally.Counts()
	want := emf.Counts{Processed: records, Failed: records / 4, Invalid: map[string]int{"no-items": records / 4}, Duplicates: records / 4}
	if got.Processed != want.Processed || got.Failed != want.Failed || got.Duplicates != want.Duplicates ||
		!maps.Equal(got.Invalid, want.Invalid) || got.Unrecorded != 0 || got.InDoubt != 0 {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}

// Without a tally in the context the hooks do nothing (a processor used
// outside Wrap, a test).
func TestHooksWithoutATally(t *testing.T) {
	ctx := context.Background()
	emf.CountOutcome(ctx, batch.Failed, "")
	emf.CountReceipt(ctx, emf.Receipt{Duplicate: true})
	tally := &emf.Tally{}
	emf.CountOutcome(emf.NewContext(ctx, tally), batch.Failed, "")
	if got := tally.Counts(); got.Processed != 1 || got.Failed != 1 {
		t.Fatalf("counts %+v", got)
	}
}

func TestWrapReportsAFailedWrite(t *testing.T) {
	var got error
	rec := emf.NewRecorder(failingWriter{}, emf.Config{Namespace: "N", Lane: "L"})
	rec.OnError = func(err error) { got = err }
	want := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "x"}}}
	resp, err := emf.Wrap(rec, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return want, nil
	})(context.Background(), events.SQSEvent{})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "x" {
		t.Fatalf("the invocation's answer changed: %+v, %v", resp, err)
	}
	if got == nil || !strings.Contains(got.Error(), "lane L") || !strings.Contains(got.Error(), "closed") {
		t.Fatalf("OnError got %v", got)
	}
}

func TestLoadConfigAndValidate(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    emf.Config
		wantErr []string
	}{
		{"defaults", nil, emf.Config{Namespace: "Homing", Lane: "invoice"}, nil},
		{"powertools variables", map[string]string{"POWERTOOLS_SERVICE_NAME": "Homing/Orders", "POWERTOOLS_METRICS_NAMESPACE": "Acme/Billing"},
			emf.Config{Namespace: "Acme/Billing", Lane: "Homing/Orders"}, nil},
		{"reserved namespace", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": "AWS/Lambda"}, emf.Config{}, []string{"AWS/ prefix"}},
		{"bad characters", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": "Homing*", "POWERTOOLS_SERVICE_NAME": "lane\n"}, emf.Config{},
			[]string{"POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_SERVICE_NAME"}},
		{"blank", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": " ", "POWERTOOLS_SERVICE_NAME": " "}, emf.Config{},
			[]string{"POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_SERVICE_NAME"}},
		{"too long", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": strings.Repeat("n", 256)}, emf.Config{}, []string{"1..255"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := emf.LoadConfig(func(k string) string { return tt.env[k] }, "invoice")
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
