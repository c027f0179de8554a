package deadletter_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// The early alarms on the default props: the consumer's failure rate from
// its EMF metrics of this lane, in one minute, keeping its state without
// records; and the source queue's age beyond what one failed delivery
// explains (visibility 180 s + timeout 30 s + 60 s), in one minute.
func TestEarlyAlarms(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	tpl := s.template
	alarm := jsii.String("AWS::CloudWatch::Alarm")
	emf := func(metric string) obj {
		return obj{"MetricStat": obj{
			"Metric": obj{
				"Namespace":  "Homing",
				"MetricName": metric,
				"Dimensions": arr{obj{"Name": "Lane", "Value": "Test/Orders"}},
			},
			"Period": 60,
			"Stat":   "Sum",
		}, "ReturnData": false}
	}
	check(t, "consumer failure rate > 10% in one minute, missing data ignored", func() {
		tpl.HasResourceProperties(alarm, like(obj{
			"Metrics": arrayWith(
				like(obj{"Expression": "100 * failed / processed", "ReturnData": true}),
				like(obj{"Id": "failed"}), like(obj{"Id": "processed"}),
			),
			"Threshold":          10,
			"ComparisonOperator": "GreaterThanThreshold",
			"EvaluationPeriods":  1,
			"DatapointsToAlarm":  1,
			"TreatMissingData":   "ignore",
		}))
		tpl.HasResourceProperties(alarm, like(obj{"Metrics": arrayWith(like(emf("RecordsFailed")), like(emf("RecordsProcessed")))}))
	})
	check(t, "source queue's oldest message > 270 s in one minute", func() {
		tpl.HasResourceProperties(alarm, like(obj{
			"Namespace":         "AWS/SQS",
			"MetricName":        "ApproximateAgeOfOldestMessage",
			"Dimensions":        arr{obj{"Name": "QueueName", "Value": getAtt(id.source, "QueueName")}},
			"Statistic":         "Maximum",
			"Period":            60,
			"Threshold":         180 + 30 + deadletter.SourceAgeMarginSeconds,
			"EvaluationPeriods": 1,
			"DatapointsToAlarm": 1,
			"TreatMissingData":  "notBreaching",
			"AlarmActions":      arr{refTo(id.topic)},
			"OKActions":         arr{refTo(id.topic)},
		}))
	})
	a := s.lane.Alarms()
	if a.ConsumerFailures == nil || a.SourceAge == nil {
		t.Fatal("Alarms() lacks ConsumerFailures or SourceAge")
	}
}

// The alarms on the replay's report of each run (EMF, dimensions Lane and
// Route, as the replay engine writes them), over periods of two schedule
// intervals: the oldest dead letter against 75% of the retention (in place
// of the DLQ's own ApproximateAgeOfOldestMessage), dead letters in the
// rescue window, and the heartbeat.
func TestReplayReportAlarms(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	a := s.lane.Alarms()
	report := func(metric, statistic string) obj {
		return obj{
			"Namespace":  "Homing",
			"MetricName": metric,
			"Dimensions": arr{obj{"Name": "Lane", "Value": "Test/Orders"}, obj{"Name": "Route", "Value": "orders"}},
			"Statistic":  statistic,
			"Period":     2 * 15 * 60,
		}
	}
	for _, c := range []struct {
		name  string
		alarm interface{ AlarmArn() *string }
		want  obj
	}{
		{"oldest dead letter > 75% of 14 days", a.DeadLetterAge, report("OldestDeadLetterAgeSeconds", "Maximum")},
		{"dead letters in the rescue window", a.RescueWindow, report("InRescueWindow", "Maximum")},
		{"no run completed in two intervals", a.ReplayHeartbeat, report("RunCompleted", "Sum")},
	} {
		p := props(s.resources[s.ref(c.alarm.AlarmArn())])
		for k, v := range c.want {
			if mustJSON(p[k]) != mustJSON(v) {
				t.Errorf("%s: %s is %s, want %s", c.name, k, mustJSON(p[k]), mustJSON(v))
			}
		}
	}
	for _, c := range []struct {
		alarm               interface{ AlarmArn() *string }
		comparison, missing string
		threshold           float64
	}{
		{a.DeadLetterAge, "GreaterThanThreshold", "notBreaching", 0.75 * 14 * 86400},
		{a.RescueWindow, "GreaterThanThreshold", "notBreaching", 0},
		{a.ReplayHeartbeat, "LessThanThreshold", "breaching", 1},
	} {
		lid := s.ref(c.alarm.AlarmArn())
		p := props(s.resources[lid])
		if p["ComparisonOperator"] != c.comparison || p["TreatMissingData"] != c.missing || p["Threshold"] != c.threshold ||
			p["EvaluationPeriods"] != 1.0 || p["DatapointsToAlarm"] != 1.0 {
			t.Errorf("%s: %s", lid, mustJSON(p))
		}
	}
	check(t, "the DLQ's own age alarm is gone", func() {
		s.template.AllResourcesProperties(jsii.String("AWS::CloudWatch::Alarm"), assertions.Match_Not(like(obj{
			"MetricName": "ApproximateAgeOfOldestMessage",
			"Dimensions": arr{obj{"Name": "QueueName", "Value": getAtt(id.dlq, "QueueName")}},
		})))
	})
}

// The report alarms' period is twice the interval between runs: of a
// rate() schedule by itself, of a cron() one the Interval prop.
func TestReportPeriod(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		interval awscdk.Duration
		want     float64
	}{
		{"rate(1 minute)", nil, 120},
		{"rate(2 hours)", nil, 4 * 3600},
		{"cron(0 * * * ? *)", awscdk.Duration_Hours(jsii.Number(1)), 2 * 3600},
		{"rate(15 minutes)", awscdk.Duration_Minutes(jsii.Number(20)), 2400},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			p := baseProps()
			p.Replay.Schedule = jsii.String(tc.schedule)
			p.Replay.Interval = tc.interval
			s := synth(p)
			got := props(s.resources[s.ref(s.lane.Alarms().ReplayHeartbeat.AlarmArn())])["Period"]
			if got != tc.want {
				t.Errorf("heartbeat period %v, want %v", got, tc.want)
			}
		})
	}
}

// Thresholds, the switch to plain alarms, the names and further actions
// are props.
func TestEarlyAlarmProps(t *testing.T) {
	props := baseProps()
	props.Alarms.ConsumerFailureRateThreshold = jsii.Number(25)
	props.Alarms.SourceAgeThreshold = awscdk.Duration_Minutes(jsii.Number(3))
	props.Alarms.MetricMath = jsii.Bool(false)
	props.Alarms.ConsumerFailedRecordsThreshold = jsii.Number(5)
	props.ServiceName = jsii.String("billing-eu")
	props.MetricsNamespace = jsii.String("Acme/Billing")
	// An imported topic: its ARN is a literal, whatever stack holds it.
	const pagerARN = "arn:aws:sns:us-east-1:123456789012:pager"
	pager := awssns.Topic_FromTopicArn(newStack(), jsii.String("Pager"), jsii.String(pagerARN))
	props.Alarms.Actions = []awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(pager)}
	s := synth(props)
	tpl := s.template
	alarm := jsii.String("AWS::CloudWatch::Alarm")
	pagerRef := pagerARN
	check(t, "failed records > 5, no metric math", func() {
		tpl.HasResourceProperties(alarm, like(obj{
			"Namespace":  "Acme/Billing",
			"MetricName": "RecordsFailed",
			"Dimensions": arr{obj{"Name": "Lane", "Value": "billing-eu"}},
			"Statistic":  "Sum",
			"Threshold":  5,
		}))
	})
	check(t, "no alarm uses metric math", func() {
		tpl.AllResourcesProperties(alarm, like(obj{"Metrics": assertions.Match_Absent()}))
	})
	check(t, "source age > 180 s, as the prop says", func() {
		tpl.HasResourceProperties(alarm, like(obj{"MetricName": "ApproximateAgeOfOldestMessage", "Threshold": 180}))
	})
	check(t, "every alarm also pages the further action, on ALARM and OK", func() {
		tpl.AllResourcesProperties(alarm, like(obj{"AlarmActions": arrayWith(pagerRef), "OKActions": arrayWith(pagerRef)}))
	})
	check(t, "both functions name their metrics by the props", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), like(obj{"Environment": obj{"Variables": like(obj{
			"POWERTOOLS_SERVICE_NAME":      "billing-eu",
			"POWERTOOLS_METRICS_NAMESPACE": "Acme/Billing",
		})}}))
	})
}

func TestDashboardShowsTheMetrics(t *testing.T) {
	s := defaults.get(t)
	ids := s.ofType("AWS::CloudWatch::Dashboard")
	body := mustJSON(props(s.resources[ids[0]])["DashboardBody"])
	if err := containsAll(body,
		"RecordsProcessed", "RecordsFailed", "RecordsInvalid", "DuplicatesAbsorbed", "CompletionsUnrecorded", "InDoubtTakeovers",
		"100 * failed / processed", `SEARCH('{Homing,Lane,Reason} MetricName=\\\"RecordsInvalid\\\" Lane=\\\"Test/Orders\\\"'`,
		"Replayed", "Parked", "DeadLettered", "GateClosed", `\"Route\",\"orders\"`, "source age alarm",
		"OldestDeadLetterAgeSeconds", "SecondsToExpiry", "InRescueWindow", "RunCompleted", "DLQ age alarm"); err != nil {
		t.Errorf("dashboard body: %v", err)
	}
	if strings.Contains(body, `"Lane\",\"orders\"`) {
		t.Error("the route's name is used as the lane")
	}
}

func TestValidateEarlyAlarmProps(t *testing.T) {
	props := baseProps()
	props.Alarms.ConsumerFailureRateThreshold = jsii.Number(100)
	props.Alarms.ConsumerFailedRecordsThreshold = jsii.Number(1.5)
	props.Alarms.SourceAgeThreshold = awscdk.Duration_Millis(jsii.Number(500))
	props.MetricsNamespace = jsii.String("AWS/Lambda")
	props.ServiceName = jsii.String(" ")
	props.Consumer.Environment = map[string]string{"POWERTOOLS_SERVICE_NAME": "x"}
	err := props.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"ConsumerFailureRateThreshold is 100", "ConsumerFailedRecordsThreshold is 1.5", "SourceAgeThreshold is 500ms",
		`MetricsNamespace is "AWS/Lambda"`, `ServiceName is " "`, "Consumer.Environment sets POWERTOOLS_SERVICE_NAME"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// TestAlarmDescriptionsWriteDurations: the alarms' descriptions give their
// thresholds as people write durations, and name the lane's own outputs.
func TestAlarmDescriptionsWriteDurations(t *testing.T) {
	s := defaults.get(t)
	a := s.lane.Alarms()
	for _, c := range []struct {
		alarm interface{ AlarmArn() *string }
		want  string
	}{
		{a.DeadLetterAge, "older than 75% of the DLQ retention (252h of 14d;"},
		{a.SourceAge, "older than 270s ("},
		{a.RescueWindow, "within the rescue window (24h;"},
		{a.ReplayHeartbeat, "completed in 30m (two schedule intervals;"},
		{a.ReplayErrors, "disable the rule named by the OrdersReplayScheduleName output"},
	} {
		got, _ := props(s.resources[s.ref(c.alarm.AlarmArn())])["AlarmDescription"].(string)
		if !strings.Contains(got, c.want) {
			t.Errorf("AlarmDescription %q\nwant it to contain %q", got, c.want)
		}
	}
}
