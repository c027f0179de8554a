//go:build e2e

package replay_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/emulatortest"
	"github.com/homingdlq/homing/replay"
)

// BenchmarkReplayThroughput moves batches of messages from a DLQ back to
// their source on the emulator, over HTTP with the real SDK clients, with
// the engine (batch calls, DynamoDB ledger, metadata) and with the naive
// mover of blog-post scripts (receive one, send one, delete one). One
// operation moves one batch; the msgs/s metric is the figure to compare,
// from the same run:
//
//	make emulator-up
//	AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
//	  go test -tags e2e -run '^$' -bench BenchmarkReplayThroughput -benchtime 3x -count 6 ./replay/
func BenchmarkReplayThroughput(b *testing.B) {
	b.Run("local", func(b *testing.B) { benchmarkThroughput(b, 0) })
	// The emulator answers in about a millisecond, from the same two cores
	// the benchmark runs on: it rewards doing fewer calls. In a region a
	// call takes milliseconds of network; this adds a round trip to every
	// call (both movers alike) to show what batching and concurrency buy.
	b.Run("rtt=10ms", func(b *testing.B) { benchmarkThroughput(b, 10*time.Millisecond) })
}

// slowTransport delays every request by a fixed round trip.
type slowTransport struct{ rtt time.Duration }

func (s slowTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(s.rtt)
	return http.DefaultTransport.RoundTrip(r)
}

func benchmarkThroughput(b *testing.B, rtt time.Duration) {
	const batch = 200
	cfg := emulatortest.Config(b)
	if rtt > 0 {
		cfg.HTTPClient = &http.Client{Transport: slowTransport{rtt}}
	}
	q := sqs.NewFromConfig(cfg)
	db := dynamodb.NewFromConfig(cfg)
	dlq, _ := emulatortest.Queue(b, q, emulatortest.Name(b, "bench-dlq"))
	source, _ := emulatortest.Queue(b, q, emulatortest.Name(b, "bench-source"))
	parking, _ := emulatortest.Queue(b, q, emulatortest.Name(b, "bench-parking"))
	ledger := dynamo.NewLedger(db, emulatortest.LedgerTable(b, db), time.Now)
	ctx := context.Background()

	fill := func(b *testing.B) {
		b.StopTimer()
		defer b.StartTimer()
		purge(b, q, source)
		for i := 0; i < batch; i += 10 {
			var entries []types.SendMessageBatchRequestEntry
			for j := range 10 {
				body := fmt.Sprintf(`{"eventType":"order.created","version":1,"orderId":"ORD-BENCH-%d-%d-%d"}`, time.Now().UnixNano(), i, j)
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(body)})
			}
			if _, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq), Entries: entries}); err != nil {
				b.Fatal(err)
			}
		}
	}
	report := func(b *testing.B, elapsed time.Duration) {
		b.ReportMetric(float64(batch*b.N)/elapsed.Seconds(), "msgs/s")
	}

	b.Run("engine", func(b *testing.B) {
		e := replay.New(q, ledger, replay.Options{
			Policy: replay.Policy{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}, Rate: replay.MaxRate, MaxPerRun: batch,
			RefillThreshold: 1 << 30, // every iteration refills the DLQ on purpose
			Logger:          slog.New(slog.DiscardHandler),
		})
		route := replay.Route{Name: "bench", DLQURL: dlq, SourceURL: source, ParkingURL: parking}
		var elapsed time.Duration
		for b.Loop() {
			fill(b)
			start := time.Now()
			sum, err := e.Run(ctx, replay.Request{Routes: []replay.Route{route}})
			elapsed += time.Since(start)
			if err != nil || sum.Total.Replayed != batch {
				b.Fatalf("replayed %d of %d: %v (%+v)", sum.Total.Replayed, batch, err, sum.Routes)
			}
		}
		report(b, elapsed)
	})
	b.Run("naive", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			fill(b)
			start := time.Now()
			if n := naiveMove(b, q, dlq, source); n != batch {
				b.Fatalf("moved %d of %d", n, batch)
			}
			elapsed += time.Since(start)
		}
		report(b, elapsed)
	})
}

// naiveMove is the replay script people copy: one message at a time.
func naiveMove(b *testing.B, q *sqs.Client, from, to string) int {
	ctx := context.Background()
	moved := 0
	for {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(from), MaxNumberOfMessages: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			b.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return moved
		}
		m := out.Messages[0]
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(to), MessageBody: m.Body, MessageAttributes: m.MessageAttributes}); err != nil {
			b.Fatal(err)
		}
		if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(from), ReceiptHandle: m.ReceiptHandle}); err != nil {
			b.Fatal(err)
		}
		moved++
	}
}

func purge(b *testing.B, q *sqs.Client, url string) {
	if _, err := q.PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		b.Fatal(err)
	}
}
