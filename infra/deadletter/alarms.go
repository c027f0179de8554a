package deadletter

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// Alarms are the lane's CloudWatch alarms. Each one fires on a single
// breaching period, treats missing data as not breaching (an empty queue
// sends no data points on some emulators and after idle periods) and
// notifies the lane's alarm topic of both ALARM and OK.
type Alarms struct {
	// DeadLetterDepth: the DLQ holds at least one visible message.
	DeadLetterDepth awscloudwatch.Alarm
	// DeadLetterAge: the oldest DLQ message is older than
	// DeadLetterAgeAlarmRatio of the DLQ retention, so it expires soon.
	DeadLetterAge awscloudwatch.Alarm
	// InvalidDepth: the invalid queue holds at least one visible message.
	InvalidDepth awscloudwatch.Alarm
	// ParkingDepth: the parking queue holds at least one visible message.
	ParkingDepth awscloudwatch.Alarm
	// ConsumerErrors: the consumer function failed at least once (a failed
	// invocation, not a record reported in batchItemFailures).
	ConsumerErrors awscloudwatch.Alarm
	// ConsumerThrottles: at least one consumer invocation was throttled.
	ConsumerThrottles awscloudwatch.Alarm
	// ReplayErrors: a replay invocation failed: it could not start, or a
	// route stopped on an error (a queue or the ledger failed). Failures of
	// single messages are in the run summary and the EMF metric Errors.
	ReplayErrors awscloudwatch.Alarm
}

// All returns the alarms in a fixed order.
func (a Alarms) All() []awscloudwatch.Alarm {
	return []awscloudwatch.Alarm{a.DeadLetterDepth, a.DeadLetterAge, a.InvalidDepth, a.ParkingDepth, a.ConsumerErrors, a.ConsumerThrottles, a.ReplayErrors}
}

func (l *lane) metricOptions(statistic string) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{
		Period:    seconds2duration(l.props.alarmPeriod),
		Statistic: jsii.String(statistic),
	}
}

// alarm raises when metric is greater than threshold for one period.
func (l *lane) alarm(id, description string, metric awscloudwatch.IMetric, threshold float64) awscloudwatch.Alarm {
	a := awscloudwatch.NewAlarm(l.scope(), jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String(description),
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(1),
		DatapointsToAlarm:  jsii.Number(1),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	action := awscloudwatchactions.NewSnsAction(l.topic)
	a.AddAlarmAction(action)
	a.AddOkAction(action)
	return a
}

func (l *lane) addAlarms() {
	r := l.props
	// CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS
	// key, so the topic has its own key, rotated yearly, that CloudWatch may use.
	l.topicKey = awskms.NewKey(l.scope(), jsii.String("AlarmTopicKey"), &awskms.KeyProps{
		Description:       jsii.String("Encrypts the dead-letter lane's alarm topic."),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     r.removalPolicy,
		PendingWindow:     awscdk.Duration_Days(jsii.Number(7)),
	})
	cloudwatch := awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)
	l.topicKey.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsUseTheKey"),
		Principals: &[]awsiam.IPrincipal{cloudwatch},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings("*"),
		// Only on behalf of this account's alarms (confused deputy).
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
		},
	}), nil)
	l.topic = awssns.NewTopic(l.scope(), jsii.String("AlarmTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("Dead-letter lane alarms"),
		MasterKey:   l.topicKey,
		EnforceSSL:  jsii.Bool(true),
	})
	// The topic policy replaces the default one, so CloudWatch alarms of this
	// account are allowed to publish explicitly.
	l.topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{cloudwatch},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{l.topic.TopicArn()},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
		},
	}))

	maximum := l.metricOptions("Maximum")
	sum := l.metricOptions("Sum")
	ageThreshold := DeadLetterAgeAlarmRatio * r.deadLetterRetention
	l.alarms = Alarms{
		DeadLetterDepth: l.alarm("DeadLetterDepthAlarm",
			"Messages reached the DLQ after exhausting their receives on the source queue; the scheduled replay returns them when the cause is gone.",
			l.deadLetter.MetricApproximateNumberOfMessagesVisible(maximum), 0),
		DeadLetterAge: l.alarm("DeadLetterAgeAlarm",
			fmt.Sprintf("The oldest DLQ message is older than %.0f%% of the DLQ retention (%.0f s): it expires unseen unless it is replayed or parked.",
				DeadLetterAgeAlarmRatio*100, r.deadLetterRetention),
			l.deadLetter.MetricApproximateAgeOfOldestMessage(maximum), ageThreshold),
		InvalidDepth: l.alarm("InvalidDepthAlarm",
			"The consumer rejected messages as invalid; fix them at the producer, they are never replayed as is.",
			l.invalid.MetricApproximateNumberOfMessagesVisible(maximum), 0),
		ParkingDepth: l.alarm("ParkingDepthAlarm",
			"Dead letters whose replays are exhausted were parked; they need an operator.",
			l.parking.MetricApproximateNumberOfMessagesVisible(maximum), 0),
		ConsumerErrors: l.alarm("ConsumerErrorsAlarm",
			"The consumer function failed whole invocations (not single records).",
			l.consumer.fn.MetricErrors(sum), 0),
		ConsumerThrottles: l.alarm("ConsumerThrottlesAlarm",
			"Consumer invocations were throttled; check reserved and account concurrency against MaxConcurrency.",
			l.consumer.fn.MetricThrottles(sum), 0),
		ReplayErrors: l.alarm("ReplayErrorsAlarm",
			"A replay run failed; its run summary in the replay log group says why. To stop scheduled replay during an incident, "+
				"disable the rule named by the ReplayScheduleName output (aws events disable-rule --name <name>).",
			l.replay.fn.MetricErrors(sum), 0),
	}
}

func (l *lane) addDashboard() {
	r := l.props
	period := seconds2duration(r.alarmPeriod)
	labelled := func(label, statistic string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Label: jsii.String(label), Period: period, Statistic: jsii.String(statistic)}
	}
	graph := func(title string, width float64, left []awscloudwatch.IMetric, annotations ...*awscloudwatch.HorizontalAnnotation) awscloudwatch.IWidget {
		props := &awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(width), Height: jsii.Number(6), Left: &left}
		if len(annotations) > 0 {
			props.LeftAnnotations = &annotations
		}
		return awscloudwatch.NewGraphWidget(props)
	}
	// The same two widgets for each function: invocations, errors and
	// throttles; duration against the timeout.
	functionRow := func(name string, fn awslambda.Function, timeout float64) *[]awscloudwatch.IWidget {
		return &[]awscloudwatch.IWidget{
			graph(name+" invocations, errors, throttles", 12, []awscloudwatch.IMetric{
				fn.MetricInvocations(labelled("invocations", "Sum")),
				fn.MetricErrors(labelled("errors", "Sum")),
				fn.MetricThrottles(labelled("throttles", "Sum")),
			}),
			graph(name+" duration (ms)", 12, []awscloudwatch.IMetric{
				fn.MetricDuration(labelled("p50", "p50")),
				fn.MetricDuration(labelled("p99", "p99")),
				fn.MetricDuration(labelled("max", "Maximum")),
			}, &awscloudwatch.HorizontalAnnotation{
				Label: jsii.String("timeout"), Value: jsii.Number(timeout * 1000),
			}),
		}
	}
	alarms := []interfacesawscloudwatch.IAlarmRef{}
	for _, a := range l.alarms.All() {
		alarms = append(alarms, a)
	}

	l.dashboard = awscloudwatch.NewDashboard(l.scope(), jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
		Widgets: &[]*[]awscloudwatch.IWidget{
			{
				awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
					Width: jsii.Number(24), Height: jsii.Number(2),
					Markdown: jsii.String("## Dead-letter lane\n" +
						"**DLQ**: transient failures, replayed on schedule. **Invalid**: rejected by the consumer, fix at the producer. " +
						"**Parking**: replays exhausted, needs an operator."),
				}),
			},
			{
				awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
					Title: jsii.String("Alarms"), Width: jsii.Number(24), Height: jsii.Number(3), Alarms: &alarms,
				}),
			},
			{
				graph("Queue depth (visible messages)", 12, []awscloudwatch.IMetric{
					l.source.MetricApproximateNumberOfMessagesVisible(labelled("source", "Maximum")),
					l.deadLetter.MetricApproximateNumberOfMessagesVisible(labelled("DLQ", "Maximum")),
					l.invalid.MetricApproximateNumberOfMessagesVisible(labelled("invalid", "Maximum")),
					l.parking.MetricApproximateNumberOfMessagesVisible(labelled("parking", "Maximum")),
					l.source.MetricApproximateNumberOfMessagesNotVisible(labelled("source in flight", "Maximum")),
				}),
				graph("Age of oldest message (seconds)", 12, []awscloudwatch.IMetric{
					l.source.MetricApproximateAgeOfOldestMessage(labelled("source", "Maximum")),
					l.deadLetter.MetricApproximateAgeOfOldestMessage(labelled("DLQ", "Maximum")),
					l.invalid.MetricApproximateAgeOfOldestMessage(labelled("invalid", "Maximum")),
					l.parking.MetricApproximateAgeOfOldestMessage(labelled("parking", "Maximum")),
				}, &awscloudwatch.HorizontalAnnotation{
					Label: jsii.String("DLQ age alarm"), Value: jsii.Number(DeadLetterAgeAlarmRatio * r.deadLetterRetention),
				}),
			},
			functionRow("Consumer", l.consumer.fn, r.timeout),
			functionRow("Replay", l.replay.fn, r.replay.timeout),
		},
	})
}
