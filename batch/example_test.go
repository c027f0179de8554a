package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
)

// shipmentInvalid marks a record that will never be valid.
type shipmentInvalid struct{ detail string }

func (e shipmentInvalid) Error() string                    { return "bad-shipment: " + e.detail }
func (e shipmentInvalid) Invalid() (reason, detail string) { return "bad-shipment", e.detail }

type printChannel struct{}

func (printChannel) Publish(_ context.Context, msg events.SQSMessage, r batch.Rejection) error {
	fmt.Printf("invalid %s: %s (%s)\n", msg.MessageId, r.Reason, r.Detail)
	return nil
}

// Plug your own record logic into the processor: return nil for success, an
// error with an Invalid() method for messages that will never be valid, any
// other error to have SQS deliver the record again. In a Lambda main:
//
//	lambda.Start(p.Process)
//
// with batch.NewInvalidQueue(sqsClient, invalidQueueURL, "shipping", nil) as
// the invalid channel.
func ExampleNew() {
	handle := func(ctx context.Context, msg events.SQSMessage) error {
		var s struct{ Carrier string }
		if err := json.Unmarshal([]byte(msg.Body), &s); err != nil || s.Carrier == "" {
			return shipmentInvalid{"carrier is missing"}
		}
		if s.Carrier == "slowpost" {
			return errors.New("carrier API timed out") // transient: SQS retries it
		}
		return nil
	}
	p := batch.New(handle, printChannel{}, batch.Options{Concurrency: 1, Logger: slog.New(slog.DiscardHandler)})
	resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"Carrier":"fastpost"}`},
		{MessageId: "m2", Body: `{}`},
		{MessageId: "m3", Body: `{"Carrier":"slowpost"}`},
	}})
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// invalid m2: bad-shipment (carrier is missing)
	// {"batchItemFailures":[{"itemIdentifier":"m3"}]}
}
