package deadletter_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// TestKMSEncryptedQueues: with a team's source queue encrypted with its own
// KMS key and the lane's queues (DLQ, invalid, parking) with another, every
// role that sends to or receives from a queue may use that queue's key for
// it, and for nothing else: kms:GenerateDataKey and kms:Decrypt to send,
// kms:Decrypt to receive (Queue.Grant grants no key action).
func TestKMSEncryptedQueues(t *testing.T) {
	stack := newStack()
	teamKey := awskms.NewKey(stack, jsii.String("TeamKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	laneKey := awskms.NewKey(stack, jsii.String("LaneKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	source := awssqs.NewQueue(stack, jsii.String("Captured"), &awssqs.QueueProps{
		QueueName:           jsii.String("payments-captured"),
		Encryption:          awssqs.QueueEncryption_KMS,
		EncryptionMasterKey: teamKey,
		EnforceSSL:          jsii.Bool(true),
		VisibilityTimeout:   seconds(180),
		MaxMessageSizeBytes: jsii.Number(262144),
	})
	p := baseProps()
	p.Queues.SourceQueue = source
	p.Queues.EncryptionKey = laneKey
	lane := deadletter.NewLane(stack, "Payments", p)
	operator := awsiam.NewRole(stack, jsii.String("Operator"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	lane.GrantOperator(operator)
	s := synthesize(stack, lane)
	id := s.ids()
	team, own := s.ref(teamKey.KeyArn()), s.ref(laneKey.KeyArn())

	for _, q := range []string{id.dlq, id.invalid, id.parking} {
		qp := props(s.resources[q])
		if mustJSON(qp["KmsMasterKeyId"]) != mustJSON(getAtt(own, "Arn")) || qp["SqsManagedSseEnabled"] != nil {
			t.Errorf("queue %s is not encrypted with the lane's key: %s", q, mustJSON(qp))
		}
	}

	send, receive := []string{"kms:Decrypt", "kms:GenerateDataKey"}, []string{"kms:Decrypt"}
	for _, tc := range []struct {
		name, role string
		// keys is each key's actions, as a set.
		keys map[string][]string
	}{
		// The event source mapping receives from the team's queue (its own
		// grant), the consumer sends to the invalid queue.
		{"consumer", id.role, map[string][]string{team: receive, own: send}},
		// Receives from the DLQ, sends to the source and parking queues.
		{"replay", id.replayRole, map[string][]string{team: send, own: send}},
		// Sends to the source queue; receives from the DLQ, the invalid and
		// the parking queue, and sends to the parking queue.
		{"operator", s.ref(operator.RoleName()), map[string][]string{team: send, own: send}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			granted := s.granted(t, tc.role)
			for key, want := range tc.keys {
				if got := set(granted[key]); !slices.Equal(got, want) {
					t.Errorf("%s may %v on key %s, want %v", tc.name, got, key, want)
				}
			}
		})
	}

	check(t, "a receive-only grant (the DLQ's, to the replay) is kms:Decrypt alone", func() {
		s.template.HasResourceProperties(jsii.String("AWS::IAM::Policy"), like(obj{
			"PolicyDocument": like(obj{"Statement": arrayWith(obj{
				"Action": "kms:Decrypt", "Effect": "Allow", "Resource": getAtt(own, "Arn"),
			})}),
		}))
	})

	annotations := assertions.Annotations_FromStack(stack)
	for _, m := range *annotations.FindError(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("error: %s", mustJSON(m))
	}
	for _, m := range *annotations.FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("warning: %s", mustJSON(m))
	}
}

// set sorts and deduplicates actions.
func set(actions []string) []string {
	out := slices.Clone(actions)
	slices.Sort(out)
	return slices.Compact(out)
}
