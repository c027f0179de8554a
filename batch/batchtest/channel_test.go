package batchtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
)

const queueARN = "arn:aws:sqs:eu-west-1:123456789012:shipments"

// handle rejects a body "bad", fails "down" transiently, accepts the rest.
func handle(_ context.Context, msg events.SQSMessage) error {
	switch msg.Body {
	case "bad":
		return fmt.Errorf("parse %s: %w", msg.MessageId, batch.Reject("bad-shipment", "carrier is missing"))
	case "down":
		return errors.New("carrier API: 503")
	}
	return nil
}

func event(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: b, EventSourceARN: queueARN})
	}
	return ev
}

func process(t *testing.T, ch batch.InvalidChannel, ev events.SQSEvent) []string {
	t.Helper()
	p := batch.New(handle, ch, batch.Options{Concurrency: 4, Logger: slog.New(slog.DiscardHandler)})
	resp, err := p.Process(context.Background(), ev)
	if err != nil {
		t.Fatalf("Process: %v", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

func ids(rs []batchtest.Rejected) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Message.MessageId)
	}
	slices.Sort(out)
	return out
}

func TestInvalidChannelRecordsWhatTheProcessorRejects(t *testing.T) {
	ch := &batchtest.InvalidChannel{}
	failed := process(t, ch, event("ok", "bad", "down", "bad"))
	if !slices.Equal(failed, []string{"m2"}) {
		t.Fatalf("failures = %v, want the transient one only", failed)
	}
	got := ch.Rejected()
	if want := []string{"m1", "m3"}; !slices.Equal(ids(got), want) {
		t.Fatalf("rejected %v, want %v", ids(got), want)
	}
	for _, r := range got {
		if r.Rejection != (batch.Rejection{Reason: "bad-shipment", Detail: "carrier is missing"}) || r.Message.Body != "bad" || r.Message.EventSourceARN != queueARN {
			t.Errorf("recorded %+v", r)
		}
	}
	if want := map[string]int{"bad-shipment": 2}; !maps.Equal(ch.Reasons(), want) {
		t.Fatalf("reasons = %v, want %v", ch.Reasons(), want)
	}
}

// A channel told to fail stores nothing, so the processor leaves the
// records to SQS; told to accept again, it records the redelivery.
func TestInvalidChannelFailWith(t *testing.T) {
	ch := &batchtest.InvalidChannel{}
	throttled := errors.New("throttled")
	ch.FailWith(throttled)
	if failed := process(t, ch, event("bad", "ok")); !slices.Equal(failed, []string{"m0"}) {
		t.Fatalf("failures = %v, want the rejected record, not published", failed)
	}
	if n := len(ch.Rejected()); n != 0 {
		t.Fatalf("%d records recorded while failing", n)
	}
	err := ch.Publish(context.Background(), events.SQSMessage{MessageId: "m-9"}, batch.Rejection{Reason: "r"})
	if !errors.Is(err, throttled) || !strings.Contains(err.Error(), "m-9") {
		t.Fatalf("err = %v, want the failure wrapped with the message id", err)
	}

	ch.FailWith(nil)
	if failed := process(t, ch, event("bad", "ok")); len(failed) != 0 {
		t.Fatalf("failures = %v after FailWith(nil)", failed)
	}
	if got := ids(ch.Rejected()); !slices.Equal(got, []string{"m0"}) {
		t.Fatalf("rejected %v, want the redelivered record", got)
	}
}

func TestInvalidChannelRefusesADoneContext(t *testing.T) {
	ch := &batchtest.InvalidChannel{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ch.Publish(ctx, events.SQSMessage{MessageId: "m-1"}, batch.Rejection{Reason: "r"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(ch.Rejected()); n != 0 {
		t.Fatalf("%d records recorded on a done context", n)
	}
}

// Run with -race: publications, reads and FailWith from many goroutines.
func TestInvalidChannelIsSafeForConcurrentUse(t *testing.T) {
	ch := &batchtest.InvalidChannel{}
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			msg := events.SQSMessage{MessageId: fmt.Sprintf("m%02d", i)}
			if err := ch.Publish(context.Background(), msg, batch.Rejection{Reason: fmt.Sprintf("r%d", i%2)}); err != nil {
				t.Errorf("publish %s: %v", msg.MessageId, err)
			}
			_ = ch.Rejected()
			_ = ch.Reasons()
		})
	}
	wg.Go(func() { ch.FailWith(nil) })
	wg.Wait()
	if got := ch.Reasons(); got["r0"] != n/2 || got["r1"] != n/2 {
		t.Fatalf("reasons = %v, want %d of each", got, n/2)
	}
	if got := ids(ch.Rejected()); len(slices.Compact(got)) != n {
		t.Fatalf("%d distinct records, want %d", len(got), n)
	}
}

func TestInvalidChannelRejectedIsACopy(t *testing.T) {
	ch := &batchtest.InvalidChannel{}
	if err := ch.Publish(context.Background(), events.SQSMessage{MessageId: "m-1"}, batch.Rejection{Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	got := ch.Rejected()
	got[0].Rejection.Reason = "changed"
	if again := ch.Rejected(); again[0].Rejection.Reason != "r" {
		t.Fatalf("the channel's record changed through the returned slice: %+v", again[0])
	}
}
