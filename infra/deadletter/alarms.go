package deadletter

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/internal/settings"
)

// The consumer's EMF metric and dimension names, as internal/metrics writes
// them (pinned by a test of the root module, which this module cannot
// import), and the replay's.
const (
	metricRecordsProcessed      = "RecordsProcessed"
	MetricRecordsFailed         = "RecordsFailed"
	metricRecordsInvalid        = "RecordsInvalid"
	metricDuplicatesAbsorbed    = "DuplicatesAbsorbed"
	metricCompletionsUnrecorded = "CompletionsUnrecorded"
	metricInDoubtTakeovers      = "InDoubtTakeovers"
	dimensionLane               = "Lane"
	dimensionReason             = "Reason"
	dimensionRoute              = "Route"
	// The replay's report of each run, per route (the replay engine, Options.Lane set).
	metricOldestDeadLetterAge = "OldestDeadLetterAgeSeconds"
	metricSecondsToExpiry     = "SecondsToExpiry"
	metricInRescueWindow      = "InRescueWindow"
	metricRunCompleted        = "RunCompleted"
)

// serviceName is the lane's POWERTOOLS_SERVICE_NAME, the Lane dimension of
// both functions' metrics: the prop, or the lane's construct path (unique
// in the app, so two lanes never merge).
func (l *lane) serviceName() string {
	if n := l.props.serviceName; n != nil {
		return *n
	}
	return *l.Node().Path()
}

// metricsEnvironment are the variables that name both functions' metrics.
func (l *lane) metricsEnvironment() map[string]*string {
	return map[string]*string{
		settings.ServiceName.Env:      jsii.String(l.serviceName()),
		settings.MetricsNamespace.Env: jsii.String(l.props.namespace),
	}
}

// consumerMetric is one of the consumer's EMF metrics of this lane. An
// alarm's metric has no label: a label makes the CDK render the alarm
// with a metric query, which emulators that reject metric math refuse.
func (l *lane) consumerMetric(name, label, statistic string) awscloudwatch.Metric {
	props := &awscloudwatch.MetricProps{
		Namespace:     jsii.String(l.props.namespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{dimensionLane: jsii.String(l.serviceName())},
		Statistic:     jsii.String(statistic),
		Period:        seconds2duration(l.props.alarms.period),
	}
	if label != "" {
		props.Label = jsii.String(label)
	}
	return awscloudwatch.NewMetric(props)
}

// replayMetric is one of the replay function's EMF metrics of this lane's
// route, labelled for the dashboard.
func (l *lane) replayMetric(name, statistic string) awscloudwatch.Metric {
	m := l.replayAlarmMetric(name, statistic)
	return m.With(&awscloudwatch.MetricOptions{Label: jsii.String(name), Period: seconds2duration(l.props.alarms.period)})
}

// replayAlarmMetric is one of the replay's EMF metrics of this lane's route
// over the report period (reportPeriodIntervals schedule intervals),
// without a label (see consumerMetric).
func (l *lane) replayAlarmMetric(name, statistic string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String(l.props.namespace),
		MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{
			dimensionLane:  jsii.String(l.serviceName()),
			dimensionRoute: jsii.String(l.props.replay.routeName),
		},
		Statistic: jsii.String(statistic),
		Period:    seconds2duration(l.reportPeriod()),
	})
}

// reportPeriod is the period of the alarms on the replay's report, in
// seconds.
func (l *lane) reportPeriod() float64 { return reportPeriodIntervals * l.props.replay.interval }

// consumerFailureRate is the percentage of the consumer's records that
// failed per period (metric math).
func (l *lane) consumerFailureRate(label string) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("100 * failed / processed"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"failed":    l.consumerMetric(MetricRecordsFailed, "failed", "Sum"),
			"processed": l.consumerMetric(metricRecordsProcessed, "processed", "Sum"),
		},
		Period: seconds2duration(l.props.alarms.period),
		Label:  jsii.String(label),
	})
}

// Alarms are the lane's CloudWatch alarms. Each fires on one breaching
// period and notifies the lane's alarm topic, and the props' Alarms.Actions,
// on ALARM and on OK. Only ConsumerFailures uses metric math, and only with
// MetricMath (the default; emulators reject it). Missing data is not
// breaching unless a field says otherwise. How soon they page, and why:
// docs/OPERATIONS.md#alarm-by-alarm.
type Alarms struct {
	// DeadLetterDepth: the DLQ holds at least one visible message.
	DeadLetterDepth awscloudwatch.Alarm
	// DeadLetterAge: the oldest dead letter a replay run examined (its
	// OldestDeadLetterAgeSeconds, from its SentTimestamp) is older than
	// deadLetterAgeAlarmRatio of the DLQ retention, so it expires soon.
	// It replaces the alarm on the DLQ's ApproximateAgeOfOldestMessage.
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
	// false more than ConsumerFailedRecordsThreshold records, in one
	// period. Missing data (no records) keeps its state: a lone order that
	// fails on every delivery does not flap between ALARM and OK, and only
	// records that succeed bring it back to OK.
	ConsumerFailures awscloudwatch.Alarm
	// SourceAge: the source queue's oldest message is older than
	// SourceAgeThreshold: the consumer does not consume or keep up, or its
	// records keep failing.
	SourceAge awscloudwatch.Alarm
	// RescueWindow: a replay run examined dead letters inside the expiry
	// rescue window (its InRescueWindow > 0): they expire within
	// ReplayProps.ExpiryRescueWindow unless they are replayed, and the
	// replay parks those it cannot replay only while it runs.
	RescueWindow awscloudwatch.Alarm
	// ReplayHeartbeat: no replay run of the lane's route completed in
	// reportPeriodIntervals schedule intervals (its RunCompleted, missing
	// data breaching): the schedule is disabled, or every run fails before
	// it reports. Nothing rescues expiring dead letters meanwhile.
	ReplayHeartbeat awscloudwatch.Alarm
	// ArchiveFailed: a replay run could not archive a message of the
	// parking or invalid queue (its ArchiveFailed > 0): the message stays
	// in its queue, whose retention runs on.
	ArchiveFailed awscloudwatch.Alarm
}

// All returns the alarms in a fixed order.
func (a Alarms) All() []awscloudwatch.Alarm {
	return []awscloudwatch.Alarm{a.DeadLetterDepth, a.DeadLetterAge, a.InvalidDepth, a.ParkingDepth, a.ConsumerErrors, a.ConsumerThrottles, a.ReplayErrors,
		a.ConsumerFailures, a.SourceAge, a.RescueWindow, a.ReplayHeartbeat, a.ArchiveFailed}
}

func (l *lane) metricOptions(statistic string) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{
		Period:    seconds2duration(l.props.alarms.period),
		Statistic: jsii.String(statistic),
	}
}

// alarmSpec is one alarm of the lane: it fires when one period of its
// metric breaches the threshold.
type alarmSpec struct {
	id, description string
	metric          awscloudwatch.IMetric
	threshold       float64
	// below: the metric breaches under the threshold, not above it.
	below bool
	// missing is how the alarm treats missing data; default notBreaching.
	missing awscloudwatch.TreatMissingData
}

// alarm raises when metric is greater than threshold for one period,
// missing data not breaching.
func (l *lane) alarm(id, description string, metric awscloudwatch.IMetric, threshold float64) awscloudwatch.Alarm {
	return l.alarmOf(alarmSpec{id: id, description: description, metric: metric, threshold: threshold})
}

func (l *lane) alarmOf(spec alarmSpec) awscloudwatch.Alarm {
	comparison := awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD
	if spec.below {
		comparison = awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD
	}
	missing := spec.missing
	if missing == "" {
		missing = awscloudwatch.TreatMissingData_NOT_BREACHING
	}
	a := awscloudwatch.NewAlarm(l.scope(), jsii.String(spec.id), &awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String(spec.description),
		Metric:             spec.metric,
		Threshold:          jsii.Number(spec.threshold),
		ComparisonOperator: comparison,
		EvaluationPeriods:  jsii.Number(1),
		DatapointsToAlarm:  jsii.Number(1),
		TreatMissingData:   missing,
	})
	actions := append([]awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(l.topic)}, l.props.alarms.actions...)
	a.AddAlarmAction(actions...)
	a.AddOkAction(actions...)
	return a
}

// addAlarmTopic adopts AlarmProps.Topic, or creates the lane's topic
// with its own key, and lets CloudWatch alarms of this account publish.
func (l *lane) addAlarmTopic() {
	r := l.props
	cloudwatch := awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)
	if r.alarms.topic != nil {
		l.topic = r.alarms.topic
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
	ageThreshold := deadLetterAgeAlarmRatio * r.queues.deadLetterRetention
	report := human(l.reportPeriod())
	rescueWindow := r.replay.tuning.rescueWindowSeconds()
	l.alarms = Alarms{
		DeadLetterDepth: l.alarm("DeadLetterDepthAlarm",
			"Messages reached the DLQ after exhausting their receives on the source queue; the scheduled replay returns them when the cause is gone.",
			l.deadLetter.MetricApproximateNumberOfMessagesVisible(maximum), 0),
		DeadLetterAge: l.alarm("DeadLetterAgeAlarm",
			fmt.Sprintf("The oldest dead letter the replay examined is older than %.0f%% of the DLQ retention (%s of %s; the replay's %s, from its SentTimestamp): "+
				"it expires unseen unless it is replayed or parked.",
				deadLetterAgeAlarmRatio*100, human(ageThreshold), human(r.queues.deadLetterRetention), metricOldestDeadLetterAge),
			l.replayAlarmMetric(metricOldestDeadLetterAge, "Maximum"), ageThreshold),
		InvalidDepth: l.alarm("InvalidDepthAlarm",
			"The consumer rejected messages as invalid; fix them at the producer, they are never replayed as is.",
			l.invalid.MetricApproximateNumberOfMessagesVisible(maximum), 0),
		ParkingDepth: l.alarm("ParkingDepthAlarm", l.parkingDescription(),
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
		SourceAge: l.alarm("SourceAgeAlarm",
			fmt.Sprintf("The source queue's oldest message is older than %s (longer than a message that failed once and then succeeded stays): "+
				"the consumer does not consume or keep up (event source mapping disabled, throttles, a backlog), or its records keep failing. "+
				"Read the consumer's RecordsFailed and its log lines with outcome failed.", human(r.alarms.sourceAge)),
			l.source.MetricApproximateAgeOfOldestMessage(maximum), r.alarms.sourceAge),
		RescueWindow: l.alarm("RescueWindowAlarm",
			fmt.Sprintf("A replay run found dead letters that expire within the rescue window (%s; the replay's %s): "+
				"replay them once the cause is fixed; the replay parks those it cannot replay, but only while its schedule runs.",
				settings.FormatDuration(time.Duration(rescueWindow*float64(time.Second))), metricInRescueWindow),
			l.replayAlarmMetric(metricInRescueWindow, "Maximum"), 0),
		ReplayHeartbeat: l.alarmOf(alarmSpec{
			id: "ReplayHeartbeatAlarm",
			description: fmt.Sprintf("No replay run of route %s completed in %s (two schedule intervals; the replay's %s): "+
				"the schedule (the %s output) is disabled or every run fails before it reports. Nothing rescues expiring dead letters meanwhile.",
				r.replay.routeName, report, metricRunCompleted, settings.OutputID(r.name, settings.OutputReplayScheduleName)),
			metric:    l.replayAlarmMetric(metricRunCompleted, "Sum"),
			threshold: 1,
			below:     true,
			missing:   awscloudwatch.TreatMissingData_BREACHING,
		}),
	}
	l.alarms.ArchiveFailed = l.alarm("ArchiveFailedAlarm",
		"A replay run could not archive messages of the parking or invalid queue (the replay's "+settings.MetricArchiveFailed+"): they stay in their queue, "+
			"whose retention runs on. The replay log's \"archive failed\" lines name the queue, the message and the S3 or SQS error (docs/OPERATIONS.md#the-archive).",
		l.consumerMetric(settings.MetricArchiveFailed, "", "Sum"), 0)
	// No records in a period is no evidence either way: the alarm keeps its
	// state until records say otherwise.
	failures := alarmSpec{id: "ConsumerFailuresAlarm", missing: awscloudwatch.TreatMissingData_IGNORE}
	if r.alarms.metricMath {
		failures.description = fmt.Sprintf("More than %v%% of the consumer's records failed in a period and go back to SQS (RecordsFailed / RecordsProcessed; "+
			"a lone failed record is 100%%): a downstream outage or a bad deploy; they reach the DLQ after maxReceiveCount receives. "+
			"It returns to OK when a period's records succeed.", r.alarms.failureRate)
		failures.metric = l.consumerFailureRate("failure rate (%)")
		failures.threshold = r.alarms.failureRate
	} else {
		// Emulators that reject metric-math alarms: a count of failed records.
		failures.description = fmt.Sprintf("More than %v of the consumer's records failed in a period and go back to SQS (RecordsFailed): "+
			"a downstream outage or a bad deploy; they reach the DLQ after maxReceiveCount receives. "+
			"It returns to OK when a period's records succeed.", r.alarms.failedRecords)
		failures.metric = l.consumerMetric(MetricRecordsFailed, "", "Sum")
		failures.threshold = r.alarms.failedRecords
	}
	l.alarms.ConsumerFailures = l.alarmOf(failures)
}

func (l *lane) addDashboard() {
	r := l.props
	period := seconds2duration(r.alarms.period)
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
						"**Parking**: " + l.parkingHolds() + ", needs an operator."),
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
					Label: jsii.String("source age alarm"), Value: jsii.Number(r.alarms.sourceAge),
				}),
			},
			l.recordsRow(graph),
			functionRow("Consumer", l.consumer, r.consumer.timeout),
			functionRow("Replay", l.replay.fn, r.replay.timeout),
			{
				graph("Replay runs (EMF, route "+r.replay.routeName+")", 24, []awscloudwatch.IMetric{
					l.replayMetric("Replayed", "Sum"), l.replayMetric("Parked", "Sum"), l.replayMetric("Delayed", "Sum"),
					l.replayMetric("DeadLettered", "Sum"), l.replayMetric("Errors", "Sum"), l.replayMetric("GateClosed", "Sum"),
					l.replayMetric(metricRunCompleted, "Sum"),
				}),
			},
			{
				graph("Oldest dead letter and its expiry (seconds, replay report)", 12, []awscloudwatch.IMetric{
					l.replayMetric(metricOldestDeadLetterAge, "Maximum"), l.replayMetric(metricSecondsToExpiry, "Minimum"),
				}, &awscloudwatch.HorizontalAnnotation{
					Label: jsii.String("DLQ age alarm"), Value: jsii.Number(deadLetterAgeAlarmRatio * r.queues.deadLetterRetention),
				}),
				graph("Dead letters in the rescue window (replay report)", 12, []awscloudwatch.IMetric{
					l.replayMetric(metricInRescueWindow, "Maximum"),
				}),
			},
			{
				graph("Archive (messages per run, replay report)", 24, []awscloudwatch.IMetric{
					l.consumerMetric(settings.MetricArchived, settings.MetricArchived, "Sum"),
					l.consumerMetric(settings.MetricArchiveFailed, settings.MetricArchiveFailed, "Sum"),
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
		l.consumerMetric(metricRecordsProcessed, "processed", "Sum"),
		l.consumerMetric(MetricRecordsFailed, "failed", "Sum"),
		l.consumerMetric(metricRecordsInvalid, "invalid", "Sum"),
	}
	receiver := []awscloudwatch.IMetric{
		l.consumerMetric(metricDuplicatesAbsorbed, "duplicates absorbed", "Sum"),
		l.consumerMetric(metricCompletionsUnrecorded, "completions unrecorded", "Sum"),
		l.consumerMetric(metricInDoubtTakeovers, "in-doubt takeovers", "Sum"),
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
			l.props.namespace, dimensionLane, dimensionReason, metricRecordsInvalid, dimensionLane, l.serviceName(), a.period)),
		Period: seconds2duration(l.props.alarms.period),
		Label:  jsii.String(""),
	})
	byClass := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,%s,%s} MetricName="%s" %s="%s"', 'Sum', %.0f)`,
			l.props.namespace, dimensionLane, settings.DimensionErrorClass, MetricRecordsFailed, dimensionLane, l.serviceName(), a.period)),
		Period: seconds2duration(l.props.alarms.period),
		Label:  jsii.String(""),
	})
	return &[]awscloudwatch.IWidget{
		graph("Consumer records (EMF)", 4, records),
		graph("Failed records by error class (EMF)", 5, []awscloudwatch.IMetric{byClass}),
		graph("Consumer failure rate (%)", 5, []awscloudwatch.IMetric{l.consumerFailureRate("failed / processed")}, &awscloudwatch.HorizontalAnnotation{
			Label: jsii.String("failure alarm"), Value: jsii.Number(a.failureRate),
		}),
		graph("Invalid records by reason (EMF)", 5, []awscloudwatch.IMetric{byReason}),
		graph("Idempotent receiver (EMF)", 5, receiver),
	}
}

// parkingDescription is the ParkingDepth alarm's description.
func (l *lane) parkingDescription() string {
	return "The parking queue holds " + l.parkingHolds() + "; they need an operator."
}

// parkingHolds says what the parking queue holds: on a lane that keeps
// group order, parked groups' records too.
func (l *lane) parkingHolds() string {
	if l.props.consumer.groupOrder != "" {
		return "dead letters whose replays are exhausted, or the records of parked message groups (dlq groups)"
	}
	return "dead letters whose replays are exhausted"
}
