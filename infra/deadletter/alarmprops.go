package deadletter

import (
	"math"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
)

// Defaults of [AlarmProps], and the promise they keep.
const (
	// defaultAlarmPeriodSeconds is the period over which every alarm
	// evaluates its metric.
	defaultAlarmPeriodSeconds = 60
	// DefaultConsumerFailureRatePercent: the ConsumerFailures alarm fires when
	// more than this percentage of the records of a period failed.
	DefaultConsumerFailureRatePercent = 10
	// sourceAgeMarginSeconds: the SourceAge alarm's default threshold is the
	// source queue's visibility timeout plus the consumer timeout plus this
	// margin (180 + 30 + 60 = 270 s on the defaults). A message that
	// failed once is hidden for the visibility timeout, then redelivered
	// and, if it succeeds, deleted within the consumer timeout: only a
	// message older than that has failed more than once or was never
	// consumed.
	sourceAgeMarginSeconds = 60
	// PageWithinSeconds is the promise of the alarms on the default props:
	// a downstream outage pages within 5 minutes, with sparse traffic (a
	// lone order) and heavy traffic alike, however slowly the DLQ fills
	// (maxReceiveCount x visibility, 30 minutes on AWS). ConsumerFailures
	// keeps it; the template tests compute the worst time to page from the
	// alarms' own properties and AWS's documented metric delays
	// (docs/OPERATIONS.md, "Alarm by alarm").
	PageWithinSeconds = 300
	// reportPeriodIntervals: the alarms on the replay's run report
	// (DeadLetterAge, RescueWindow, ReplayHeartbeat) evaluate one period of
	// this many schedule intervals (ReplayProps.Interval), so that one run
	// that comes late or not at all changes nothing and two do.
	reportPeriodIntervals = 2
	// deadLetterAgeAlarmRatio is the fraction of the DLQ retention at which the
	// age of the oldest dead letter the replay examined (its
	// OldestDeadLetterAgeSeconds) raises an alarm, so that nothing expires
	// unseen.
	deadLetterAgeAlarmRatio = 0.75
)

// AlarmProps configures the lane's alarms (see [Alarms]) and the topic they
// notify. Every field is optional.
type AlarmProps struct {
	// Period is the period over which every alarm evaluates its metric.
	// Default 1 minute; whole minutes.
	Period awscdk.Duration
	// Topic is an existing topic that receives the lane's alarm and OK
	// transitions instead of one the lane creates (with its own KMS key).
	// The lane adds a statement to its policy that lets CloudWatch alarms of
	// this account publish; an imported topic's policy (and its KMS key,
	// if it has one) must allow that already, since the CDK cannot change
	// an imported topic. Default nil: the lane creates the topic.
	Topic awssns.ITopic
	// Actions are further actions of every alarm's ALARM and OK
	// transitions, besides Topic (for example an SNS action on a paging
	// service's topic). Default none.
	Actions []awscloudwatch.IAlarmAction

	// ConsumerFailureRateThreshold: the ConsumerFailures alarm fires when
	// more than this percentage of the consumer's records failed in one
	// Period (so a lone failed record, 100%, fires it). Default 10; above
	// 0, below 100.
	ConsumerFailureRateThreshold *float64
	// ConsumerFailedRecordsThreshold replaces the rate when MetricMath is
	// false: the alarm fires when more than this many records failed in
	// one Period. Default 0; a whole number.
	ConsumerFailedRecordsThreshold *float64
	// SourceAgeThreshold: the SourceAge alarm fires when the source queue's
	// oldest message is older than this in one Period. Default the
	// source queue's visibility timeout plus Consumer.Timeout plus
	// sourceAgeMarginSeconds (270 s on the defaults): older than a message
	// that failed once and then succeeded can be, so that a transient
	// failure does not page (ConsumerFailures does when it matters); at
	// least 1 s.
	SourceAgeThreshold awscdk.Duration
	// MetricMath lets the ConsumerFailures alarm compute a failure rate
	// with metric math, and the dashboard show it and the invalid records
	// by reason. Default true; false for emulators that reject metric-math
	// alarms (the local profile, ministack): the alarm then counts failed
	// records against ConsumerFailedRecordsThreshold.
	MetricMath *bool
}

// alarmsResolved is AlarmProps with the defaults applied, durations in
// seconds.
type alarmsResolved struct {
	period        float64
	topic         awssns.ITopic
	actions       []awscloudwatch.IAlarmAction
	failureRate   float64 // percent
	failedRecords float64
	sourceAge     float64
	metricMath    bool
}

// resolve applies the defaults; visibility and consumerTimeout are the
// source queue's and the consumer's, in seconds, which make the default
// SourceAgeThreshold.
func (p *AlarmProps) resolve(visibility, consumerTimeout float64) alarmsResolved {
	a := alarmsResolved{
		period:        seconds(p.Period, defaultAlarmPeriodSeconds),
		topic:         p.Topic,
		actions:       p.Actions,
		failureRate:   number(p.ConsumerFailureRateThreshold, DefaultConsumerFailureRatePercent),
		failedRecords: number(p.ConsumerFailedRecordsThreshold, 0),
		sourceAge:     seconds(p.SourceAgeThreshold, defaultSourceAge(visibility, consumerTimeout)),
		metricMath:    p.MetricMath == nil || *p.MetricMath,
	}
	return a
}

// validate reports the invalid alarm props.
func (a alarmsResolved) validate() []error {
	c := checker{prefix: "Alarms."}
	if a.period < 60 || math.Mod(a.period, 60) != 0 {
		c.bad("Period is %s, want a whole number of minutes", human(a.period))
	}
	if !(a.failureRate > 0 && a.failureRate < 100) {
		c.bad("ConsumerFailureRateThreshold is %v, want a percentage above 0 and below 100", a.failureRate)
	}
	if a.failedRecords < 0 || a.failedRecords != math.Trunc(a.failedRecords) {
		c.bad("ConsumerFailedRecordsThreshold is %v, want a whole number >= 0", a.failedRecords)
	}
	if a.sourceAge < 1 {
		c.bad("SourceAgeThreshold is %s, want at least 1s", human(a.sourceAge))
	}
	for i, action := range a.actions {
		if action == nil {
			c.bad("Actions[%d] is nil", i)
		}
	}
	return c.errs
}

// defaultSourceAge is the SourceAge threshold when the props set none: the
// source queue's visibility timeout (visibilityFactor x the consumer
// timeout when an adopted queue's is a token) plus the consumer timeout
// plus sourceAgeMarginSeconds.
func defaultSourceAge(visibility, timeout float64) float64 {
	if math.IsNaN(visibility) {
		visibility = visibilityFactor * timeout
	}
	return visibility + timeout + sourceAgeMarginSeconds
}
