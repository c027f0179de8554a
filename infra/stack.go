package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// StackName is the CloudFormation stack name of every profile.
const StackName = "Homing"

// HomingStackProps configures [NewHomingStack].
type HomingStackProps struct {
	awscdk.StackProps
	// Lane configures the order lane. When Lane.TaxServiceURL is nil the stack
	// declares a TaxServiceUrl CloudFormation parameter and uses it, so that
	// the URL can be given at deploy time.
	Lane deadletter.LaneProps
}

// Output ids of the stack, as scripts and tests read them.
const (
	OutputSourceQueueURL       = "SourceQueueUrl"
	OutputSourceQueueARN       = "SourceQueueArn"
	OutputDeadLetterQueueURL   = "DeadLetterQueueUrl"
	OutputDeadLetterQueueARN   = "DeadLetterQueueArn"
	OutputInvalidQueueURL      = "InvalidQueueUrl"
	OutputParkingQueueURL      = "ParkingQueueUrl"
	OutputIdempotencyTableName = "IdempotencyTableName"
	OutputLedgerTableName      = "LedgerTableName"
	OutputConsumerFunctionName = "ConsumerFunctionName"
	OutputReplayFunctionName   = "ReplayFunctionName"
	OutputReplayScheduleName   = "ReplayScheduleName"
	OutputAlarmTopicARN        = "AlarmTopicArn"
	OutputDashboardName        = "DashboardName"
	OutputConsumerLogGroupName = "ConsumerLogGroupName"
	OutputReplayLogGroupName   = "ReplayLogGroupName"
)

// NewHomingStack composes one order lane and outputs every queue, table,
// function, schedule and topic it holds. It panics, as CDK constructs do, when the lane
// props are invalid (see deadletter.LaneProps.Validate).
func NewHomingStack(scope constructs.Construct, id string, props *HomingStackProps) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)

	laneProps := props.Lane
	if laneProps.TaxServiceURL == nil {
		laneProps.TaxServiceURL = awscdk.NewCfnParameter(stack, jsii.String("TaxServiceUrl"), &awscdk.CfnParameterProps{
			Type:                  jsii.String("String"),
			Description:           jsii.String("Base URL of the tax and invoice service the consumer calls (and whose /health gates replay)."),
			AllowedPattern:        jsii.String(taxURLPattern(laneProps.AllowPlainHTTP)),
			ConstraintDescription: jsii.String("an https:// URL (an http:// one only where the lane allows plain HTTP)"),
		}).ValueAsString()
	}
	lane := deadletter.NewLane(stack, "Orders", &laneProps)

	for _, o := range []struct{ id, value, description string }{
		{OutputSourceQueueURL, *lane.SourceQueue().QueueUrl(), "Producers send order.created here."},
		{OutputSourceQueueARN, *lane.SourceQueue().QueueArn(), "ARN of the source queue."},
		{OutputDeadLetterQueueURL, *lane.DeadLetterQueue().QueueUrl(), "Messages that exhausted their receives."},
		{OutputDeadLetterQueueARN, *lane.DeadLetterQueue().QueueArn(), "ARN of the DLQ."},
		{OutputInvalidQueueURL, *lane.InvalidQueue().QueueUrl(), "Messages the consumer rejected as invalid, with their reason."},
		{OutputParkingQueueURL, *lane.ParkingQueue().QueueUrl(), "Dead letters whose replays are exhausted."},
		{OutputIdempotencyTableName, *lane.IdempotencyTable().TableName(), "Idempotent receiver records."},
		{OutputLedgerTableName, *lane.LedgerTable().TableName(), "Replay ledger."},
		{OutputConsumerFunctionName, *lane.Consumer().FunctionName(), "The consumer function."},
		{OutputReplayFunctionName, *lane.Replay().FunctionName(), "The replay function; invoke it for an on-demand run."},
		{OutputReplayScheduleName, *lane.ReplaySchedule().RuleName(), "The replay schedule; `aws events disable-rule --name <this>` stops scheduled replay."},
		{OutputAlarmTopicARN, *lane.AlarmTopic().TopicArn(), "Subscribe here to the lane's alarms."},
		{OutputDashboardName, *lane.Dashboard().DashboardName(), "CloudWatch dashboard of the lane."},
		{OutputConsumerLogGroupName, *lane.ConsumerLogGroup().LogGroupName(), "The consumer's log group: aws logs tail <this>."},
		{OutputReplayLogGroupName, *lane.ReplayLogGroup().LogGroupName(), "The replay function's log group (run summaries): aws logs tail <this>."},
	} {
		awscdk.NewCfnOutput(stack, jsii.String(o.id), &awscdk.CfnOutputProps{
			Value:       jsii.String(o.value),
			Description: jsii.String(o.description),
		})
	}
	return stack
}

// taxURLPattern is the TaxServiceUrl parameter's pattern: https:// only,
// unless the lane allows plain HTTP, as deadletter.LaneProps.Validate checks
// a URL given at synthesis.
func taxURLPattern(allowPlainHTTP *bool) string {
	if allowPlainHTTP != nil && *allowPlainHTTP {
		return `^https?://\S+$`
	}
	return `^https://\S+$`
}
