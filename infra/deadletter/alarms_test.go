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
)

// The early alarms on the default props: the consumer's failure rate from
// its EMF metrics of this lane, and the source queue's age, both 2 of 3
// one-minute periods.
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
	check(t, "consumer failure rate > 10% in 2 of 3 minutes", func() {
		tpl.HasResourceProperties(alarm, like(obj{
			"Metrics": arrayWith(
				like(obj{"Expression": "100 * failed / processed", "ReturnData": true}),
				like(obj{"Id": "failed"}), like(obj{"Id": "processed"}),
			),
			"Threshold":          10,
			"ComparisonOperator": "GreaterThanThreshold",
			"EvaluationPeriods":  3,
			"DatapointsToAlarm":  2,
			"TreatMissingData":   "notBreaching",
		}))
		tpl.HasResourceProperties(alarm, like(obj{"Metrics": arrayWith(like(emf("RecordsFailed")), like(emf("RecordsProcessed")))}))
	})
	check(t, "source queue's oldest message > 120 s in 2 of 3 minutes", func() {
		tpl.HasResourceProperties(alarm, like(obj{
			"Namespace":         "AWS/SQS",
			"MetricName":        "ApproximateAgeOfOldestMessage",
			"Dimensions":        arr{obj{"Name": "QueueName", "Value": getAtt(id.source, "QueueName")}},
			"Statistic":         "Maximum",
			"Period":            60,
			"Threshold":         120,
			"EvaluationPeriods": 3,
			"DatapointsToAlarm": 2,
			"AlarmActions":      arr{refTo(id.topic)},
			"OKActions":         arr{refTo(id.topic)},
		}))
	})
	a := s.lane.Alarms()
	if a.ConsumerFailures == nil || a.SourceAge == nil {
		t.Fatal("Alarms() lacks ConsumerFailures or SourceAge")
	}
}

// Thresholds, the switch to plain alarms, the names and further actions
// are props.
func TestEarlyAlarmProps(t *testing.T) {
	props := baseProps()
	props.ConsumerFailureRateThreshold = jsii.Number(25)
	props.SourceAgeThreshold = awscdk.Duration_Minutes(jsii.Number(3))
	props.MetricMath = jsii.Bool(false)
	props.ConsumerFailedRecordsThreshold = jsii.Number(5)
	props.ServiceName = jsii.String("billing-eu")
	props.MetricsNamespace = jsii.String("Acme/Billing")
	// An imported topic: its ARN is a literal, whatever stack holds it.
	const pagerARN = "arn:aws:sns:us-east-1:123456789012:pager"
	pager := awssns.Topic_FromTopicArn(newStack(), jsii.String("Pager"), jsii.String(pagerARN))
	props.AlarmActions = []awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(pager)}
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
	check(t, "source age > 180 s", func() {
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
		"Replayed", "Parked", "DeadLettered", "GateClosed", `\"Route\",\"orders\"`, "source age alarm"); err != nil {
		t.Errorf("dashboard body: %v", err)
	}
	if strings.Contains(body, `"Lane\",\"orders\"`) {
		t.Error("the route's name is used as the lane")
	}
}

func TestValidateEarlyAlarmProps(t *testing.T) {
	props := baseProps()
	props.ConsumerFailureRateThreshold = jsii.Number(100)
	props.ConsumerFailedRecordsThreshold = jsii.Number(1.5)
	props.SourceAgeThreshold = awscdk.Duration_Millis(jsii.Number(500))
	props.MetricsNamespace = jsii.String("AWS/Lambda")
	props.ServiceName = jsii.String(" ")
	props.ConsumerEnvironment = map[string]string{"POWERTOOLS_SERVICE_NAME": "x"}
	err := props.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"ConsumerFailureRateThreshold is 100", "ConsumerFailedRecordsThreshold is 1.5", "SourceAgeThreshold is 500ms",
		`MetricsNamespace is "AWS/Lambda"`, `ServiceName is " "`, "ConsumerEnvironment sets POWERTOOLS_SERVICE_NAME"} {
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
		{a.DeadLetterAge, "older than 75% of the DLQ retention (252h of 14d)"},
		{a.SourceAge, "older than 2m:"},
		{a.ReplayErrors, "disable the rule named by the OrdersReplayScheduleName output"},
	} {
		got, _ := props(s.resources[s.ref(c.alarm.AlarmArn())])["AlarmDescription"].(string)
		if !strings.Contains(got, c.want) {
			t.Errorf("AlarmDescription %q\nwant it to contain %q", got, c.want)
		}
	}
}
