package batchtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/fifo/fifotest"
)

// A consumer's unit test: the processor runs the consumer's handler over a
// batch, and the in-memory channel says what was rejected and why. Told to
// fail, the channel stores nothing and the rejected record is left to SQS,
// as with an invalid queue that is unavailable.
func ExampleInvalidChannel() {
	handle := func(_ context.Context, msg events.SQSMessage) error {
		if msg.Body == "{}" {
			return batch.Reject("missing-carrier", "the shipment names no carrier")
		}
		return nil
	}
	ch := &batchtest.InvalidChannel{}
	p := batch.New(handle, ch, batch.Options{Concurrency: 1, Logger: slog.New(slog.DiscardHandler)})
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"carrier":"fastpost"}`},
		{MessageId: "m2", Body: `{}`},
	}}

	resp, _ := p.Process(context.Background(), ev)
	fmt.Println("failures:", len(resp.BatchItemFailures))
	for _, r := range ch.Rejected() {
		fmt.Println("rejected", r.Message.MessageId, r.Rejection.Reason, "-", r.Rejection.Detail)
	}

	ch.FailWith(errors.New("throttled"))
	resp, _ = p.Process(context.Background(), ev)
	fmt.Println("failures:", resp.BatchItemFailures[0].ItemIdentifier, "rejected:", len(ch.Rejected()))
	// Output:
	// failures: 0
	// rejected m2 missing-carrier - the shipment names no carrier
	// failures: m2 rejected: 1
}

// A FIFO lane whose consumer keeps each account in order: a payment that
// can never be valid parks its account (to the invalid queue), the
// account's later payments wait in the parking queue while other accounts
// go on, and the operator's release applies them in order.
func ExampleLane_Keeper() {
	ctx := context.Background()
	lane := batchtest.NewLane("payments.fifo", batchtest.LaneOptions{MaxReceiveCount: 100})
	var applied []string
	handle := func(_ context.Context, msg events.SQSMessage) error {
		if msg.Body == "acct-1: -5" {
			return batch.Reject("negative-amount", "a payment is positive")
		}
		applied = append(applied, msg.Body)
		return nil
	}
	parks := &fifotest.Memory{}
	p := batch.New(handle, lane.Invalid("payments"), batch.Options{Groups: lane.Keeper(parks),
		Logger: slog.New(slog.DiscardHandler), Now: lane.Clock.Now})
	for _, body := range []string{"acct-1: -5", "acct-1: 10", "acct-2: 7", "acct-1: 20"} {
		_, _ = lane.Publish(ctx, body, body[:6])
	}
	_ = lane.Drain(ctx, p.Process)
	list, _ := parks.List(ctx)
	fmt.Println("applied:", applied, "parked:", list[0].Group, list[0].Reason, list[0].Waiting())

	for {
		step, err := lane.Releaser(parks).Release(ctx, "acct-1")
		if err != nil || step.Done {
			break
		}
		_ = lane.Drain(ctx, p.Process)
	}
	fmt.Println("applied:", applied, "invalid:", len(lane.Queue.Messages(lane.InvalidURL)))
	// Output:
	// applied: [acct-2: 7] parked: acct-1 invalid: negative-amount 2
	// applied: [acct-2: 7 acct-1: 10 acct-1: 20] invalid: 1
}
