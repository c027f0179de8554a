package deadletter

import (
	"fmt"
	"math"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/settings"
)

// Defaults and bounds of the metrics and early-paging props of [LaneProps].
const (
	// DefaultConsumerFailureRatePercent: the ConsumerFailures alarm fires when
	// more than this percentage of the records of a period failed.
	DefaultConsumerFailureRatePercent = 10
	// DefaultSourceAgeThresholdSeconds: the SourceAge alarm fires when the
	// source queue's oldest message is older than this. A healthy lane
	// consumes within seconds; a failed record is hidden for the visibility
	// timeout (180 s on AWS), so an outage ages the queue past this quickly.
	DefaultSourceAgeThresholdSeconds = 120
	// EarlyAlarmEvaluationPeriods and EarlyAlarmDatapoints: the ConsumerFailures
	// and SourceAge alarms fire when 2 of the last 3 periods breach (one
	// period alone, a blip, does not page).
	EarlyAlarmEvaluationPeriods = 3
	EarlyAlarmDatapoints        = 2
	// PageWithinSeconds is the promise of the early alarms on the default
	// props: a downstream outage pages within 5 minutes, however slowly the
	// DLQ fills (maxReceiveCount x visibility, 30 minutes on AWS). The
	// template tests check the arithmetic (see [Alarms]).
	PageWithinSeconds = 300
)

// The consumer's EMF metric and dimension names, as internal/metrics writes
// them (pinned by a test of the root module, which this module cannot
// import), and the replay's.
const (
	MetricRecordsProcessed      = "RecordsProcessed"
	MetricRecordsFailed         = "RecordsFailed"
	MetricRecordsInvalid        = "RecordsInvalid"
	MetricDuplicatesAbsorbed    = "DuplicatesAbsorbed"
	MetricCompletionsUnrecorded = "CompletionsUnrecorded"
	MetricInDoubtTakeovers      = "InDoubtTakeovers"
	DimensionLane               = "Lane"
	DimensionReason             = "Reason"
	DimensionRoute              = "Route"
)

// alarmsResolved are the metrics and early-paging props with their defaults.
type alarmsResolved struct {
	serviceName   *string // nil: the lane's construct path
	namespace     string
	failureRate   float64 // percent
	failedRecords float64
	sourceAge     float64 // seconds
	metricMath    bool
	actions       []awscloudwatch.IAlarmAction
}

func (p *LaneProps) resolveAlarms() alarmsResolved {
	a := alarmsResolved{
		serviceName:   p.ServiceName,
		namespace:     settings.MetricsNamespace.Default,
		failureRate:   number(p.ConsumerFailureRateThreshold, DefaultConsumerFailureRatePercent),
		failedRecords: number(p.ConsumerFailedRecordsThreshold, 0),
		sourceAge:     seconds(p.SourceAgeThreshold, DefaultSourceAgeThresholdSeconds),
		metricMath:    p.MetricMath == nil || *p.MetricMath,
		actions:       p.AlarmActions,
	}
	if p.MetricsNamespace != nil {
		a.namespace = *p.MetricsNamespace
	}
	return a
}

// validate reports the invalid metrics and alarm props, in the words of
// [LaneProps.Validate]; the names follow CloudWatch's rules, as the
// functions check them (internal/metrics.Config.Validate).
func (a alarmsResolved) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	ns := a.namespace
	if strings.TrimSpace(ns) == "" || len(ns) > 255 || strings.HasPrefix(ns, "AWS/") ||
		strings.IndexFunc(ns, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_/#: ", r))
		}) >= 0 {
		bad("MetricsNamespace is %q, want 1..255 ASCII letters, digits, spaces and . - _ / # :, not blank, not AWS/...", ns)
	}
	if a.serviceName != nil {
		name := *a.serviceName
		if strings.TrimSpace(name) == "" || len(name) > 1024 || strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			bad("ServiceName is %q, want 1..1024 printable ASCII characters, not blank", name)
		}
	}
	if !(a.failureRate > 0 && a.failureRate < 100) {
		bad("ConsumerFailureRateThreshold is %v, want a percentage above 0 and below 100", a.failureRate)
	}
	if a.failedRecords < 0 || a.failedRecords != math.Trunc(a.failedRecords) {
		bad("ConsumerFailedRecordsThreshold is %v, want a whole number >= 0", a.failedRecords)
	}
	if a.sourceAge < 1 {
		bad("SourceAgeThreshold is %s, want at least 1s", human(a.sourceAge))
	}
	for i, action := range a.actions {
		if action == nil {
			bad("AlarmActions[%d] is nil", i)
		}
	}
	return errs
}

// serviceName is the lane's POWERTOOLS_SERVICE_NAME, the Lane dimension of
// both functions' metrics: the prop, or the lane's construct path (unique
// in the app, so two lanes never merge).
func (l *lane) serviceName() string {
	if n := l.props.alarms.serviceName; n != nil {
		return *n
	}
	return *l.Node().Path()
}

// metricsEnvironment are the variables that name both functions' metrics.
func (l *lane) metricsEnvironment() map[string]*string {
	return map[string]*string{
		settings.ServiceName.Env:      jsii.String(l.serviceName()),
		settings.MetricsNamespace.Env: jsii.String(l.props.alarms.namespace),
	}
}

// consumerMetric is one of the consumer's EMF metrics of this lane. An
// alarm's metric has no label: a label makes the CDK render the alarm
// with a metric query, which emulators that reject metric math refuse.
func (l *lane) consumerMetric(name, label, statistic string) awscloudwatch.Metric {
	props := &awscloudwatch.MetricProps{
		Namespace:     jsii.String(l.props.alarms.namespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{DimensionLane: jsii.String(l.serviceName())},
		Statistic:     jsii.String(statistic),
		Period:        seconds2duration(l.props.alarmPeriod),
	}
	if label != "" {
		props.Label = jsii.String(label)
	}
	return awscloudwatch.NewMetric(props)
}

// replayMetric is one of the replay function's EMF metrics of this lane's
// route.
func (l *lane) replayMetric(name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String(l.props.alarms.namespace),
		MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{
			DimensionLane:  jsii.String(l.serviceName()),
			DimensionRoute: jsii.String(l.props.replay.routeName),
		},
		Statistic: jsii.String("Sum"),
		Period:    seconds2duration(l.props.alarmPeriod),
		Label:     jsii.String(name),
	})
}

// consumerFailureRate is the percentage of the consumer's records that
// failed per period (metric math).
func (l *lane) consumerFailureRate(label string) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("100 * failed / processed"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"failed":    l.consumerMetric(MetricRecordsFailed, "failed", "Sum"),
			"processed": l.consumerMetric(MetricRecordsProcessed, "processed", "Sum"),
		},
		Period: seconds2duration(l.props.alarmPeriod),
		Label:  jsii.String(label),
	})
}

// Alarms are the lane's CloudWatch alarms. They treat missing data as not
// breaching (an empty queue sends no data points on some emulators and
// after idle periods) and notify the lane's alarm topic, and the props'
// AlarmActions, of both ALARM and OK.
//
// ConsumerFailures and SourceAge page early: they fire when
// EarlyAlarmDatapoints of EarlyAlarmEvaluationPeriods periods breach, so
// with the default 1-minute period a downstream outage pages within
// PageWithinSeconds (threshold age plus 2 periods for SourceAge; 2 periods
// of failed records for ConsumerFailures), not after maxReceiveCount x
// visibility as DeadLetterDepth does. The others fire on a single breaching
// period.
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
	// ConsumerFailures: the consumer reported records back to SQS as
	// failures (the EMF metrics RecordsFailed over RecordsProcessed): more
	// than ConsumerFailureRateThreshold percent of them, or with MetricMath
	// false more than ConsumerFailedRecordsThreshold records, in
	// EarlyAlarmDatapoints of EarlyAlarmEvaluationPeriods periods.
	ConsumerFailures awscloudwatch.Alarm
	// SourceAge: the source queue's oldest message is older than
	// SourceAgeThreshold in EarlyAlarmDatapoints of
	// EarlyAlarmEvaluationPeriods periods: the consumer is not keeping up,
	// or its records keep failing.
	SourceAge awscloudwatch.Alarm
}

// All returns the alarms in a fixed order.
func (a Alarms) All() []awscloudwatch.Alarm {
	return []awscloudwatch.Alarm{a.DeadLetterDepth, a.DeadLetterAge, a.InvalidDepth, a.ParkingDepth, a.ConsumerErrors, a.ConsumerThrottles, a.ReplayErrors,
		a.ConsumerFailures, a.SourceAge}
}

func (l *lane) metricOptions(statistic string) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{
		Period:    seconds2duration(l.props.alarmPeriod),
		Statistic: jsii.String(statistic),
	}
}

// alarm raises when metric is greater than threshold for one period.
func (l *lane) alarm(id, description string, metric awscloudwatch.IMetric, threshold float64) awscloudwatch.Alarm {
	return l.alarmOf(id, description, metric, threshold, 1, 1)
}

// earlyAlarm raises when metric is greater than threshold in
// EarlyAlarmDatapoints of EarlyAlarmEvaluationPeriods periods.
func (l *lane) earlyAlarm(id, description string, metric awscloudwatch.IMetric, threshold float64) awscloudwatch.Alarm {
	return l.alarmOf(id, description, metric, threshold, EarlyAlarmEvaluationPeriods, EarlyAlarmDatapoints)
}

func (l *lane) alarmOf(id, description string, metric awscloudwatch.IMetric, threshold, periods, datapoints float64) awscloudwatch.Alarm {
	a := awscloudwatch.NewAlarm(l.scope(), jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String(description),
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(periods),
		DatapointsToAlarm:  jsii.Number(datapoints),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	actions := append([]awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(l.topic)}, l.props.alarms.actions...)
	a.AddAlarmAction(actions...)
	a.AddOkAction(actions...)
	return a
}

// addAlarmTopic adopts LaneProps.AlarmTopic, or creates the lane's topic
// with its own key, and lets CloudWatch alarms of this account publish.
func (l *lane) addAlarmTopic() {
	r := l.props
	cloudwatch := awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)
	if r.alarmTopic != nil {
		l.topic = r.alarmTopic
	} else {
		// CloudWatch cannot publish to a topic encrypted with the AWS-managed
		// SNS key, so the topic has its own key, rotated yearly, that
		// CloudWatch may use.
		l.topicKey = awskms.NewKey(l.scope(), jsii.String("AlarmTopicKey"), &awskms.KeyProps{
			Description:       jsii.String("Encrypts the dead-letter lane's alarm topic."),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     r.removalPolicy,
			PendingWindow:     awscdk.Duration_Days(jsii.Number(7)),
		})
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
	}
	// The topic policy replaces the default one, so CloudWatch alarms of this
	// account are allowed to publish explicitly. On an imported topic the
	// CDK adds nothing; two lanes sharing a topic add one statement.
	l.topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{cloudwatch},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{l.topic.TopicArn()},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
		},
	}))
}

func (l *lane) addAlarms() {
	r := l.props
	l.addAlarmTopic()

	maximum := l.metricOptions("Maximum")
	sum := l.metricOptions("Sum")
	ageThreshold := DeadLetterAgeAlarmRatio * r.deadLetterRetention
	l.alarms = Alarms{
		DeadLetterDepth: l.alarm("DeadLetterDepthAlarm",
			"Messages reached the DLQ after exhausting their receives on the source queue; the scheduled replay returns them when the cause is gone.",
			l.deadLetter.MetricApproximateNumberOfMessagesVisible(maximum), 0),
		DeadLetterAge: l.alarm("DeadLetterAgeAlarm",
			fmt.Sprintf("The oldest DLQ message is older than %.0f%% of the DLQ retention (%s of %s): it expires unseen unless it is replayed or parked.",
				DeadLetterAgeAlarmRatio*100, human(ageThreshold), human(r.deadLetterRetention)),
			l.deadLetter.MetricApproximateAgeOfOldestMessage(maximum), ageThreshold),
		InvalidDepth: l.alarm("InvalidDepthAlarm",
			"The consumer rejected messages as invalid; fix them at the producer, they are never replayed as is.",
			l.invalid.MetricApproximateNumberOfMessagesVisible(maximum), 0),
		ParkingDepth: l.alarm("ParkingDepthAlarm",
			"Dead letters whose replays are exhausted were parked; they need an operator.",
			l.parking.MetricApproximateNumberOfMessagesVisible(maximum), 0),
		ConsumerErrors: l.alarm("ConsumerErrorsAlarm",
			"The consumer function failed whole invocations (not single records).",
			l.consumer.MetricErrors(sum), 0),
		ConsumerThrottles: l.alarm("ConsumerThrottlesAlarm",
			"Consumer invocations were throttled; check reserved and account concurrency against MaxConcurrency.",
			l.consumer.MetricThrottles(sum), 0),
		ReplayErrors: l.alarm("ReplayErrorsAlarm",
			"A replay run failed; its run summary in the replay log group says why. To stop scheduled replay during an incident, "+
				"disable the rule named by the "+settings.OutputID(r.name, settings.OutputReplayScheduleName)+" output (aws events disable-rule --name <name>).",
			l.replay.fn.MetricErrors(sum), 0),
		SourceAge: l.earlyAlarm("SourceAgeAlarm",
			fmt.Sprintf("The source queue's oldest message is older than %s: the consumer is not keeping up or its records keep failing "+
				"(a downstream outage). Read the consumer's RecordsFailed and its log lines with outcome failed.", human(r.alarms.sourceAge)),
			l.source.MetricApproximateAgeOfOldestMessage(maximum), r.alarms.sourceAge),
	}
	if r.alarms.metricMath {
		l.alarms.ConsumerFailures = l.earlyAlarm("ConsumerFailuresAlarm",
			fmt.Sprintf("More than %v%% of the consumer's records failed and go back to SQS (RecordsFailed / RecordsProcessed): "+
				"a downstream outage or a bad deploy; they reach the DLQ after maxReceiveCount receives.", r.alarms.failureRate),
			l.consumerFailureRate("failure rate (%)"), r.alarms.failureRate)
	} else {
		// Emulators that reject metric-math alarms: a count of failed records.
		l.alarms.ConsumerFailures = l.earlyAlarm("ConsumerFailuresAlarm",
			fmt.Sprintf("More than %v of the consumer's records failed and go back to SQS (RecordsFailed): "+
				"a downstream outage or a bad deploy; they reach the DLQ after maxReceiveCount receives.", r.alarms.failedRecords),
			l.consumerMetric(MetricRecordsFailed, "", "Sum"), r.alarms.failedRecords)
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
	functionRow := func(name string, fn awslambda.IFunction, timeout float64) *[]awscloudwatch.IWidget {
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
					Markdown: jsii.String("## Dead-letter lane `" + r.name + "`\n" +
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
				}, &awscloudwatch.HorizontalAnnotation{
					Label: jsii.String("source age alarm"), Value: jsii.Number(r.alarms.sourceAge),
				}),
			},
			l.recordsRow(graph),
			functionRow("Consumer", l.consumer, r.timeout),
			functionRow("Replay", l.replay.fn, r.replay.timeout),
			{
				graph("Replay runs (EMF, route "+r.replay.routeName+")", 24, []awscloudwatch.IMetric{
					l.replayMetric("Replayed"), l.replayMetric("Parked"), l.replayMetric("Delayed"),
					l.replayMetric("DeadLettered"), l.replayMetric("Errors"), l.replayMetric("GateClosed"),
				}),
			},
		},
	})
}

// recordsRow shows the consumer's EMF metrics: records by outcome, the
// failure rate against its alarm, invalid records by reason, and the
// idempotent receiver's events. Without metric math (an emulator), the
// rate and the by-reason search are left out.
func (l *lane) recordsRow(graph func(string, float64, []awscloudwatch.IMetric, ...*awscloudwatch.HorizontalAnnotation) awscloudwatch.IWidget) *[]awscloudwatch.IWidget {
	a := l.props.alarms
	records := []awscloudwatch.IMetric{
		l.consumerMetric(MetricRecordsProcessed, "processed", "Sum"),
		l.consumerMetric(MetricRecordsFailed, "failed", "Sum"),
		l.consumerMetric(MetricRecordsInvalid, "invalid", "Sum"),
	}
	receiver := []awscloudwatch.IMetric{
		l.consumerMetric(MetricDuplicatesAbsorbed, "duplicates absorbed", "Sum"),
		l.consumerMetric(MetricCompletionsUnrecorded, "completions unrecorded", "Sum"),
		l.consumerMetric(MetricInDoubtTakeovers, "in-doubt takeovers", "Sum"),
	}
	if !a.metricMath {
		return &[]awscloudwatch.IWidget{
			graph("Consumer records (EMF)", 12, records, &awscloudwatch.HorizontalAnnotation{
				Label: jsii.String("failure alarm"), Value: jsii.Number(a.failedRecords),
			}),
			graph("Idempotent receiver (EMF)", 12, receiver),
		}
	}
	byReason := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,%s,%s} MetricName="%s" %s="%s"', 'Sum', %.0f)`,
			a.namespace, DimensionLane, DimensionReason, MetricRecordsInvalid, DimensionLane, l.serviceName(), l.props.alarmPeriod)),
		Period: seconds2duration(l.props.alarmPeriod),
		Label:  jsii.String(""),
	})
	return &[]awscloudwatch.IWidget{
		graph("Consumer records (EMF)", 6, records),
		graph("Consumer failure rate (%)", 6, []awscloudwatch.IMetric{l.consumerFailureRate("failed / processed")}, &awscloudwatch.HorizontalAnnotation{
			Label: jsii.String("failure alarm"), Value: jsii.Number(a.failureRate),
		}),
		graph("Invalid records by reason (EMF)", 6, []awscloudwatch.IMetric{byReason}),
		graph("Idempotent receiver (EMF)", 6, receiver),
	}
}
