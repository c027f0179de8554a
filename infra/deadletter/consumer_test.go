package deadletter_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/settings"
)

// nodeConsumer is a team's own consumer in another runtime, with a timeout
// of 20 s and a variable of its own.
func nodeConsumer(scope awscdk.Stack) awslambda.Function {
	return awslambda.NewFunction(scope, jsii.String("PaymentsConsumer"), &awslambda.FunctionProps{
		Runtime:     awslambda.Runtime_NODEJS_22_X(),
		Handler:     jsii.String("index.handler"),
		Code:        awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({ batchItemFailures: [] });")),
		Timeout:     awscdk.Duration_Seconds(jsii.Number(20)),
		Environment: &map[string]*string{"OWN": jsii.String("kept")},
	})
}

// withConsumer: a lane of the team's Node.js consumer.
var withConsumer = &fixture{props: func() *deadletter.LaneProps { return nil }}

func consumerLane(t *testing.T) *synthesized {
	t.Helper()
	withConsumer.once.Do(func() {
		defer func() { withConsumer.err = recover() }()
		stack := newStack()
		fn := nodeConsumer(stack)
		p := baseProps()
		p.Consumer.Function = fn
		p.Consumer.BatchSize = jsii.Number(7)
		p.Consumer.MaxConcurrency = jsii.Number(3)
		withConsumer.s = synthesize(stack, deadletter.NewLane(stack, "Payments", p))
	})
	if withConsumer.err != nil {
		t.Fatalf("synthesize: %v", withConsumer.err)
	}
	return withConsumer.s
}

// TestAnyConsumer: the lane wires a function it did not build, in any
// runtime: the event source mapping, the grants, the environment, the
// visibility timeout from the function's own timeout, the outputs.
func TestAnyConsumer(t *testing.T) {
	s := consumerLane(t)
	tpl := s.template
	fn := s.ref(s.lane.Consumer().FunctionName())
	if !strings.HasPrefix(fn, "PaymentsConsumer") {
		t.Fatalf("Consumer() is %s, want the team's function", fn)
	}
	source := s.ref(s.lane.SourceQueue().QueueArn())
	check(t, "only the team's consumer and the replay function, no log retention function", func() {
		tpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(2))
		tpl.ResourceCountIs(jsii.String("Custom::LogRetention"), jsii.Number(0))
	})
	check(t, "event source mapping with partial batch failures, batch size and max concurrency", func() {
		tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(1))
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(obj{
			"EventSourceArn":        getAtt(source, "Arn"),
			"FunctionName":          refTo(fn),
			"FunctionResponseTypes": arr{"ReportBatchItemFailures"},
			"BatchSize":             7,
			"ScalingConfig":         obj{"MaximumConcurrency": 3},
		}))
	})
	check(t, "visibility 6x the function's own timeout", func() {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(obj{"VisibilityTimeout": 120, "RedrivePolicy": assertions.Match_AnyValue()}))
	})
	check(t, "the lane's variables beside the function's own", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), like(obj{
			"Runtime": "nodejs22.x",
			"Environment": obj{"Variables": assertions.Match_ObjectEquals(&obj{
				"OWN":                          "kept",
				"INVALID_QUEUE_URL":            refTo(s.ref(s.lane.InvalidQueue().QueueArn())),
				"IDEMPOTENCY_TABLE":            refTo(s.ref(s.lane.IdempotencyTable().TableName())),
				"CONSUMER_NAME":                "payments",
				"KEY_EXPRESSION":               "orderId",
				"MAX_RECEIVE_COUNT":            "10", // the redrive's: the failure record's delivery
				"FAILURE_RECORDS":              "on", // by default
				"POWERTOOLS_SERVICE_NAME":      "Test/Payments",
				"POWERTOOLS_METRICS_NAMESPACE": "Homing",
			})},
		}))
	})
	role := s.ref(s.lane.ConsumerRole().RoleName())
	var actions []string
	for _, r := range s.resources {
		if r["Type"] != "AWS::IAM::Policy" || !strings.Contains(mustJSON(props(r)["Roles"]), role) {
			continue
		}
		for _, st := range props(r)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			for _, a := range asList(st.(map[string]any)["Action"]) {
				actions = append(actions, a.(string)+" on "+mustJSON(st.(map[string]any)["Resource"]))
			}
		}
	}
	all := strings.Join(actions, "\n")
	for _, want := range []struct{ action, resource string }{
		{"sqs:ReceiveMessage", source},
		{"sqs:DeleteMessage", source},
		{"sqs:SendMessage", s.ref(s.lane.InvalidQueue().QueueArn())},
		{"dynamodb:PutItem", s.ref(s.lane.IdempotencyTable().TableName())},
		{"dynamodb:DeleteItem", s.ref(s.lane.IdempotencyTable().TableName())},
	} {
		found := false
		for _, a := range actions {
			if strings.HasPrefix(a, want.action+" on ") && strings.Contains(a, want.resource) {
				found = true
			}
		}
		if !found {
			t.Errorf("the team's consumer role lacks %s on %s; it has:\n%s", want.action, want.resource, all)
		}
	}
	for _, forbidden := range []string{s.ref(s.lane.DeadLetterQueue().QueueArn()), s.ref(s.lane.ParkingQueue().QueueArn()), s.ref(s.lane.LedgerTable().TableName())} {
		if strings.Contains(all, forbidden) {
			t.Errorf("the consumer may act on %s:\n%s", forbidden, all)
		}
	}
	check(t, "the consumer outputs name the team's function", func() {
		tpl.HasOutput(jsii.String(settings.OutputID("payments", settings.OutputConsumerFunctionName)), like(obj{"Value": refTo(fn)}))
	})
	check(t, "the team's function carries the lane's tags", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), like(obj{
			"Runtime": "nodejs22.x",
			"Tags": arrayWith(
				obj{"Key": settings.TagLane, "Value": "payments"},
				obj{"Key": settings.TagRole, "Value": settings.RoleConsumer},
			),
		}))
	})
}

// TestImportedConsumer: a function imported by ARN, with its role, gets the
// mapping and the grants; the lane needs its timeout and cannot set its
// environment.
func TestImportedConsumer(t *testing.T) {
	imported := func(stack awscdk.Stack) awslambda.IFunction {
		return awslambda.Function_FromFunctionAttributes(stack, jsii.String("LedgerFunction"), &awslambda.FunctionAttributes{
			FunctionArn:     jsii.String("arn:aws:lambda:us-east-1:123456789012:function:ledger"),
			Role:            awsiam.Role_FromRoleArn(stack, jsii.String("LedgerRole"), jsii.String("arn:aws:iam::123456789012:role/ledger"), nil),
			SameEnvironment: jsii.Bool(true),
		})
	}

	stack := newStack()
	p := baseProps()
	p.Consumer.Function = imported(stack)
	err := panicOf(func() { deadletter.NewLane(stack, "Ledger", p) })
	if !errors.Is(err, deadletter.ErrInvalidProps) || !strings.Contains(err.Error(), "Consumer.Timeout is required with an imported Consumer.Function") {
		t.Fatalf("NewLane without the imported function's timeout: %v", err)
	}

	stack = newStack()
	p = baseProps()
	p.Consumer.Function = imported(stack)
	p.Consumer.Timeout = awscdk.Duration_Seconds(jsii.Number(10))
	s := synthesize(stack, deadletter.NewLane(stack, "Ledger", p))
	check(t, "one function (the replay), a mapping to the imported one", func() {
		s.template.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(1))
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(obj{
			"FunctionName":          "ledger",
			"FunctionResponseTypes": arr{"ReportBatchItemFailures"},
		}))
		s.template.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(obj{"VisibilityTimeout": 60, "RedrivePolicy": assertions.Match_AnyValue()}))
	})
	check(t, "the grants on the imported role", func() {
		s.template.HasResourceProperties(jsii.String("AWS::IAM::Policy"), like(obj{
			"Roles": arr{"ledger"},
			"PolicyDocument": like(obj{"Statement": arrayWith(
				like(obj{"Action": "sqs:SendMessage", "Resource": getAtt(s.ref(s.lane.InvalidQueue().QueueArn()), "Arn")}),
			)}),
		}))
	})
	if s.lane.ConsumerLogGroup() != nil {
		t.Error("ConsumerLogGroup of a Consumer.Function is not nil")
	}
	if _, ok := (*s.template.FindOutputs(jsii.String(settings.OutputID("ledger", settings.OutputConsumerLogGroupName)), nil))[settings.OutputID("ledger", settings.OutputConsumerLogGroupName)]; ok {
		t.Error("an output names the Consumer.Function's log group, which the lane does not know")
	}
}

func TestConsumerFunctionValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(stack awscdk.Stack, p *deadletter.LaneProps)
		want  []string
	}{
		{"props of the lane's own consumer", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Consumer.Function = nodeConsumer(stack)
			p.Consumer.MemorySize = jsii.Number(512)
			p.Consumer.Environment = map[string]string{"X": "y"}
		}, []string{"Consumer.Function is the team's: Consumer.MemorySize, Consumer.Environment configure the consumer the lane builds; set them on that function"}},
		{"a timeout other than the function's", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Consumer.Function = nodeConsumer(stack)
			p.Consumer.Timeout = awscdk.Duration_Seconds(jsii.Number(30))
		}, []string{"Consumer.Timeout is 30s, but the Consumer.Function's timeout is 20s"}},
		{"a function of another stack", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			other := awscdk.NewStack(awscdk.App_Of(stack), jsii.String("Other"), nil)
			p.Consumer.Function = nodeConsumer(other)
		}, []string{"Consumer.Function Other/PaymentsConsumer belongs to stack Other, the lane to Test"}},
		{"a function without a role on a lane that parks its groups", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Consumer.Function = awslambda.Function_FromFunctionArn(stack, jsii.String("Ledger"), jsii.String("arn:aws:lambda:us-east-1:123456789012:function:ledger"))
			p.Consumer.Timeout = awscdk.Duration_Seconds(jsii.Number(10))
		}, []string{"Consumer.Function has no role the lane knows: on a FIFO lane that keeps group order the consumer sends to the parking queue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			p := baseProps()
			tc.build(stack, p)
			err := panicOf(func() { deadletter.NewLane(stack, "Payments", p) })
			if !errors.Is(err, deadletter.ErrInvalidProps) {
				t.Fatalf("NewLane panicked with %v, want ErrInvalidProps", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestConsumerCodeDir: the Go consumer of another team, from its own
// bootstrap directory.
func TestConsumerCodeDir(t *testing.T) {
	dir := filepath.Join(testRoot, "payments-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/sh\n# payments\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	stack := newStack()
	p := baseProps()
	p.Consumer.CodeDir = jsii.String(dir)
	s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
	code := mustJSON(props(s.resources[s.ref(s.lane.Consumer().FunctionName())])["Code"])
	replayCode := mustJSON(props(s.resources[s.ref(s.lane.Replay().FunctionName())])["Code"])
	if code == replayCode {
		t.Errorf("the consumer's code is the replay's: %s", code)
	}

	p = baseProps()
	p.Consumer.CodeDir = jsii.String(codeDir() + "/nowhere")
	err := panicOf(func() { deadletter.NewLane(newStack(), "Payments", p) })
	if err == nil || !strings.Contains(err.Error(), "consumer code") || !strings.Contains(err.Error(), "nowhere/bootstrap") {
		t.Errorf("a missing Consumer.CodeDir bootstrap: %v", err)
	}
}

// A lane that asks for no failure records tells its consumer so; by
// default it records them.
func TestFailureRecordsOff(t *testing.T) {
	for _, tt := range []struct {
		records *bool
		want    string
	}{{nil, "on"}, {jsii.Bool(true), "on"}, {jsii.Bool(false), "off"}} {
		stack := newStack()
		p := baseProps()
		p.Consumer.Function = nodeConsumer(stack)
		p.Consumer.FailureRecords = tt.records
		env := deadletter.NewLane(stack, "Payments", p).ConsumerEnvironment()
		if got := env[settings.FailureRecords.Env]; got == nil || *got != tt.want {
			t.Fatalf("FailureRecords %v: %s = %v, want %q", tt.records, settings.FailureRecords.Env, got, tt.want)
		}
	}
}
