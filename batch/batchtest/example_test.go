package batchtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
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
