package main

import (
	"strings"
	"testing"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/settings"
)

// earlyAlarm is what the page-time arithmetic reads of an alarm.
type earlyAlarm struct {
	period, evaluationPeriods, datapoints, threshold float64
	math                                             bool
}

func (s *synthesized) earlyAlarm(t *testing.T, construct string) earlyAlarm {
	t.Helper()
	p := s.resources[s.id(t, "AWS::CloudWatch::Alarm", construct)]["Properties"].(map[string]any)
	a := earlyAlarm{evaluationPeriods: p["EvaluationPeriods"].(float64), datapoints: p["DatapointsToAlarm"].(float64), threshold: p["Threshold"].(float64)}
	if period, ok := p["Period"].(float64); ok {
		a.period = period
		return a
	}
	// A metric-math alarm: the period is each query's.
	a.math = true
	for _, q := range p["Metrics"].([]any) {
		if stat, ok := q.(map[string]any)["MetricStat"].(map[string]any); ok {
			if period := stat["Period"].(float64); period > a.period {
				a.period = period
			}
		}
	}
	return a
}

// A downstream outage pages within 5 minutes on the AWS profile, not after
// maxReceiveCount x visibility (10 x 180 s) when the DLQ alarm fires:
//   - every record fails from the first invocation on: the failure-rate
//     alarm breaches in each period with records, and fires after
//     DatapointsToAlarm periods, all within EvaluationPeriods;
//   - a failed record is hidden for the visibility timeout (180 s), so the
//     source queue's oldest message ages past the threshold, and the age
//     alarm fires DatapointsToAlarm periods later.
func TestAnOutagePagesWithinFiveMinutesOnAWS(t *testing.T) {
	s := profile(t, ProfileAWS)
	const within = deadletter.PageWithinSeconds
	if within != 300 {
		t.Fatalf("PageWithinSeconds = %d, want 5 minutes", within)
	}
	failures := s.earlyAlarm(t, "ConsumerFailuresAlarm")
	age := s.earlyAlarm(t, "SourceAgeAlarm")
	for name, a := range map[string]earlyAlarm{"ConsumerFailuresAlarm": failures, "SourceAgeAlarm": age} {
		if a.period <= 0 || a.datapoints < 1 || a.datapoints > a.evaluationPeriods {
			t.Fatalf("%s: %+v", name, a)
		}
		if w := a.period * a.evaluationPeriods; w > within {
			t.Errorf("%s: period %v s x %v evaluation periods = %v s, want <= %d s", name, a.period, a.evaluationPeriods, w, within)
		}
		if w := a.period * a.datapoints; w > within {
			t.Errorf("%s: period %v s x %v datapoints to alarm = %v s, want <= %d s", name, a.period, a.datapoints, w, within)
		}
	}
	if w := age.threshold + age.period*age.datapoints; w > within {
		t.Errorf("SourceAgeAlarm: threshold %v s + %v datapoints x %v s = %v s, want <= %d s", age.threshold, age.datapoints, age.period, w, within)
	}
	if !failures.math || failures.threshold != deadletter.DefaultConsumerFailureRatePercent {
		t.Errorf("ConsumerFailuresAlarm on AWS: %+v, want the failure rate (metric math) above %d%%", failures, deadletter.DefaultConsumerFailureRatePercent)
	}
}

// ministack rejects metric-math alarms: no alarm of the local profile has
// one; the consumer's failure alarm counts failed records there.
func TestLocalProfileHasNoMetricMathAlarm(t *testing.T) {
	s := profile(t, ProfileLocal)
	for id, r := range s.resources {
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		p := r["Properties"].(map[string]any)
		if _, ok := p["Metrics"]; ok {
			t.Errorf("alarm %s uses metric math", id)
		}
		if strings.HasPrefix(id, "OrdersConsumerFailuresAlarm") && (p["MetricName"] != deadletter.MetricRecordsFailed || p["Namespace"] != settings.MetricsNamespace.Default) {
			t.Errorf("local failure alarm: %v", p)
		}
	}
}
