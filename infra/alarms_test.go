package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/settings"
)

// The delays the worst time to page adds to an alarm's own arithmetic. What
// AWS documents, and what is assumed where it documents nothing, is listed
// in docs/OPERATIONS.md ("On a real AWS account: what the documentation
// says and what only the account confirms"), with how to confirm each in a
// deployment's first hour.
const (
	// sqsMetricInterval: SQS pushes a queue's metrics to CloudWatch at
	// one-minute intervals (documented), so an alarm period on them is a
	// whole number of minutes with one sample a minute.
	sqsMetricInterval = 60
	// sqsMetricDelay: a minute's SQS datapoint can be evaluated at most this
	// long after the minute ends (assumed; AWS documents the interval, not
	// the latency, except up to 15 minutes after a queue inactive for six
	// hours wakes up, which a queue the event source mapping polls never
	// is).
	sqsMetricDelay = 60
	// emfMetricDelay: a metric of an EMF log line can be evaluated at most
	// this long after its period ends (assumed; AWS documents the extraction
	// as asynchronous and, for Lambda, recommends M-out-of-N alarms).
	emfMetricDelay = 60
	// alarmEvaluationInterval: a standard-resolution alarm evaluates every
	// minute (documented), so a datapoint waits for the next evaluation.
	alarmEvaluationInterval = 60
	// esmPollDelay: the event source mapping's pollers long-poll the queue
	// (up to 20 s a receive), so a message is received at most this long
	// after it is sent or becomes visible again (assumed bound).
	esmPollDelay = 20
	// sqsUncountedFromReceive: a standard queue's ApproximateAgeOfOldestMessage
	// leaves a message out from its third receive on (documented).
	sqsUncountedFromReceive = 3
)

// traffic is a scenario of the outage: every record fails from the first
// affected order on, sent at t = 0.
type traffic int

const (
	// sparse: that order alone, nothing else in the queue; it fails on
	// every delivery, once every visibility timeout.
	sparse traffic = iota
	// heavy: records arrive all the time and every one fails.
	heavy
)

func (t traffic) String() string { return [...]string{"sparse", "heavy"}[t] }

// laneTimes is what the worst time to page reads of the lane itself.
type laneTimes struct {
	visibility, timeout, maxReceives float64
}

// pageAlarm is what the worst time to page reads of an alarm's properties.
type pageAlarm struct {
	kind                                             string // "age" (SQS), "rate" (metric math), "count" (EMF)
	period, evaluationPeriods, datapoints, threshold float64
	comparison, missing                              string
}

// worstTimeToPage is the latest time after the first affected order is
// sent by which alarm a is in ALARM under traffic, in seconds: +Inf when it
// may never fire. It is conservative where AWS leaves room: a period's
// datapoint is taken to breach only when the whole period does.
func worstTimeToPage(a pageAlarm, lane laneTimes, traffic traffic) float64 {
	never := math.Inf(1)
	if a.comparison != "GreaterThanThreshold" || a.period <= 0 || a.datapoints < 1 || a.datapoints > a.evaluationPeriods {
		return never
	}
	p, d, n := a.period, a.datapoints, a.evaluationPeriods
	switch a.kind {
	case "age":
		// The first affected order's age is t until it stops counting at
		// its third receive, (3-1) visibility timeouts after its first at
		// the earliest; with heavy traffic the next failing message takes
		// over at about that age. A period breaches for sure once it starts
		// after the threshold: the first such starts within a period of it.
		if math.Mod(p, sqsMetricInterval) != 0 {
			return never
		}
		counted := (sqsUncountedFromReceive - 1) * lane.visibility
		if a.threshold >= counted {
			return never // not even heavy traffic ages a counted message past it
		}
		breached := a.threshold + p + d*p // the end of the d-th breaching period
		if traffic == sparse && breached > counted {
			return never
		}
		return breached + sqsMetricDelay + alarmEvaluationInterval
	case "rate", "count":
		if a.kind == "rate" && a.threshold >= 100 || a.kind == "count" && traffic == sparse && a.threshold >= 1 {
			return never // one failed record alone does not breach
		}
		if traffic == heavy {
			// A failure is reported within a consumer timeout of the
			// outage's start. Every period from then on holds failures;
			// every period that starts a timeout later holds failures only.
			end := lane.timeout + d*p
			if a.kind == "rate" {
				end += p
			}
			return end + emfMetricDelay + alarmEvaluationInterval
		}
		// A lone order: its k-th failure is reported at the latest
		// k poll delays, k-1 visibility timeouts and a consumer timeout
		// after it is sent; each failure breaches its period, the periods
		// between hold no data.
		if d > lane.maxReceives {
			return never
		}
		failure := func(k float64) float64 { return k*esmPollDelay + (k-1)*lane.visibility + lane.timeout }
		if a.missing == "breaching" {
			return failure(1) + d*p + emfMetricDelay + alarmEvaluationInterval
		}
		// Missing data counts as not breaching (ignore and missing are
		// taken so too): the d failures must fall within n periods.
		if spanned := math.Floor(((d-1)*(lane.visibility+esmPollDelay)+lane.timeout)/p) + 2; d > 1 && spanned > n {
			return never
		}
		return failure(d) + p + emfMetricDelay + alarmEvaluationInterval
	}
	return never
}

// TestWorstTimeToPageModel: the model on hand-made alarms, among them the
// early alarms as they were before issue 18 (2 of 3 one-minute periods,
// SourceAge above 120 s), which it finds too slow: 420 s with sparse traffic
// (and ConsumerFailures never), 330 s with heavy.
func TestWorstTimeToPageModel(t *testing.T) {
	aws := laneTimes{visibility: 180, timeout: 30, maxReceives: 10}
	inf := math.Inf(1)
	for _, tc := range []struct {
		name          string
		alarm         pageAlarm
		sparse, heavy float64
	}{
		{"before: source age > 120 s, 2 of 3", pageAlarm{"age", 60, 3, 2, 120, "GreaterThanThreshold", "notBreaching"}, 120 + 3*60 + 120, 120 + 3*60 + 120},
		{"before: failure rate > 10%, 2 of 3", pageAlarm{"rate", 60, 3, 2, 10, "GreaterThanThreshold", "notBreaching"}, inf, 30 + 3*60 + 120},
		{"failure rate > 10%, 1 of 1", pageAlarm{"rate", 60, 1, 1, 10, "GreaterThanThreshold", "ignore"}, 20 + 30 + 60 + 120, 30 + 2*60 + 120},
		{"failed records > 0, 1 of 1", pageAlarm{"count", 60, 1, 1, 0, "GreaterThanThreshold", "ignore"}, 20 + 30 + 60 + 120, 30 + 60 + 120},
		{"failed records > 0, 2 of 5: the redelivery fits", pageAlarm{"count", 60, 5, 2, 0, "GreaterThanThreshold", "notBreaching"},
			2*20 + 180 + 30 + 60 + 120, 30 + 2*60 + 120},
		{"failed records > 1: a lone failure is one", pageAlarm{"count", 60, 1, 1, 1, "GreaterThanThreshold", "ignore"}, inf, 30 + 60 + 120},
		{"source age > 270 s, 1 of 1", pageAlarm{"age", 60, 1, 1, 270, "GreaterThanThreshold", "notBreaching"}, inf, 270 + 2*60 + 120},
		{"source age > 200 s, 1 of 1", pageAlarm{"age", 60, 1, 1, 200, "GreaterThanThreshold", "notBreaching"}, 200 + 2*60 + 120, 200 + 2*60 + 120},
		{"source age above what counts", pageAlarm{"age", 60, 1, 1, 360, "GreaterThanThreshold", "notBreaching"}, inf, inf},
		{"five-minute periods", pageAlarm{"count", 300, 1, 1, 0, "GreaterThanThreshold", "ignore"}, 20 + 30 + 300 + 120, 30 + 300 + 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := worstTimeToPage(tc.alarm, aws, sparse); got != tc.sparse {
				t.Errorf("sparse: %v s, want %v s", got, tc.sparse)
			}
			if got := worstTimeToPage(tc.alarm, aws, heavy); got != tc.heavy {
				t.Errorf("heavy: %v s, want %v s", got, tc.heavy)
			}
		})
	}
}

// pageAlarm reads the model's inputs from the template's alarm construct.
func (s *synthesized) pageAlarm(t *testing.T, construct string) pageAlarm {
	t.Helper()
	p := s.resources[s.id(t, "AWS::CloudWatch::Alarm", construct)]["Properties"].(map[string]any)
	num := func(k string) float64 { v, _ := p[k].(float64); return v }
	a := pageAlarm{
		evaluationPeriods: num("EvaluationPeriods"),
		datapoints:        num("DatapointsToAlarm"),
		threshold:         num("Threshold"),
		comparison:        fmt.Sprint(p["ComparisonOperator"]),
		missing:           fmt.Sprint(p["TreatMissingData"]),
		period:            num("Period"),
	}
	if a.datapoints == 0 {
		a.datapoints = a.evaluationPeriods // CloudWatch's default
	}
	switch {
	case p["MetricName"] == "ApproximateAgeOfOldestMessage":
		a.kind = "age"
	case p["MetricName"] == deadletter.MetricRecordsFailed:
		a.kind = "count"
	case p["Metrics"] != nil:
		// Metric math: the rate, its period the queries' (the longest).
		a.kind = "rate"
		for _, q := range p["Metrics"].([]any) {
			if stat, ok := q.(map[string]any)["MetricStat"].(map[string]any); ok {
				a.period = math.Max(a.period, stat["Period"].(float64))
			}
		}
	default:
		t.Fatalf("%s: no metric the model knows: %v", construct, p)
	}
	return a
}

// laneTimes reads the order lane's visibility timeout, consumer timeout and
// maxReceiveCount from the template.
func (s *synthesized) laneTimes(t *testing.T) laneTimes {
	t.Helper()
	q := s.resources[s.id(t, "AWS::SQS::Queue", "SourceQueue")]["Properties"].(map[string]any)
	fn := s.resources[s.id(t, "AWS::Lambda::Function", "Consumer")]["Properties"].(map[string]any)
	return laneTimes{
		visibility:  q["VisibilityTimeout"].(float64),
		timeout:     fn["Timeout"].(float64),
		maxReceives: q["RedrivePolicy"].(map[string]any)["maxReceiveCount"].(float64),
	}
}

// A downstream outage pages within 5 minutes on both profiles, with sparse
// and heavy traffic: the worst time to page, from the early alarms' own
// properties and the delays above, is at most deadletter.PageWithinSeconds
// for the first of them to fire, and ConsumerFailures alone keeps it. Not
// after maxReceiveCount x visibility (10 x 180 s on AWS), when the DLQ
// depth alarm fires.
func TestAnOutagePagesWithinFiveMinutes(t *testing.T) {
	const within = deadletter.PageWithinSeconds
	if within != 300 {
		t.Fatalf("PageWithinSeconds = %d, want 5 minutes", within)
	}
	for _, name := range []string{ProfileAWS, ProfileLocal} {
		t.Run(name, func(t *testing.T) {
			s := profile(t, name)
			lane := s.laneTimes(t)
			var table strings.Builder
			for _, traffic := range []traffic{sparse, heavy} {
				first := math.Inf(1)
				for _, construct := range []string{"ConsumerFailuresAlarm", "SourceAgeAlarm"} {
					worst := worstTimeToPage(s.pageAlarm(t, construct), lane, traffic)
					fmt.Fprintf(&table, "  %-7s %-22s %v s\n", traffic, construct, worst)
					first = math.Min(first, worst)
					if construct == "ConsumerFailuresAlarm" && worst > within {
						t.Errorf("%s traffic: ConsumerFailuresAlarm pages after %v s at worst, want <= %d s", traffic, worst, within)
					}
				}
				if first > within {
					t.Errorf("%s traffic: the first alarm pages after %v s at worst, want <= %d s", traffic, first, within)
				}
			}
			t.Logf("worst time to page, %s profile (visibility %v s, consumer timeout %v s):\n%s", name, lane.visibility, lane.timeout, table.String())
		})
	}
	// On AWS the failure alarm is the rate.
	if a := profile(t, ProfileAWS).pageAlarm(t, "ConsumerFailuresAlarm"); a.kind != "rate" || a.threshold != deadletter.DefaultConsumerFailureRatePercent {
		t.Errorf("ConsumerFailuresAlarm on AWS: %+v, want the failure rate (metric math) above %d%%", a, deadletter.DefaultConsumerFailureRatePercent)
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
