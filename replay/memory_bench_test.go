package replay_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// streamQueue is a DLQ of n messages that exist only while they are
// received: it keeps no state per message, so the memory measured is the
// engine's. Sends, deletes and visibility changes succeed. Every sampleEvery
// receives it calls sample.
type streamQueue struct {
	mu          sync.Mutex // the engine's workers call it concurrently
	n, next     int
	sentAt      string
	sample      func()
	sampleEvery int
	receives    int
	sent        int
}

func newStreamQueue(n int, sentAt time.Time) *streamQueue {
	return &streamQueue{n: n, sentAt: strconv.FormatInt(sentAt.UnixMilli(), 10), sampleEvery: 200}
}

func (s *streamQueue) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.receives++
	if s.sample != nil && s.receives%s.sampleEvery == 0 {
		s.sample()
	}
	out := &sqs.ReceiveMessageOutput{}
	for range min(int(in.MaxNumberOfMessages), s.n-s.next) {
		id := fmt.Sprintf("m-%08d", s.next)
		s.next++
		out.Messages = append(out.Messages, types.Message{
			MessageId: aws.String(id), ReceiptHandle: aws.String("rh-" + id),
			Body: aws.String(order("ORD-" + id)),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"traceId": {DataType: aws.String("String"), StringValue: aws.String("trace-" + id)},
			},
			Attributes: map[string]string{"SentTimestamp": s.sentAt, "ApproximateReceiveCount": "1"},
		})
	}
	return out, nil
}

func (s *streamQueue) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		s.sent++
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String("new")})
	}
	return out, nil
}

func (s *streamQueue) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (s *streamQueue) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (s *streamQueue) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (s *streamQueue) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"ApproximateNumberOfMessages": strconv.Itoa(s.n - s.next), "ApproximateNumberOfMessagesNotVisible": "0", "MessageRetentionPeriod": "1209600",
	}}, nil
}

// nopLedger keeps nothing (a ledger keeps state per message by design; its
// memory is the database's, not the engine's).
type nopLedger struct{}

func (nopLedger) Mark(context.Context, record.Message) (record.Message, bool, error) {
	return record.Message{}, true, nil
}
func (nopLedger) History(context.Context, string) ([]record.Message, error) {
	return nil, nil
}
func (nopLedger) MarkBatch(_ context.Context, recs []record.Message) []record.Marked {
	out := make([]record.Marked, len(recs))
	for i := range out {
		out[i].OK = true
	}
	return out
}
func (nopLedger) PutRun(context.Context, replay.Summary, time.Time) error { return nil }
func (nopLedger) LastRun(context.Context) (replay.Summary, bool, error) {
	return replay.Summary{}, false, nil
}
func (nopLedger) Runs(context.Context, int) ([]replay.Summary, error) { return nil, nil }

// streamRun replays n messages through the engine and returns the largest
// live heap (after a collection) seen every 2,000 messages while it ran.
func streamRun(tb testing.TB, n int) (peak uint64, replayed int) {
	tb.Helper()
	clock := replaytest.NewClock(time.Now())
	q := newStreamQueue(n, clock.Now().Add(-24*time.Hour))
	var ms runtime.MemStats
	q.sample = func() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	e := replay.New(q, nopLedger{}, replay.Options{
		Logger: slog.New(slog.DiscardHandler), Now: clock.Now, Sleep: clock.Sleep, Rate: replay.MaxRate, MaxPerRun: n,
	})
	runtime.GC()
	s, err := e.Run(context.Background(), replay.Request{Routes: []replay.Route{{Name: "orders", DLQURL: "dlq", SourceURL: "src", ParkingURL: "park"}}})
	if err != nil {
		tb.Fatal(err)
	}
	return peak, s.Total.Replayed
}

// The engine's memory does not grow with the number of messages: the live
// heap while streaming 100,000 messages is that of 10,000.
func TestEngineMemoryIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 110,000 messages")
	}
	small, n1 := streamRun(t, 10_000)
	large, n2 := streamRun(t, 100_000)
	t.Logf("peak live heap: %.2f MiB for 10,000 messages, %.2f MiB for 100,000", float64(small)/(1<<20), float64(large)/(1<<20))
	if n1 < 9_990 || n2 < 99_900 {
		t.Fatalf("replayed %d and %d", n1, n2)
	}
	const slack = 256 << 10
	if large > small+slack {
		t.Fatalf("live heap grew from %d to %d bytes with 10x the messages", small, large)
	}
}

// BenchmarkEngineMemory streams 100,000 messages per operation through the
// engine (a stateless stand-in for SQS and the ledger, so that only the
// engine is measured) and reports bytes and allocations per message and the
// peak live heap (sampled after a collection every 2,000 messages, which
// also slows it down).
func BenchmarkEngineMemory(b *testing.B) {
	const n = 100_000
	b.ReportAllocs()
	var before, after runtime.MemStats
	var peak uint64
	runtime.ReadMemStats(&before)
	ops := 0
	for b.Loop() {
		p, replayed := streamRun(b, n)
		if replayed < n*999/1000 {
			b.Fatalf("replayed %d of %d", replayed, n)
		}
		peak = max(peak, p)
		ops++
	}
	runtime.ReadMemStats(&after)
	msgs := float64(ops * n)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/msgs, "B/msg")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/msgs, "allocs/msg")
	b.ReportMetric(float64(peak)/(1<<20), "peak-live-heap-MiB")
}
