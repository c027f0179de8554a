package batch_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
)

// mustPanic returns the value build panicked with, or fails the test when
// it returned.
func mustPanic(t *testing.T, build func()) (v any) {
	t.Helper()
	defer func() { v = recover() }()
	build()
	t.Fatal("built without a panic")
	return nil
}

// A constructor refuses, at the cold start, an argument that would fail
// every record later, with a message that names it.
func TestConstructorsRefuseWhatWouldFailEveryRecord(t *testing.T) {
	handle := func(context.Context, events.SQSMessage) error { return nil }
	tests := []struct {
		name  string
		build func()
		want  string
	}{
		{"nil handler", func() { batch.New(nil, &fakeChannel{}, batch.Options{}) }, "batch: New: nil Handler"},
		{"nil invalid channel", func() { batch.New(handle, nil, batch.Options{}) }, "batch: New: nil InvalidChannel"},
		{"nil invalid queue", func() { batch.New(handle, (*batch.InvalidQueue)(nil), batch.Options{}) }, "batch: New: nil InvalidChannel"},
		{"nil sender", func() { batch.NewInvalidQueue(nil, "https://sqs.local/000/x-invalid", "c", nil) }, "batch: NewInvalidQueue: nil Sender"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustPanic(t, tt.build); got != tt.want {
				t.Fatalf("panic = %v, want %q", got, tt.want)
			}
		})
	}
}

// Both arguments set, New builds a processor whatever Options says.
func TestNewAcceptsAHandlerAndAChannel(t *testing.T) {
	p := batch.New(func(context.Context, events.SQSMessage) error { return nil }, &fakeChannel{}, batch.Options{Concurrency: -1, DeadlineMargin: -1, Logger: slog.New(slog.DiscardHandler)})
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1"}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp = %+v, err = %v, want the record acknowledged", resp, err)
	}
}
