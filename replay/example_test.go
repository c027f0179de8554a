package replay_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// One run over a DLQ holding an order that failed an hour ago and one that
// was replayed three times already: the first goes back to its source, the
// second to the parking queue.
func ExampleEngine_Run() {
	clock := replaytest.NewClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	q := replaytest.NewMemoryQueue(clock.Now) // in production: the *sqs.Client
	route := replay.Route{Name: "orders"}
	route.DLQURL, _ = q.CreateQueue("orders-dlq", nil)
	route.SourceURL, _ = q.CreateQueue("orders", nil)
	route.ParkingURL, _ = q.CreateQueue("orders-parking", nil)

	ctx := context.Background()
	_, _ = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(route.DLQURL), MessageBody: aws.String(`{"orderId":"ORD-1"}`)})
	thrice, _ := envelope.Pack(nil, replay.AttributeName, replay.Metadata{ReplayCount: 3, OriginalMessageID: "m-0"})
	_, _ = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(route.DLQURL), MessageBody: aws.String(`{"orderId":"ORD-2"}`), MessageAttributes: thrice})
	clock.Advance(time.Hour)

	e := replay.New(q, replay.NewMemoryLedger(clock.Now), replay.Options{
		Logger: slog.New(slog.DiscardHandler), Now: clock.Now, Sleep: clock.Sleep,
	})
	s, err := e.Run(ctx, replay.Request{Routes: []replay.Route{route}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("examined %d, replayed %d, parked %v, stop: %s\n", s.Total.Examined, s.Total.Replayed, s.Total.Parked, s.Routes[0].StopReason)
	// Output: examined 2, replayed 1, parked map[replay-exhausted:1], stop: drained
}
