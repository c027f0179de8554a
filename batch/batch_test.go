package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
)

const (
	standardARN = "arn:aws:sqs:us-east-1:000000000000:orders"
	fifoARN     = "arn:aws:sqs:us-east-1:000000000000:orders.fifo"
)

type invalidErr struct{ reason, detail string }

func (e invalidErr) Error() string                    { return e.reason + ": " + e.detail }
func (e invalidErr) Invalid() (reason, detail string) { return e.reason, e.detail }

type published struct {
	MessageID string
	Rejection batch.Rejection
}

type fakeChannel struct {
	mu   sync.Mutex
	got  []published
	fail error
}

func (c *fakeChannel) Publish(_ context.Context, msg events.SQSMessage, r batch.Rejection) error {
	if c.fail != nil {
		return c.fail
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, published{msg.MessageId, r})
	return nil
}

// behaviour maps a record body to what the handler does with it.
func handlerFor(calls *sync.Map) batch.Handler {
	return func(ctx context.Context, msg events.SQSMessage) error {
		calls.Store(msg.MessageId, true)
		switch {
		case strings.HasPrefix(msg.Body, "ok"):
			batch.Annotate(ctx, slog.String("orderId", "ORD-"+msg.MessageId))
			return nil
		case strings.HasPrefix(msg.Body, "invalid"):
			return fmt.Errorf("validate: %w", invalidErr{"missing-tax-id", "customer.taxId is missing"})
		case strings.HasPrefix(msg.Body, "panic"):
			panic("boom")
		default:
			return errors.New("tax service: 503")
		}
	}
}

func records(arn string, specs ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, s := range specs {
		body, group, _ := strings.Cut(s, "@")
		r := events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: body, EventSourceARN: arn}
		if group != "" {
			r.Attributes = map[string]string{"MessageGroupId": group}
		}
		ev.Records = append(ev.Records, r)
	}
	return ev
}

func failures(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestProcess(t *testing.T) {
	tests := []struct {
		name         string
		event        events.SQSEvent
		publishErr   error
		wantFailures []string
		wantInvalid  []string
		wantNotRun   []string
	}{
		{name: "empty batch", event: events.SQSEvent{}, wantFailures: []string{}},
		{name: "all succeed", event: records(standardARN, "ok", "ok", "ok"), wantFailures: []string{}},
		{name: "transient failure is reported", event: records(standardARN, "ok", "down", "ok"), wantFailures: []string{"m1"}},
		{name: "invalid is published and acknowledged", event: records(standardARN, "invalid", "ok"), wantFailures: []string{}, wantInvalid: []string{"m0"}},
		{name: "invalid whose publication fails is retried", event: records(standardARN, "invalid", "ok"), publishErr: errors.New("sqs: throttled"), wantFailures: []string{"m0"}},
		{name: "panic fails only its record", event: records(standardARN, "ok", "panic", "ok"), wantFailures: []string{"m1"}},
		{name: "failures keep record order", event: records(standardARN, "down", "ok", "down", "panic"), wantFailures: []string{"m0", "m2", "m3"}},
		{
			name:         "fifo: a failure blocks the rest of its group only",
			event:        records(fifoARN, "ok@a", "ok@b", "down@a", "ok@b", "ok@a", "invalid@a"),
			wantFailures: []string{"m2", "m4", "m5"},
			wantNotRun:   []string{"m4", "m5"},
		},
		{
			name:         "fifo: invalid does not block its group",
			event:        records(fifoARN, "invalid@a", "ok@a"),
			wantFailures: []string{},
			wantInvalid:  []string{"m0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls sync.Map
			ch := &fakeChannel{fail: tt.publishErr}
			p := batch.New(handlerFor(&calls), ch, batch.Options{Concurrency: 4, Logger: slog.New(slog.DiscardHandler)})
			resp, err := p.Process(context.Background(), tt.event)
			if err != nil {
				t.Fatalf("Process returned an error: %v", err)
			}
			if got := failures(resp); !slices.Equal(got, tt.wantFailures) {
				t.Errorf("failures = %v, want %v", got, tt.wantFailures)
			}
			var inv []string
			for _, p := range ch.got {
				inv = append(inv, p.MessageID)
				if p.Rejection != (batch.Rejection{Reason: "missing-tax-id", Detail: "customer.taxId is missing"}) {
					t.Errorf("rejection = %+v", p.Rejection)
				}
			}
			slices.Sort(inv)
			if !slices.Equal(inv, tt.wantInvalid) {
				t.Errorf("published = %v, want %v", inv, tt.wantInvalid)
			}
			for _, id := range tt.wantNotRun {
				if _, ran := calls.Load(id); ran {
					t.Errorf("%s ran, want it blocked", id)
				}
			}
		})
	}
}

func TestProcessAlwaysEncodesAList(t *testing.T) {
	p := batch.New(handlerFor(&sync.Map{}), &fakeChannel{}, batch.Options{Logger: slog.New(slog.DiscardHandler)})
	resp, _ := p.Process(context.Background(), events.SQSEvent{})
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"batchItemFailures":[]}` {
		t.Fatalf("response = %s", b)
	}
}

func TestProcessDeadline(t *testing.T) {
	now := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(1500*time.Millisecond))
	defer cancel()
	var calls sync.Map
	p := batch.New(handlerFor(&calls), &fakeChannel{}, batch.Options{
		DeadlineMargin: 2 * time.Second,
		Now:            func() time.Time { return now },
		Logger:         slog.New(slog.DiscardHandler),
	})
	resp, _ := p.Process(ctx, records(standardARN, "ok", "ok"))
	if got := failures(resp); !slices.Equal(got, []string{"m0", "m1"}) {
		t.Fatalf("failures = %v, want both records not started", got)
	}
	calls.Range(func(k, _ any) bool { t.Errorf("%v ran after the deadline margin", k); return true })
}

func TestProcessStopsStartingWhenTheDeadlineNears(t *testing.T) {
	// The clock moves 1 s per handler call; with 2.5 s left and a 1 s
	// margin, the first two records run and the rest are not started.
	var clock atomic.Int64
	start := time.Now()
	now := func() time.Time { return start.Add(time.Duration(clock.Load())) }
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(2500*time.Millisecond))
	defer cancel()
	h := func(context.Context, events.SQSMessage) error { clock.Add(int64(time.Second)); return nil }
	p := batch.New(h, &fakeChannel{}, batch.Options{Concurrency: 1, DeadlineMargin: time.Second, Now: now, Logger: slog.New(slog.DiscardHandler)})
	resp, _ := p.Process(ctx, records(standardARN, "ok", "ok", "ok", "ok"))
	if got := failures(resp); !slices.Equal(got, []string{"m2", "m3"}) {
		t.Fatalf("failures = %v, want [m2 m3]", got)
	}
}

func TestProcessBoundsConcurrency(t *testing.T) {
	const limit = 3
	var inFlight, peak atomic.Int32
	reached := make(chan struct{})
	var once sync.Once
	h := func(ctx context.Context, _ events.SQSMessage) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == limit {
			once.Do(func() { close(reached) })
		}
		select { // hold the slot until the limit was reached once
		case <-reached:
		case <-time.After(2 * time.Second):
		}
		return nil
	}
	p := batch.New(h, &fakeChannel{}, batch.Options{Concurrency: limit, Logger: slog.New(slog.DiscardHandler)})
	ev := records(standardARN, "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok")
	if resp, _ := p.Process(context.Background(), ev); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures = %v", failures(resp))
	}
	if got := peak.Load(); got != limit {
		t.Fatalf("peak concurrency = %d, want %d", got, limit)
	}
}

func TestProcessLogsOneLinePerRecord(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	p := batch.New(handlerFor(&sync.Map{}), &fakeChannel{}, batch.Options{Concurrency: 1, Logger: logger})
	p.Process(context.Background(), records(standardARN, "ok", "invalid", "panic", "down"))
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 4 {
		t.Fatalf("got %d log lines, want 4:\n%s", len(lines), buf.String())
	}
	want := []struct{ id, outcome, level string }{
		{"m0", "succeeded", "INFO"}, {"m1", "invalid", "INFO"}, {"m2", "panicked", "ERROR"}, {"m3", "failed", "WARN"},
	}
	for i, w := range want {
		l := lines[i]
		if l["messageId"] != w.id || l["outcome"] != w.outcome || l["level"] != w.level {
			t.Errorf("line %d = %v, want %+v", i, l, w)
		}
	}
	if lines[0]["orderId"] != "ORD-m0" {
		t.Errorf("annotation missing: %v", lines[0])
	}
	if lines[1]["reason"] != "missing-tax-id" {
		t.Errorf("invalid line has no reason: %v", lines[1])
	}
	if s, _ := lines[2]["stack"].(string); !strings.Contains(s, "handlerFor") {
		t.Errorf("panic line has no stack naming the handler: %v", lines[2])
	}
}

// OnOutcome sees every record once, with the Process ctx, the reason of
// an invalid record and the failure class of a failed one: what the
// consumer's metrics count.
func TestProcessReportsEveryOutcome(t *testing.T) {
	type key struct{}
	var (
		mu  sync.Mutex
		got []string
	)
	ctx := context.WithValue(context.Background(), key{}, "invocation")
	p := batch.New(handlerFor(&sync.Map{}), &fakeChannel{}, batch.Options{
		Concurrency: 4, Logger: slog.New(slog.DiscardHandler),
		OnOutcome: func(ctx context.Context, o batch.Outcome, reason string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%s:%s:%v", o, reason, ctx.Value(key{})))
		},
	})
	if _, err := p.Process(ctx, records(fifoARN, "ok@a", "invalid@b", "down@a", "ok@a", "panic@c")); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"blocked:blocked:invocation", "failed:errors-errorstring:invocation", "invalid:missing-tax-id:invocation", "panicked:panic:invocation", "succeeded::invocation"}
	if !slices.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
}

func TestRejectGoesToTheInvalidChannel(t *testing.T) {
	ch := &fakeChannel{}
	p := batch.New(func(context.Context, events.SQSMessage) error {
		return fmt.Errorf("parse shipment: %w", batch.Reject("malformed-json", "unexpected end of JSON input"))
	}, ch, batch.Options{})
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: "{"}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("response %+v, err %v: want the record acknowledged", resp, err)
	}
	if len(ch.got) != 1 || ch.got[0] != (published{"m-1", batch.Rejection{Reason: "malformed-json", Detail: "unexpected end of JSON input"}}) {
		t.Fatalf("invalid channel got %+v", ch.got)
	}
}
