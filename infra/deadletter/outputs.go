package deadletter

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/internal/settings"
)

// addOutputs declares, in the lane's stack, one output per key of
// settings.Output*, named settings.OutputID(lane name, key), by which `dlq`
// and scripts find the lane: two lanes of one stack have different names,
// so their outputs never collide (a collision is a construct id clash the
// CDK reports). ConsumerLogGroupName is left out for a Consumer.Function,
// whose log group is the team's.
func (l *lane) addOutputs() {
	stack := awscdk.Stack_Of(l.scope())
	type output struct {
		key         string
		value       *string
		description string
	}
	outputs := []output{
		{settings.OutputSourceQueueURL, l.source.QueueUrl(), "Producers send here."},
		{settings.OutputSourceQueueARN, l.source.QueueArn(), "ARN of the source queue."},
		{settings.OutputDeadLetterQueueURL, l.deadLetter.QueueUrl(), "Messages that exhausted their receives."},
		{settings.OutputDeadLetterQueueARN, l.deadLetter.QueueArn(), "ARN of the DLQ."},
		{settings.OutputInvalidQueueURL, l.invalid.QueueUrl(), "Messages the consumer rejected as invalid, with their reason."},
		{settings.OutputParkingQueueURL, l.parking.QueueUrl(), "Dead letters whose replays are exhausted, and the records of parked message groups (dlq groups)."},
		{settings.OutputIdempotencyTableName, l.idempotency.TableName(), "Idempotent receiver records."},
		{settings.OutputLedgerTableName, l.ledger.TableName(), "Replay ledger."},
		{settings.OutputConsumerFunctionName, l.consumer.FunctionName(), "The consumer function."},
		{settings.OutputReplayFunctionName, l.replay.fn.FunctionName(), "The replay function; invoke it for an on-demand run."},
		{settings.OutputReplayScheduleName, l.schedule.RuleName(), "The replay schedule; `aws events disable-rule --name <this>` stops scheduled replay."},
		{settings.OutputAlarmTopicARN, l.topic.TopicArn(), "Subscribe here to the lane's alarms."},
		{settings.OutputDashboardName, l.dashboard.DashboardName(), "CloudWatch dashboard of the lane."},
		{settings.OutputReplayLogGroupName, l.replay.logs.LogGroupName(), "The replay function's log group (run summaries): aws logs tail <this>."},
		{settings.OutputArchiveBucketName, l.archive.BucketName(), "The archive of the parking and invalid queues (docs/OPERATIONS.md#the-archive)."},
	}
	if l.consumerLogs != nil {
		outputs = append(outputs, output{settings.OutputConsumerLogGroupName, l.consumerLogs.LogGroupName(), "The consumer's log group: aws logs tail <this>."})
	}
	for _, o := range outputs {
		awscdk.NewCfnOutput(stack, jsii.String(settings.OutputID(l.props.name, o.key)), &awscdk.CfnOutputProps{
			Value:       o.value,
			Description: jsii.String("Lane " + l.props.name + ": " + o.description),
		})
	}
}

// addTags tags every resource of the lane with settings.TagLane (the lane's
// name), and each of its queues, tables and functions with settings.TagRole,
// so that `dlq` finds a lane by tag where there are no stack outputs. A
// Consumer.Function and a Queues.SourceQueue of the team's get both tags too (an
// imported function has no resource in the stack to tag).
func (l *lane) addTags() {
	tag := func(c constructs.IConstruct, key, value, only string) {
		var props *awscdk.TagProps
		if only != "" {
			props = &awscdk.TagProps{IncludeResourceTypes: jsii.Strings(only)}
		}
		awscdk.Tags_Of(c).Add(jsii.String(key), jsii.String(value), props)
	}
	tag(l, settings.TagLane, l.props.name, "")
	// The team's own resources outside the lane's scope.
	if l.props.consumer.function != nil {
		tag(l.consumer, settings.TagLane, l.props.name, "")
	}
	if l.props.queues.sourceQueue != nil {
		tag(l.source, settings.TagLane, l.props.name, "")
	}
	// The role tag on the resource itself, not on what the CDK adds under
	// it (a function's event source mapping).
	const queue, table, function, bucket = "AWS::SQS::Queue", "AWS::DynamoDB::Table", "AWS::Lambda::Function", "AWS::S3::Bucket"
	for _, r := range []struct {
		c          constructs.IConstruct
		role, kind string
	}{
		{l.source, settings.RoleSource, queue},
		{l.deadLetter, settings.RoleDeadLetter, queue},
		{l.invalid, settings.RoleInvalid, queue},
		{l.parking, settings.RoleParking, queue},
		{l.idempotency, settings.RoleIdempotency, table},
		{l.ledger, settings.RoleLedger, table},
		{l.consumer, settings.RoleConsumer, function},
		{l.replay.fn, settings.RoleReplay, function},
		{l.archive, settings.RoleArchive, bucket},
	} {
		tag(r.c, settings.TagRole, r.role, r.kind)
	}
}
