package deadletter_test

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// TestOverridesPassThrough: the fields of the pass-through overrides that
// the lane does not own reach the template, the override wins over the
// lane's defaults, and nothing else of the lane changes: the template is
// the defaults' but for the overridden properties. The team's override
// structs are left as they were.
func TestOverridesPassThrough(t *testing.T) {
	source := &awssqs.QueueProps{DeliveryDelay: seconds(5), ReceiveMessageWaitTime: seconds(20)}
	consumer := &awslambda.FunctionProps{
		Description:           jsii.String("The team's consumer."),
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_DEBUG,
		EphemeralStorageSize:  awscdk.Size_Mebibytes(jsii.Number(1024)),
	}
	p := baseProps()
	p.Queues.QueueProps = source
	p.Queues.DeadLetterQueueProps = &awssqs.QueueProps{ReceiveMessageWaitTime: seconds(10)}
	p.Queues.InvalidQueueProps = &awssqs.QueueProps{ReceiveMessageWaitTime: seconds(1)}
	p.Queues.ParkingQueueProps = &awssqs.QueueProps{ReceiveMessageWaitTime: seconds(2)}
	p.Consumer.FunctionProps = consumer
	p.Consumer.EventSourceProps = &awslambdaeventsources.SqsEventSourceProps{Enabled: jsii.Bool(false)}
	p.Replay.FunctionProps = &awslambda.FunctionProps{EphemeralStorageSize: awscdk.Size_Mebibytes(jsii.Number(1024))}
	s := synth(p)
	d := defaults.get(t)
	id := d.ids()
	mapping := d.ofType("AWS::Lambda::EventSourceMapping")[0]

	consumerLogging := props(d.resources[id.consumer])["LoggingConfig"].(map[string]any)
	debugLogging := map[string]any{}
	for k, v := range consumerLogging {
		debugLogging[k] = v
	}
	debugLogging["ApplicationLogLevel"] = "DEBUG"
	want := map[string]map[string]any{ // logical id -> property -> its value with the overrides
		id.source:   {"DelaySeconds": float64(5), "ReceiveMessageWaitTimeSeconds": float64(20)},
		id.dlq:      {"ReceiveMessageWaitTimeSeconds": float64(10)},
		id.invalid:  {"ReceiveMessageWaitTimeSeconds": float64(1)},
		id.parking:  {"ReceiveMessageWaitTimeSeconds": float64(2)},
		id.consumer: {"Description": "The team's consumer.", "LoggingConfig": debugLogging, "EphemeralStorage": map[string]any{"Size": float64(1024)}},
		id.replay:   {"EphemeralStorage": map[string]any{"Size": float64(1024)}},
		mapping:     {"Enabled": false},
	}
	if len(s.resources) != len(d.resources) {
		t.Errorf("%d resources, the defaults have %d", len(s.resources), len(d.resources))
	}
	for lid, r := range d.resources {
		got, ok := s.resources[lid]
		if !ok {
			t.Errorf("%s (%s) is missing", lid, r["Type"])
			continue
		}
		keys := map[string]bool{}
		for k := range props(r) {
			keys[k] = true
		}
		for k := range props(got) {
			keys[k] = true
		}
		for k := range keys {
			expect, changed := want[lid][k]
			if !changed {
				expect = props(r)[k]
			}
			if g := props(got)[k]; !reflect.DeepEqual(g, expect) {
				t.Errorf("%s's %s is %s, want %s", lid, k, mustJSON(g), mustJSON(expect))
			}
		}
	}
	if source.RetentionPeriod != nil || source.RedriveAllowPolicy != nil || consumer.Runtime != nil || consumer.Role != nil {
		t.Error("the lane changed the team's override structs")
	}
}

// TestOverridesRefused: an override that sets what the lane sets itself,
// or configures a resource the team brings, is refused with what sets it
// instead.
func TestOverridesRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*deadletter.LaneProps)
		want   []string
	}{
		{"the source queue's retention", func(p *deadletter.LaneProps) {
			p.Queues.QueueProps = &awssqs.QueueProps{RetentionPeriod: awscdk.Duration_Days(jsii.Number(2))}
		}, []string{"Queues.QueueProps.RetentionPeriod is set, but the lane sets it: set Queues.SourceRetention"}},
		{"the source queue's name and visibility", func(p *deadletter.LaneProps) {
			p.Queues.QueueProps = &awssqs.QueueProps{QueueName: jsii.String("orders"), VisibilityTimeout: seconds(300)}
		}, []string{
			"Queues.QueueProps.QueueName is set, but the lane sets it: the lane names the queue it creates",
			"Queues.QueueProps.VisibilityTimeout is set, but the lane sets it: set Queues.VisibilityTimeout",
		}},
		{"a DLQ behind the DLQ", func(p *deadletter.LaneProps) {
			p.Queues.DeadLetterQueueProps = &awssqs.QueueProps{DeadLetterQueue: &awssqs.DeadLetterQueue{MaxReceiveCount: jsii.Number(3)}}
		}, []string{"Queues.DeadLetterQueueProps.DeadLetterQueue is set, but the lane sets it: a DLQ behind the DLQ would hide dead letters from the replay"}},
		{"the invalid queue's size", func(p *deadletter.LaneProps) {
			p.Queues.InvalidQueueProps = &awssqs.QueueProps{MaxMessageSizeBytes: jsii.Number(262144)}
		}, []string{"Queues.InvalidQueueProps.MaxMessageSizeBytes is set, but the lane sets it: it takes 1 MiB"}},
		{"the parking queue's encryption", func(p *deadletter.LaneProps) {
			p.Queues.ParkingQueueProps = &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_KMS_MANAGED}
		}, []string{"Queues.ParkingQueueProps.Encryption is set, but the lane sets it: set Queues.EncryptionKey"}},
		{"the consumer's timeout, environment and event sources", func(p *deadletter.LaneProps) {
			p.Consumer.FunctionProps = &awslambda.FunctionProps{
				Timeout:     seconds(60),
				Environment: &map[string]*string{"X": jsii.String("y")},
				Events:      &[]awslambda.IEventSource{},
			}
		}, []string{
			"Consumer.FunctionProps.Timeout is set, but the lane sets it: set Consumer.Timeout",
			"Consumer.FunctionProps.Environment is set, but the lane sets it: set Consumer.Environment",
			"Consumer.FunctionProps.Events is set, but the lane sets it: the lane maps the source queue to the consumer",
		}},
		{"a filter on the event source", func(p *deadletter.LaneProps) {
			p.Consumer.EventSourceProps = &awslambdaeventsources.SqsEventSourceProps{
				Filters:   &[]*map[string]any{{"body": map[string]any{"kind": []any{"order"}}}},
				BatchSize: jsii.Number(5),
			}
		}, []string{
			"Consumer.EventSourceProps.Filters is set, but the lane sets it: Lambda deletes a record that a filter drops",
			"Consumer.EventSourceProps.BatchSize is set, but the lane sets it: set Consumer.BatchSize",
		}},
		{"the replay's retries and memory", func(p *deadletter.LaneProps) {
			p.Replay.FunctionProps = &awslambda.FunctionProps{RetryAttempts: jsii.Number(2), MemorySize: jsii.Number(1024)}
		}, []string{
			"Replay.FunctionProps.RetryAttempts is set, but the lane sets it: a failed scheduled run is not retried",
			"Replay.FunctionProps.MemorySize is set, but the lane sets it: set Replay.MemorySize",
		}},
		{"overrides beside the team's own resources", func(p *deadletter.LaneProps) {
			stack := newStack()
			dlq := awssqs.NewQueue(stack, jsii.String("OwnDLQ"), nil)
			p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{
				VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(3)),
				DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(5)},
			})
			p.Queues.DeadLetterQueue = dlq
			p.Consumer.Function = nodeConsumer(stack)
			p.Queues.QueueProps = &awssqs.QueueProps{DeliveryDelay: seconds(1)}
			p.Queues.DeadLetterQueueProps = &awssqs.QueueProps{DeliveryDelay: seconds(1)}
			p.Consumer.FunctionProps = &awslambda.FunctionProps{Description: jsii.String("x")}
		}, []string{
			"Queues.SourceQueue is the team's: Queues.QueueProps configure the queue the lane creates",
			"Queues.DeadLetterQueue is the team's: Queues.DeadLetterQueueProps configure the DLQ the lane creates",
			"Consumer.Function is the team's: Consumer.FunctionProps configure the consumer the lane builds",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := baseProps()
			tc.modify(p)
			err := p.Validate()
			if !errors.Is(err, deadletter.ErrInvalidProps) {
				t.Fatalf("Validate = %v, want ErrInvalidProps", err)
			}
			if err := containsAll(err.Error(), tc.want...); err != nil {
				t.Errorf("Validate = %q: %v", p.Validate(), err)
			}
			if n, m := strings.Count(p.Validate().Error(), "\n")+1, len(tc.want); n != m {
				got := strings.Split(p.Validate().Error(), "\n")
				sort.Strings(got)
				t.Errorf("%d problems, want %d: %q", n, m, got)
			}
		})
	}
}
