package emf_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/idempotency"
)

// A consumer built on batch feeds its lane's alarms in two lines: the
// processor counts each record's outcome (CountOutcome), and the Lambda
// handler is the processor wrapped by a Recorder on stdout. The record
// handler adds what the idempotent receiver said (CountReceipt).
func Example() {
	getenv := func(k string) string { return map[string]string{"POWERTOOLS_SERVICE_NAME": "shipments"}[k] } // os.Getenv in Lambda
	once := &idempotency.Receiver{Store: idempotency.NewMemoryStore(), Scope: "shipments"}
	handle := func(ctx context.Context, msg events.SQSMessage) error {
		if msg.Body == "" {
			return batch.Reject("empty-body", "a shipment needs a body")
		}
		out, err := once.Do(ctx, msg.Body, msg.Body, func(context.Context) (string, error) { return "shipped", nil })
		emf.CountReceipt(ctx, emf.Receipt{Duplicate: out.Duplicate, Unrecorded: out.Unrecorded, InDoubt: out.InDoubt})
		return err
	}

	metrics := emf.NewRecorder(os.Stdout, emf.LoadConfig(getenv, "shipping"))
	// Concurrency 1 for a stable Output: run concurrently, the second
	// delivery of SHP-1 may find the first in progress (a transient failure)
	// rather than completed (a duplicate absorbed).
	p := batch.New(handle, &batchtest.InvalidChannel{}, batch.Options{Concurrency: 1, OnOutcome: emf.CountOutcome[batch.Outcome], Logger: slog.New(slog.DiscardHandler)})
	// In Lambda the invalid channel is batch.NewInvalidQueue(sqsClient, ...).
	lambdaHandler := emf.Wrap(metrics, p.Process) // lambda.Start(lambdaHandler)

	metrics.Now = func() time.Time { return time.UnixMilli(1796205600000) } // for a stable Output
	_, err := lambdaHandler(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "1", Body: "SHP-1"}, {MessageId: "2", Body: "SHP-1"}, {MessageId: "3", Body: ""},
	}})
	fmt.Println(err)
	// Output:
	// {"_aws":{"Timestamp":1796205600000,"CloudWatchMetrics":[{"Namespace":"Homing","Dimensions":[["Lane"]],"Metrics":[{"Name":"RecordsProcessed","Unit":"Count"},{"Name":"RecordsFailed","Unit":"Count"},{"Name":"RecordsInvalid","Unit":"Count"},{"Name":"DuplicatesAbsorbed","Unit":"Count"},{"Name":"CompletionsUnrecorded","Unit":"Count"},{"Name":"InDoubtTakeovers","Unit":"Count"}]}]},"Lane":"shipments","RecordsProcessed":3,"RecordsFailed":0,"RecordsInvalid":1,"DuplicatesAbsorbed":1,"CompletionsUnrecorded":0,"InDoubtTakeovers":0}
	// {"_aws":{"Timestamp":1796205600000,"CloudWatchMetrics":[{"Namespace":"Homing","Dimensions":[["Lane","Reason"]],"Metrics":[{"Name":"RecordsInvalid","Unit":"Count"}]}]},"Lane":"shipments","Reason":"empty-body","RecordsInvalid":1}
	// <nil>
}
