package deadletter

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/internal/settings"
)

// warnSealKeyDenial is the id of the warning that the operator's principal
// could not be denied the seal key.
const warnSealKeyDenial = "homing-deadletter:OperatorSealKeyDenial"

// operatorActions are the actions [Lane.GrantOperator] grants, by the
// resource they are granted on, each for a step of the runbook
// (docs/OPERATIONS.md):
//
//   - find the lane: cloudformation:DescribeStacks on the lane's stack
//     (`dlq --stack`), sqs:GetQueueUrl on its queues. Finding a lane by tag
//     alone (`dlq --lane` without outputs) needs tag:GetResources, which IAM
//     grants only on "*": add it yourself if you use it;
//   - inspect and peek: sqs:GetQueueAttributes on the four queues (only that
//     on the source queue: receiving there would steal the consumer's
//     messages), sqs:ReceiveMessage and sqs:ChangeMessageVisibility on the
//     DLQ, the invalid and the parking queue;
//   - replay on demand (`dlq replay`, the replay engine run by the operator,
//     also --from invalid and --from parking): sqs:DeleteMessage on those
//     three, sqs:SendMessage on the source and the parking queue (and the
//     principal's ARN joins the parking queue policy's senders); GetItem,
//     PutItem, UpdateItem and Query on the ledger; BatchGetItem (the canary
//     gate) on the idempotency table; lambda:GetFunctionConfiguration on the
//     replay function (`dlq replay` runs with the function's settings) and
//     lambda:InvokeFunction (an on-demand run of the function itself);
//   - audit: Query and GetItem on the ledger, GetItem on the idempotency
//     table (was the order invoiced?);
//   - stop and resume scheduled replay: events:DescribeRule, DisableRule
//     and EnableRule on the replay schedule;
//   - read the logs: the log groups' read actions (aws logs tail) on the
//     replay function's and, when the lane built it, the consumer's; read
//     the consumer's configuration and concurrency;
//   - on a FIFO lane that parks its groups (GroupOrderHold), list and
//     release them (`dlq groups`, `dlq groups release`): a release moves a
//     group's records from the parking queue to the source (granted
//     above) and reads and ends its park in the ledger: Query and
//     UpdateItem as above, BatchGetItem and DeleteItem on the partition
//     settings.GroupsPartition only (parksOperatorActions);
//   - subscribe to the alarm topic: sns:Subscribe;
//   - on a queue encrypted with a KMS key, the key actions its SQS actions
//     need (kms:GenerateDataKey and kms:Decrypt to send, kms:Decrypt to
//     receive; see sqsKeyActions).
//
// Nothing else: no SendMessage on the DLQ (its policy denies it to
// everyone), no StartMessageMoveTask, no write on the idempotency table, no
// receive on the source queue, no Scan of the ledger. And denied (see
// sealDenials): every item action on the ledger's seal key, which only the
// replay function reads (an operator's `dlq replay` verifies seals with the
// public key and seals nothing), and every write of its public key.
var operatorActions = map[string][]string{
	"stack":       {"cloudformation:DescribeStacks"},
	"source":      {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:SendMessage"},
	"dead-letter": {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage"},
	"invalid":     {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage"},
	"parking":     {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:SendMessage"},
	"ledger":      {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"},
	"idempotency": {"dynamodb:GetItem", "dynamodb:BatchGetItem"},
	"replay":      {"lambda:InvokeFunction", "lambda:GetFunctionConfiguration"},
	"consumer":    {"lambda:GetFunctionConfiguration", "lambda:GetFunctionConcurrency"},
	"schedule":    {"events:DescribeRule", "events:DisableRule", "events:EnableRule"},
	"alarm-topic": {"sns:Subscribe"},
	// dlq archive ls and show (restore sends to the parking queue).
	"archive-bucket":  {"s3:ListBucket"},
	"archive-objects": {"s3:GetObject"},
}

// sealDenials are the operator's explicit denials on the ledger, by the
// partition (dynamodb:LeadingKeys) they deny: with the seal key, anyone
// could seal metadata the replay engine trusts; with a write of the public
// key, make operators' tools trust a key of their own.
var sealDenials = []struct {
	partition string
	actions   []string
}{
	{settings.SealKeyPartition, []string{
		"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem",
		"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
		"dynamodb:PartiQLSelect", "dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete",
	}},
	{settings.SealPublicKeyPartition, []string{
		"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
		"dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete",
	}},
}

// GrantOperator: see [Lane].
func (l *lane) GrantOperator(principal awsiam.IGrantable) {
	arn, ok := principalArn(principal.GrantPrincipal())
	if !ok {
		panic(fmt.Errorf("deadletter: %s.GrantOperator: the principal is no role, user or ArnPrincipal, so the parking queue's policy cannot name it", *l.Node().Path()))
	}
	l.parkingSenders.arns = append(l.parkingSenders.arns, arn)

	onArns := func(key string, arns ...*string) {
		awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
			Grantee:      principal,
			Actions:      jsii.Strings(operatorActions[key]...),
			ResourceArns: &arns,
		})
	}
	onArns("stack", awscdk.Aws_STACK_ID())
	// And the key actions of those that have a KMS key.
	grantQueue(l.source, principal, operatorActions["source"]...)
	grantQueue(l.deadLetter, principal, operatorActions["dead-letter"]...)
	grantQueue(l.invalid, principal, operatorActions["invalid"]...)
	grantQueue(l.parking, principal, operatorActions["parking"]...)
	l.ledger.Grant(principal, pointers(operatorActions["ledger"])...)
	for _, d := range sealDenials {
		added := principal.GrantPrincipal().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect:     awsiam.Effect_DENY,
			Actions:    jsii.Strings(d.actions...),
			Resources:  &[]*string{l.ledger.TableArn()},
			Conditions: &map[string]any{"ForAnyValue:StringEquals": map[string]any{"dynamodb:LeadingKeys": []string{d.partition}}},
		}))
		if !*added.StatementAdded {
			awscdk.Annotations_Of(l).AddWarningV2(jsii.String(warnSealKeyDenial), jsii.String(fmt.Sprintf(
				"%s.GrantOperator cannot add to the operator principal's policy: deny it %v on the ledger's partition %q yourself (docs/OPERATIONS.md)", *l.Node().Path(), d.actions, d.partition)), nil)
		}
	}
	l.idempotency.Grant(principal, pointers(operatorActions["idempotency"])...)
	l.grantArchiveRead(principal)
	if l.props.consumer.groupOrder == GroupOrderHold {
		l.grantParks(principal, parksOperatorActions)
	}
	// The function's ARN alone: GrantInvoke would add its versions (":*").
	onArns("replay", l.replay.fn.FunctionArn())
	onArns("consumer", l.consumer.FunctionArn())
	onArns("schedule", l.schedule.RuleArn())
	onArns("alarm-topic", l.topic.TopicArn())
	l.replay.logs.GrantRead(principal)
	if l.consumerLogs != nil {
		l.consumerLogs.GrantRead(principal)
	}
}

// principalArn is the ARN by which a queue policy names p: a role's, a
// user's or an ArnPrincipal's.
func principalArn(p awsiam.IPrincipal) (*string, bool) {
	switch v := p.(type) {
	case awsiam.IRole:
		return v.RoleArn(), true
	case awsiam.IUser:
		return v.UserArn(), true
	case awsiam.ArnPrincipal:
		return v.Arn(), true
	}
	return nil, false
}

func pointers(ss []string) []*string {
	out := make([]*string, len(ss))
	for i, s := range ss {
		out[i] = jsii.String(s)
	}
	return out
}
