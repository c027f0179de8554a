package deadletter_test

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// A lane around a team's existing consumer, here a Node.js function, with
// the team's source queue and pager topic. The lane wires the queue to the
// function (partial batch failures, batch size, max concurrency), grants it
// the invalid queue and the idempotency table, sets its INVALID_QUEUE_URL,
// IDEMPOTENCY_TABLE and CONSUMER_NAME, and declares the outputs
// (PaymentsSourceQueueUrl, PaymentsDeadLetterQueueUrl...) that
// `dlq --lane payments` reads. The replay function's bootstrap comes from
// homing itself:
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc \
//	  -o bin/replay/bootstrap github.com/homingdlq/homing/functions/replay
func ExampleNewLane_existingConsumer() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Payments"), nil)

	consumer := awslambda.NewFunction(stack, jsii.String("Consumer"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromAsset(jsii.String("consumer/dist"), nil),
		Timeout: awscdk.Duration_Seconds(jsii.Number(20)),
	})
	queue := awssqs.NewQueue(stack, jsii.String("Captured"), &awssqs.QueueProps{
		QueueName:           jsii.String("payments-captured.fifo"), // the DLQ's allow-policy names it
		Fifo:                jsii.Bool(true),
		VisibilityTimeout:   awscdk.Duration_Minutes(jsii.Number(2)),       // at least 6x the consumer's timeout
		MaxMessageSizeBytes: jsii.Number(deadletter.SourceMaxMessageBytes), // room for the lane's metadata (unset, the lane sets it and warns)
		Encryption:          awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:          jsii.Bool(true),
	})
	pager := awssns.Topic_FromTopicArn(stack, jsii.String("Pager"), jsii.String("arn:aws:sns:eu-west-1:123456789012:pager"))

	lane := deadletter.NewLane(stack, "Payments", &deadletter.LaneProps{
		CodeDir: jsii.String("bin"), // bin/replay/bootstrap
		Queues: deadletter.QueuesProps{
			SourceQueue:     queue, // FIFO: the lane's DLQ, invalid and parking queues are FIFO too
			MaxReceiveCount: jsii.Number(5),
		},
		Consumer: deadletter.ConsumerProps{
			Function: consumer,
			Records:  deadletter.ConsumerWritesNoRecords, // a Node.js consumer without homing's completion records
			// nor package fifo's protocol: it keeps SQS's order only (a FIFO
			// lane keeps each group's order through failure by default).
			GroupOrder: jsii.String(deadletter.GroupOrderOff),
		},
		Alarms: deadletter.AlarmProps{Topic: pager},
		Replay: deadletter.ReplayProps{
			HealthURL: jsii.String("https://ledger.example.com"), // replay holds while GET /health fails
		},
	})

	// The on-call role may inspect, peek, replay, audit and park.
	oncall := awsiam.Role_FromRoleArn(stack, jsii.String("OnCall"), jsii.String("arn:aws:iam::123456789012:role/payments-oncall"), nil)
	lane.GrantOperator(oncall)
	app.Synth(nil)
}

// A lane that builds its consumer from a Go bootstrap, with the production
// defaults, then a fast one for an emulator.
func ExampleNewLane() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	// The lane declares its outputs itself: InvoiceSourceQueueUrl...
	deadletter.NewLane(stack, "Invoice", &deadletter.LaneProps{
		CodeDir: jsii.String("../bin"), // bin/{consumer,replay}/bootstrap from `make build ARCH=arm64`
		Consumer: deadletter.ConsumerProps{
			Records:     deadletter.ConsumerWritesRecords, // the idempotency package's records, keyed by Key
			Key:         jsii.String("orderId"),
			Environment: map[string]string{"TAX_SERVICE_URL": "https://tax.example.com"},
		},
		Replay: deadletter.ReplayProps{HealthURL: jsii.String("https://tax.example.com")},
	})

	deadletter.NewLane(stack, "InvoiceFast", &deadletter.LaneProps{
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		Queues: deadletter.QueuesProps{
			MaxReceiveCount:   jsii.Number(3),
			VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(30)),
		},
		Consumer: deadletter.ConsumerProps{
			Records:     deadletter.ConsumerWritesRecords,
			Key:         jsii.String("orderId"),
			Timeout:     awscdk.Duration_Seconds(jsii.Number(5)),
			Environment: map[string]string{"TAX_SERVICE_URL": "http://127.0.0.1:4580"},
		},
		Replay: deadletter.ReplayProps{
			Schedule:    jsii.String("rate(1 minute)"),
			Timeout:     awscdk.Duration_Seconds(jsii.Number(30)), // within the schedule: runs do not overlap
			BackoffBase: awscdk.Duration_Seconds(jsii.Number(2)),
			BackoffMax:  awscdk.Duration_Seconds(jsii.Number(10)),
		},
	})
	app.Synth(nil)
}

// A FIFO lane whose source queue and DLQ use SQS's high throughput mode,
// and whose consumer is traced, through the pass-through overrides: the
// lane builds each resource from the override with its own settings on top
// (an override that sets one of them, a queue's retention say, is refused
// at synth with the prop that sets it).
func ExampleNewLane_overrides() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Payments"), nil)

	highThroughput := &awssqs.QueueProps{
		DeduplicationScope:  awssqs.DeduplicationScope_MESSAGE_GROUP,
		FifoThroughputLimit: awssqs.FifoThroughputLimit_PER_MESSAGE_GROUP_ID,
	}
	deadletter.NewLane(stack, "Payments", &deadletter.LaneProps{
		Fifo:    jsii.Bool(true),
		CodeDir: jsii.String("bin"), // bin/{consumer,replay}/bootstrap
		Queues: deadletter.QueuesProps{
			QueueProps:           highThroughput,
			DeadLetterQueueProps: highThroughput,
		},
		Consumer: deadletter.ConsumerProps{
			Records:       deadletter.ConsumerWritesRecords,
			Key:           jsii.String("paymentId"),
			FunctionProps: &awslambda.FunctionProps{Tracing: awslambda.Tracing_ACTIVE},
		},
	})
	app.Synth(nil)
}
