package deadletter

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Statement ids of the lane's queue policies, beside the CDK's TLS-only one.
const (
	// SidOnlyLaneSends denies SendMessage on the DLQ, the invalid and the
	// parking queue to every IAM principal but the lane's own senders.
	SidOnlyLaneSends = "OnlyTheLaneSends"
	// SidNoNativeRedrive denies starting SQS's message move task on the DLQ.
	SidNoNativeRedrive = "NoNativeRedrive"
)

// restrictSenders makes the lane's queues of last resort accept messages
// only from the lane: anything in them is replayed or reported under the
// lane's name, so a sender outside it could inject orders (with made-up
// replay metadata) that the replay function forwards under its own role.
//
//   - the DLQ: no IAM principal sends; only SQS's redrive from the source
//     queue moves messages in;
//   - the invalid queue: the consumer's role;
//   - the parking queue: the replay function's role and OperatorArns, and
//     on a FIFO lane that keeps group order the consumer's role, which
//     parks its groups' records there.
//
// How SQS authorises the move to a DLQ (AWS documentation, SQS Developer
// Guide "Using dead-letter queues" and the RedrivePolicy/RedriveAllowPolicy
// attributes of SetQueueAttributes): the move after maxReceiveCount is done
// by SQS itself, inside the service, and is permitted by configuration, not
// by a SendMessage call: the source queue's RedrivePolicy names the DLQ
// (setting it takes sqs:SetQueueAttributes on the source), the DLQ's
// RedriveAllowPolicy names the source queues that may use it (byQueue, here
// only ours), and both must be in the same account and region. Unlike the
// DLQs of SNS subscriptions (a queue policy allowing sns.amazonaws.com) or
// of Lambda's asynchronous invocation (the function's role sends), AWS
// documents no principal and no queue-policy statement for it. The deny below
// therefore applies to signed requests of IAM principals only
// (aws:PrincipalIsAWSService false, present in every signed request), so
// that even if SQS's internal move were ever evaluated against the policy,
// as a service principal, it would not be denied; service principals have
// no Allow here either, so no other service can deliver to these queues.
func (l *lane) restrictSenders() {
	onlyFrom := func(q awssqs.Queue, senders any) {
		conditions := map[string]any{
			"Bool": map[string]any{"aws:PrincipalIsAWSService": "false"},
		}
		if senders != nil {
			conditions["ArnNotLike"] = map[string]any{"aws:PrincipalArn": senders}
		}
		q.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(SidOnlyLaneSends),
			Effect:     awsiam.Effect_DENY,
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings("sqs:SendMessage"),
			Resources:  &[]*string{q.QueueArn()},
			Conditions: &conditions,
		}))
	}
	onlyFrom(l.deadLetter, nil)
	// An imported consumer without a role cannot be named: its invalid
	// queue keeps the TLS-only policy alone.
	if l.consumerRole != nil {
		onlyFrom(l.invalid, []any{l.consumerRole.RoleArn()})
	}
	// The parking queue's senders grow with GrantOperator, which may be
	// called after NewLane: the list is resolved at synthesis.
	l.parkingSenders = &senders{arns: []*string{l.replay.role.RoleArn()}}
	// validateGroups refuses a consumer without a role on such a lane.
	if l.props.consumer.groupOrder != "" && l.consumerRole != nil {
		l.parkingSenders.arns = append(l.parkingSenders.arns, l.consumerRole.RoleArn())
	}
	for _, arn := range l.props.queues.operatorArns {
		l.parkingSenders.arns = append(l.parkingSenders.arns, jsii.String(arn))
	}
	onlyFrom(l.parking, awscdk.Lazy_List(l.parkingSenders, nil))

	// Native redrive (StartMessageMoveTask) is authorised on its source
	// queue, the DLQ. The invalid and parking queues cannot be its source:
	// SQS moves only from queues that are the DLQ of another queue, and
	// theirs deny every source queue. ListMessageMoveTasks and
	// CancelMessageMoveTask stay allowed: they only show or stop a task.
	if !l.props.queues.allowNativeRedrive {
		l.deadLetter.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(SidNoNativeRedrive),
			Effect:     awsiam.Effect_DENY,
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings("sqs:StartMessageMoveTask"),
			Resources:  &[]*string{l.deadLetter.QueueArn()},
		}))
	}
}

// senders are the principal ARNs a queue policy lets send; the CDK reads
// them when it synthesizes the policy (awscdk.Lazy_List).
type senders struct{ arns []*string }

// Produce implements awscdk.IStableListProducer.
func (s *senders) Produce() *[]*string { return &s.arns }

// sqsKeyActions are the KMS actions a caller of SQS needs on the key of a
// queue encrypted with a KMS key (SSE-KMS), by the SQS action it calls
// (SQS Developer Guide, "Key management": a producer needs
// kms:GenerateDataKey and kms:Decrypt, a consumer kms:Decrypt). The other
// actions the lane grants (ChangeMessageVisibility, DeleteMessage,
// GetQueueAttributes, GetQueueUrl) need none.
var sqsKeyActions = map[string][]string{
	"sqs:SendMessage":    {"kms:Decrypt", "kms:GenerateDataKey"},
	"sqs:ReceiveMessage": {"kms:Decrypt"},
}

// grantQueue grants actions on q to grantee and, when q is encrypted with
// a KMS key (q.EncryptionMasterKey()), the key actions those SQS actions
// need on that key: Queue.Grant grants none.
func grantQueue(q awssqs.IQueue, grantee awsiam.IGrantable, actions ...string) {
	q.Grant(grantee, pointers(actions)...)
	key := q.EncryptionMasterKey()
	if key == nil {
		return
	}
	var keyActions []string
	for _, a := range actions {
		for _, k := range sqsKeyActions[a] {
			if !slices.Contains(keyActions, k) {
				keyActions = append(keyActions, k)
			}
		}
	}
	if len(keyActions) > 0 {
		slices.Sort(keyActions)
		key.Grant(grantee, pointers(keyActions)...)
	}
}
