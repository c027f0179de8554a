package deadletter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// TestAdoptionRefused: each way an existing lane cannot be taken over as it
// is fails at synth with an error that names the safe way forward.
func TestAdoptionRefused(t *testing.T) {
	visibility := awscdk.Duration_Minutes(jsii.Number(3))
	for _, tc := range []struct {
		name  string
		build func(stack awscdk.Stack, p *deadletter.LaneProps)
		want  []string
	}{
		{"a queue without a name", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Queues.SourceQueue = awssqs.NewQueue(stack, jsii.String("Unnamed"), &awssqs.QueueProps{VisibilityTimeout: visibility})
		}, []string{
			"SourceQueue has no QueueName",
			"If the queue is deployed, set Queues.SourceQueueName to its deployed name",
			"do not add a QueueName: CloudFormation would replace the queue, and its messages would be lost",
			"or set Queues.AllowQueueReplacement and the lane names it",
		}},
		{"a SourceQueueName that is no queue name", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Queues.SourceQueue = awssqs.NewQueue(stack, jsii.String("Unnamed"), &awssqs.QueueProps{VisibilityTimeout: visibility})
			p.Queues.SourceQueueName = jsii.String("Test Unnamed")
		}, []string{`SourceQueueName is "Test Unnamed", want the queue's deployed name`}},
		{"a SourceQueueName beside a QueueName", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{VisibilityTimeout: visibility})
			p.Queues.SourceQueueName = jsii.String("other")
		}, []string{`SourceQueue is named "payments-captured", but Queues.SourceQueueName is "other"`}},
		{"a queue with a DLQ of its own, not adopted", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			own := awssqs.NewQueue(stack, jsii.String("OwnDLQ"), nil)
			p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{
				VisibilityTimeout: visibility,
				DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: own, MaxReceiveCount: jsii.Number(5)},
			})
		}, []string{"SourceQueue redrives to a dead-letter queue of its own (Test/OwnDLQ): pass that queue as Queues.DeadLetterQueue, and the lane adopts it as its DLQ"}},
		{"a DeadLetterQueue other than the queue's own", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			own := awssqs.NewQueue(stack, jsii.String("OwnDLQ"), nil)
			p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{
				VisibilityTimeout: visibility,
				DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: own, MaxReceiveCount: jsii.Number(5)},
			})
			p.Queues.DeadLetterQueue = awssqs.NewQueue(stack, jsii.String("Other"), nil)
		}, []string{"SourceQueue redrives to Test/OwnDLQ, but Queues.DeadLetterQueue is Test/Other"}},
		{"a DeadLetterQueue without a SourceQueue", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Queues.DeadLetterQueue = awssqs.NewQueue(stack, jsii.String("OwnDLQ"), nil)
		}, []string{"DeadLetterQueue adopt a part of the team's existing lane and need its SourceQueue"}},
		{"a DeadLetterQueue that cannot be the lane's", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			own := awssqs.NewQueue(stack, jsii.String("OwnDLQ"), &awssqs.QueueProps{
				MaxMessageSizeBytes: jsii.Number(262144),
				RetentionPeriod:     awscdk.Duration_Days(jsii.Number(4)),
				RedriveAllowPolicy:  &awssqs.RedriveAllowPolicy{RedrivePermission: awssqs.RedrivePermission_ALLOW_ALL},
			})
			p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{
				VisibilityTimeout: visibility,
				DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: own, MaxReceiveCount: jsii.Number(5)},
			})
			p.Queues.DeadLetterQueue = own
			p.Queues.DeadLetterRetention = awscdk.Duration_Days(jsii.Number(10))
		}, []string{
			"DeadLetterQueue is the team's: Queues.DeadLetterRetention configures the DLQ the lane creates",
			"DeadLetterQueue has a redrive allow-policy of its own: remove it",
			"DeadLetterQueue has a MaximumMessageSize of 262144, want it unset or 1048576",
			"DeadLetterRetention (4d) must be longer than SourceQueue's MessageRetentionPeriod (4d)",
		}},
		{"a function that consumes the queue already", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			q := teamQueue(stack, &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(2))})
			fn := nodeConsumer(stack)
			fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, nil))
			p.Queues.SourceQueue = q
			p.Consumer.Function = fn
		}, []string{
			"Consumer.Function Test/PaymentsConsumer has an SQS event source on the SourceQueue already (Test/PaymentsConsumer/SqsEventSource:TestCaptured",
			"remove your AddEventSource call; the lane adds the same mapping, under the same construct id and so the same logical id",
		}},
		{"a mapping of its own on the queue", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			q := teamQueue(stack, &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(2))})
			fn := nodeConsumer(stack)
			fn.AddEventSourceMapping(jsii.String("Orders"), &awslambda.EventSourceMappingOptions{EventSourceArn: q.QueueArn()})
			p.Queues.SourceQueue = q
			p.Consumer.Function = fn
		}, []string{"the SourceQueue is consumed by the event source mapping Test/PaymentsConsumer/Orders/Resource already: remove it"}},
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

// TestAdoptionEnvironment: the lane never overwrites a variable of the
// team's function: the same value stays, another value is refused naming
// both values and the prop that makes them agree.
func TestAdoptionEnvironment(t *testing.T) {
	withVars := func(stack awscdk.Stack, vars map[string]string) awslambda.Function {
		fn := nodeConsumer(stack)
		for k, v := range vars {
			fn.AddEnvironment(jsii.String(k), jsii.String(v), nil)
		}
		return fn
	}
	for _, tc := range []struct {
		name   string
		vars   map[string]string
		modify func(*deadletter.LaneProps)
		want   []string
	}{
		{"Powertools' service name", map[string]string{"POWERTOOLS_SERVICE_NAME": "payments-api"}, nil, []string{
			`Consumer.Function Test/PaymentsConsumer sets POWERTOOLS_SERVICE_NAME to "payments-api", and the lane needs "Test/Payments"`,
			"set LaneProps.ServiceName to the function's value",
		}},
		{"Powertools' namespace", map[string]string{"POWERTOOLS_METRICS_NAMESPACE": "Payments"}, nil, []string{
			`sets POWERTOOLS_METRICS_NAMESPACE to "Payments", and the lane needs "Homing"`, "set LaneProps.MetricsNamespace",
		}},
		{"the consumer's name", map[string]string{"CONSUMER_NAME": "ledger"}, nil, []string{
			`sets CONSUMER_NAME to "ledger", and the lane needs "payments"`, "set LaneProps.Consumer.Name to the function's value",
		}},
		{"the key", map[string]string{"KEY_EXPRESSION": "id"}, nil, []string{`sets KEY_EXPRESSION to "id", and the lane needs "orderId"`, "set LaneProps.Consumer.Key"}},
		{"the invalid queue", map[string]string{"INVALID_QUEUE_URL": "https://sqs.example/q"}, nil, []string{
			`sets INVALID_QUEUE_URL to "https://sqs.example/q", and the lane needs {"Ref":"PaymentsInvalidQueue`, "remove the variable from the function",
		}},
		{"agreeing values stay", map[string]string{"POWERTOOLS_SERVICE_NAME": "payments-api", "CONSUMER_NAME": "ledger", "KEY_EXPRESSION": "orderId"},
			func(p *deadletter.LaneProps) {
				p.ServiceName = jsii.String("payments-api")
				p.Consumer.Name = jsii.String("ledger")
			}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			p := baseProps()
			p.Consumer.Function = withVars(stack, tc.vars)
			if tc.modify != nil {
				tc.modify(p)
			}
			if len(tc.want) > 0 {
				err := panicOf(func() { deadletter.NewLane(stack, "Payments", p) })
				if !errors.Is(err, deadletter.ErrInvalidProps) {
					t.Fatalf("NewLane panicked with %v, want ErrInvalidProps", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\nwant it to contain %q", err, w)
					}
				}
				return
			}
			s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
			vars := props(s.resources[s.ref(s.lane.Consumer().FunctionName())])["Environment"].(map[string]any)["Variables"].(map[string]any)
			for k, v := range tc.vars {
				if vars[k] != v {
					t.Errorf("%s is %v, want the function's own %q", k, vars[k], v)
				}
			}
			if vars["OWN"] != "kept" || vars["IDEMPOTENCY_TABLE"] == nil {
				t.Errorf("variables %s, want the function's own beside the lane's", mustJSON(vars))
			}
		})
	}
}

// TestAdoptionHandled: a deployed queue without a name keeps it (the lane
// names it by SourceQueueName), its own DLQ becomes the lane's, and the lane
// names an unnamed queue only when AllowQueueReplacement says so.
func TestAdoptionHandled(t *testing.T) {
	t.Run("a deployed queue without a name, by its deployed name", func(t *testing.T) {
		stack := newStack()
		q := awssqs.NewQueue(stack, jsii.String("Unnamed"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(3)), MaxMessageSizeBytes: jsii.Number(262144)})
		p := baseProps()
		p.Queues.SourceQueue = q
		p.Queues.SourceQueueName = jsii.String("Test-Unnamed-1A2B3C4D5E6F")
		s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
		source := s.ref(q.QueueArn())
		if v, ok := props(s.resources[source])["QueueName"]; ok {
			t.Errorf("the lane named the team's queue %v: CloudFormation would replace it", v)
		}
		dlq := s.ref(s.lane.DeadLetterQueue().QueueArn())
		if got, want := mustJSON(props(s.resources[dlq])["RedriveAllowPolicy"]), mustJSON(obj{"redrivePermission": "byQueue", "sourceQueueArns": arr{sourceArnFor("Test-Unnamed-1A2B3C4D5E6F")}}); got != want {
			t.Errorf("DLQ allow-policy %s, want %s", got, want)
		}
		noWarnings(t, stack)
	})

	t.Run("an unnamed queue, replacement allowed", func(t *testing.T) {
		stack := newStack()
		q := awssqs.NewQueue(stack, jsii.String("Unnamed"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(3)), MaxMessageSizeBytes: jsii.Number(262144)})
		p := baseProps()
		p.Queues.SourceQueue = q
		p.Queues.AllowQueueReplacement = jsii.Bool(true)
		s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
		name, _ := props(s.resources[s.ref(q.QueueArn())])["QueueName"].(string)
		if !strings.HasSuffix(name, "-source") {
			t.Errorf("QueueName %q, want the lane's generated name", name)
		}
		warnings := *assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AllowQueueReplacement")))
		if len(warnings) != 1 || !strings.Contains(mustJSON(warnings[0].Entry.Data), "CloudFormation replaces it and its messages are lost") {
			t.Errorf("warnings %s, want one that the queue is replaced", mustJSON(warnings))
		}
	})

	t.Run("the queue's own DLQ becomes the lane's", func(t *testing.T) {
		stack := newStack()
		own := awssqs.NewQueue(stack, jsii.String("OwnDLQ"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true)})
		q := teamQueue(stack, &awssqs.QueueProps{
			VisibilityTimeout:   awscdk.Duration_Minutes(jsii.Number(3)),
			MaxMessageSizeBytes: jsii.Number(262144),
			DeadLetterQueue:     &awssqs.DeadLetterQueue{Queue: own, MaxReceiveCount: jsii.Number(5)},
		})
		p := baseProps()
		p.Queues.SourceQueue = q
		p.Queues.DeadLetterQueue = own
		s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
		dlq := s.ref(own.QueueArn())
		if got := s.ref(s.lane.DeadLetterQueue().QueueArn()); got != dlq {
			t.Fatalf("DeadLetterQueue() is %s, want the team's %s", got, dlq)
		}
		if n := len(s.ofType("AWS::SQS::Queue")); n != 4 {
			t.Errorf("%d queues, want the team's two and the lane's invalid and parking queues", n)
		}
		source := s.ref(q.QueueArn())
		if got, want := mustJSON(props(s.resources[source])["RedrivePolicy"]), mustJSON(obj{"deadLetterTargetArn": getAtt(dlq, "Arn"), "maxReceiveCount": 5}); got != want {
			t.Errorf("the team's queue's RedrivePolicy is %s, want %s (its own count kept)", got, want)
		}
		dp := props(s.resources[dlq])
		if got, want := mustJSON(dp["RedriveAllowPolicy"]), mustJSON(obj{"redrivePermission": "byQueue", "sourceQueueArns": arr{sourceArnFor("payments-captured")}}); got != want {
			t.Errorf("DLQ allow-policy %s, want %s", got, want)
		}
		if dp["MessageRetentionPeriod"] != float64(deadletter.DefaultDeadLetterRetentionDays*24*3600) {
			t.Errorf("the team's DLQ's retention is %v, want the lane's default", dp["MessageRetentionPeriod"])
		}
		if _, ok := dp["QueueName"]; ok {
			t.Errorf("the lane named the team's DLQ: %s", mustJSON(dp))
		}
		if routes := s.routes(t); len(routes) != 1 || routes[0].DLQURL != "Ref("+dlq+")" {
			t.Errorf("REPLAY_ROUTES %s, want the team's DLQ", mustJSON(routes))
		}
		warnings := *assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("MessageRetentionPeriod")))
		if len(warnings) != 1 || *warnings[0].Id != "/"+*own.Node().Path() {
			t.Errorf("warnings %s, want one on the team's DLQ that the lane set its retention", mustJSON(warnings))
		}
	})
}

// noWarnings fails t for each warning of stack.
func noWarnings(t *testing.T, stack awscdk.Stack) {
	t.Helper()
	for _, m := range *assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("warning: %s", mustJSON(m))
	}
}
