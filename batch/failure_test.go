package batch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/idempotency"
)

// memoryFailures is a FailureLog in memory: one record per message id,
// its first failure kept, as the DynamoDB adapter's update does.
type memoryFailures struct {
	mu     sync.Mutex
	byID   map[string]batch.Failure
	writes int
	err    error
	block  bool // wait for ctx to end
}

func (m *memoryFailures) RecordFailures(ctx context.Context, fs []batch.Failure) error {
	if m.block {
		<-ctx.Done()
		return ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	if m.byID == nil {
		m.byID = map[string]batch.Failure{}
	}
	for _, f := range fs {
		m.writes++
		if old, ok := m.byID[f.MessageID]; ok {
			f.FirstAt = old.FirstAt
		}
		m.byID[f.MessageID] = f
	}
	return nil
}

type classedError struct{ class string }

func (e classedError) Error() string        { return "downstream said " + e.class }
func (e classedError) FailureClass() string { return e.class }

type httpError struct{ status int }

func (e httpError) Error() string       { return "answered " + strconv.Itoa(e.status) }
func (e httpError) HTTPStatusCode() int { return e.status }

type apiError struct{ code string }

func (e apiError) Error() string     { return e.code }
func (e apiError) ErrorCode() string { return e.code }

// delivery is message id delivered for the n-th time.
func delivery(id string, n int) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Attributes: map[string]string{
		"ApproximateReceiveCount": strconv.Itoa(n), "ApproximateFirstReceiveTimestamp": "1800000000000"}}
}

func failing(err error) batch.Handler {
	return func(context.Context, events.SQSMessage) error { return err }
}

// Each failure gets a stable class, bounded whatever the error says.
func TestFailureClass(t *testing.T) {
	long := strings.Repeat("Ab_", 100)
	tests := []struct {
		name   string
		handle batch.Handler
		want   string
	}{
		{"its own class", failing(fmt.Errorf("ship: %w", classedError{"Tax-Service 503"})), "tax-service-503"},
		{"an HTTP status", failing(fmt.Errorf("ship: %w", httpError{503})), "http-503"},
		{"throttling", failing(fmt.Errorf("ship: %w", apiError{"ThrottlingException"})), "throttled"},
		{"an API code", failing(apiError{"ValidationException"}), "validationexception"},
		{"a deadline", failing(fmt.Errorf("ship: %w", context.DeadlineExceeded)), "timeout"},
		{"a Go type", failing(fmt.Errorf("ship: %w", &strconv.NumError{Func: "Atoi", Num: "x", Err: strconv.ErrSyntax})), "strconv-numerror"},
		{"a panic", func(context.Context, events.SQSMessage) error { panic("boom") }, "panic"},
		{"a class too long", failing(classedError{long}), strings.Repeat("ab-", 21) + "a"},
		{"a class of nothing", failing(classedError{"###"}), "other"},
		{"the reserved class", failing(classedError{"Unknown"}), "x-unknown"},
		{"a locked key", failing(fmt.Errorf("invoice ORD-1: %w", idempotency.ErrInProgress)), "in-progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &memoryFailures{}
			p := batch.New(tt.handle, &fakeChannel{}, batch.Options{Failures: log, Logger: slog.New(slog.DiscardHandler)})
			if _, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{delivery("m-1", 1)}}); err != nil {
				t.Fatal(err)
			}
			if got := log.byID["m-1"].Class; got != tt.want {
				t.Fatalf("class = %q, want %q", got, tt.want)
			}
		})
	}
}

// A record not started for the deadline margin is of class deadline, one
// behind a failed record of its FIFO group of class blocked.
func TestFailureClassOfRecordsThatDidNotRun(t *testing.T) {
	log := &memoryFailures{}
	p := batch.New(failing(errors.New("down")), &fakeChannel{}, batch.Options{Failures: log, Logger: slog.New(slog.DiscardHandler), Concurrency: 1})
	a, b := delivery("a", 1), delivery("b", 1)
	a.EventSourceARN, b.EventSourceARN = fifoARN, fifoARN
	a.Attributes["MessageGroupId"], b.Attributes["MessageGroupId"] = "g", "g"
	if _, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{a, b}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Second))
	defer cancel()
	if _, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{delivery("c", 1)}}); err != nil {
		t.Fatal(err)
	}
	if log.byID["b"].Class != "blocked" || log.byID["c"].Class != "deadline" {
		t.Fatalf("records = %+v", log.byID)
	}
}

// A 1 MiB error message is recorded clipped, valid UTF-8, as it was.
func TestFailureMessageIsBounded(t *testing.T) {
	msg := strings.Repeat("é\x00\u202e", 1<<20/6)
	log := &memoryFailures{}
	p := batch.New(failing(errors.New(msg)), &fakeChannel{}, batch.Options{Failures: log, Logger: slog.New(slog.DiscardHandler)})
	if _, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{delivery("m-1", 1)}}); err != nil {
		t.Fatal(err)
	}
	got := log.byID["m-1"].Message
	if len(got) > 515 || len(got) < 400 || !utf8.ValidString(got) || !strings.HasPrefix(msg, strings.TrimSuffix(got, "...")) {
		t.Fatalf("message of %d bytes: %q", len(got), got[:min(len(got), 80)])
	}
}

// Ten thousand distinct classes each come out as at most 64 bytes of
// [a-z0-9-].
func TestTenThousandClassesAreBounded(t *testing.T) {
	log := &memoryFailures{}
	valid := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)
	for i := range 10_000 {
		class := fmt.Sprintf("Class %d %s \u00e9\x01", i, strings.Repeat("x", i%100))
		p := batch.New(failing(classedError{class}), &fakeChannel{}, batch.Options{Failures: log, Logger: slog.New(slog.DiscardHandler)})
		if _, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{delivery("m-"+strconv.Itoa(i), 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	for id, f := range log.byID {
		if !valid.MatchString(f.Class) {
			t.Fatalf("%s: class %q", id, f.Class)
		}
	}
	if len(log.byID) != 10_000 {
		t.Fatalf("%d records, want 10000", len(log.byID))
	}
}

// A message that fails thousands of times has one record whose count is
// exact: with the lane's maxReceiveCount one write, at its last delivery;
// without it one write per failed delivery.
func TestRecordFailingThousandsOfTimes(t *testing.T) {
	const n = 5000
	for _, tt := range []struct {
		name      string
		maxCount  int
		wantWrite int
	}{{"maxReceiveCount known", n, 1}, {"maxReceiveCount unknown", 0, n}} {
		t.Run(tt.name, func(t *testing.T) {
			log := &memoryFailures{}
			p := batch.New(failing(httpError{503}), &fakeChannel{}, batch.Options{Failures: log, MaxReceiveCount: tt.maxCount, Logger: slog.New(slog.DiscardHandler)})
			for i := 1; i <= n; i++ {
				if _, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{delivery("m-1", i)}}); err != nil {
					t.Fatal(err)
				}
			}
			f := log.byID["m-1"]
			if len(log.byID) != 1 || f.Failures != n || log.writes != tt.wantWrite || !f.FirstAt.Equal(time.UnixMilli(1800000000000)) {
				t.Fatalf("%d records, %d writes, record %+v", len(log.byID), log.writes, f)
			}
		})
	}
}

// A log that fails or hangs changes no record's outcome, and a hanging one
// is given up half a deadline margin before the invocation's deadline.
func TestFailureLogNeverChangesTheOutcome(t *testing.T) {
	for _, log := range []*memoryFailures{{err: errors.New("throttled")}, {block: true}} {
		p := batch.New(func(_ context.Context, msg events.SQSMessage) error {
			if msg.MessageId == "bad" {
				return errors.New("down")
			}
			return nil
		}, &fakeChannel{}, batch.Options{Failures: log, DeadlineMargin: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		start := time.Now()
		resp, err := p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{delivery("ok", 1), delivery("bad", 1)}})
		cancel()
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "bad" {
			t.Fatalf("resp = %+v, err = %v", resp, err)
		}
		if took := time.Since(start); took > 560*time.Millisecond {
			t.Fatalf("took %v: the write was not bounded by the deadline", took)
		}
	}
}
