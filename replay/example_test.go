package replay_test

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

	ledger := replaytest.NewMemoryLedger(clock.Now) // in production: dynamo.NewLedger

	ctx := context.Background()
	_, _ = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(route.DLQURL), MessageBody: aws.String(`{"orderId":"ORD-1"}`)})
	// The metadata the engine wrote on a third replay: sealed with the
	// ledger's key for the body and the source queue it was sent to.
	key, _ := replay.SealKey(ctx, ledger, clock.Now())
	body := `{"orderId":"ORD-2"}`
	thrice, _ := replay.Attributes(nil, replay.Metadata{ReplayCount: 3, OriginalMessageID: "m-0"}.Sealed(key, body, route.SourceURL))
	_, _ = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(route.DLQURL), MessageBody: aws.String(body), MessageAttributes: thrice})
	clock.Advance(time.Hour)

	e := replay.New(q, ledger, replay.Options{
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
