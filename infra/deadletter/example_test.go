package deadletter_test

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// A lane with the production defaults, then a fast one for an emulator.
func ExampleNewLane() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	// The lane declares its outputs itself: InvoiceSourceQueueUrl...
	deadletter.NewLane(stack, "Invoice", &deadletter.LaneProps{
		HealthURL: jsii.String("https://tax.example.com"),
		CodeDir:   jsii.String("../bin"), // bin/{consumer,replay}/bootstrap from `make build ARCH=arm64`
	})

	deadletter.NewLane(stack, "InvoiceFast", &deadletter.LaneProps{
		HealthURL:         jsii.String("http://127.0.0.1:4580"),
		MaxReceiveCount:   jsii.Number(3),
		ConsumerTimeout:   awscdk.Duration_Seconds(jsii.Number(5)),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(30)),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
		Replay: &deadletter.ReplayProps{
			Schedule:    jsii.String("rate(1 minute)"),
			Timeout:     awscdk.Duration_Seconds(jsii.Number(30)),
			BackoffBase: awscdk.Duration_Seconds(jsii.Number(2)),
			BackoffMax:  awscdk.Duration_Seconds(jsii.Number(10)),
		},
	})
	app.Synth(nil)
}
