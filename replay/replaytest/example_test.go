package replaytest_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// A lane in memory, on a manual clock: a message its consumer fails twice
// is redriven to the DLQ as SQS would, and a replay.Engine run over the same
// MemoryQueue sends it back to its source queue.
func ExampleMemoryQueue() {
	ctx := context.Background()
	clock := replaytest.NewClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	q := replaytest.NewMemoryQueue(clock.Now)
	route := replay.Route{Name: "orders"}
	route.DLQURL, _ = q.CreateQueue("orders-dlq", nil)
	route.ParkingURL, _ = q.CreateQueue("orders-parking", nil)
	route.SourceURL, _ = q.CreateQueue("orders", map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, q.ARN(route.DLQURL)),
	})
	_, _ = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(route.SourceURL), MessageBody: aws.String(`{"orderId":"ORD-1"}`)})

	// The consumer receives the message twice and never deletes it: the
	// third receive finds it received maxReceiveCount times and redrives it.
	for range 3 {
		out, _ := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(route.SourceURL)})
		fmt.Println("received", len(out.Messages))
		clock.Advance(31 * time.Second)
	}
	fmt.Println("in the DLQ:", len(q.Messages(route.DLQURL)))

	clock.Advance(time.Hour) // past the first replay's backoff
	e := replay.New(q, replaytest.NewMemoryLedger(clock.Now), replay.Options{
		Logger: slog.New(slog.DiscardHandler), Now: clock.Now, Sleep: clock.Sleep,
	})
	s, err := e.Run(ctx, replay.Request{Routes: []replay.Route{route}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("replayed", s.Total.Replayed)
	back := q.Messages(route.SourceURL)
	meta, _, _, _ := replay.Read(back[0].MessageAttributes)
	fmt.Println("in the DLQ:", len(q.Messages(route.DLQURL)), "in the source queue:", len(back), *back[0].Body, "replay count", meta.ReplayCount)
	// Output:
	// received 1
	// received 1
	// received 0
	// in the DLQ: 1
	// replayed 1
	// in the DLQ: 0 in the source queue: 1 {"orderId":"ORD-1"} replay count 1
}
