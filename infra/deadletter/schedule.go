package deadletter

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// warnReplayOverlap is the id of the warning on a replay schedule that
// starts runs more often than the replay function's timeout lets them end.
const warnReplayOverlap = "homing-deadletter:ReplayRunsOverlap"

// rateSeconds is the interval of a schedule expression rate(N unit) in
// seconds, 0 for any other expression (cron(...), a token).
func rateSeconds(schedule string) float64 {
	inner, ok := strings.CutPrefix(schedule, "rate(")
	if !ok {
		return 0
	}
	inner, ok = strings.CutSuffix(inner, ")")
	if !ok {
		return 0
	}
	count, unit, ok := strings.Cut(strings.TrimSpace(inner), " ")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 {
		return 0
	}
	perUnit := map[string]float64{"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}[strings.TrimSpace(unit)]
	return float64(n) * perUnit
}

// shortestGap is the shortest time between two runs that schedule starts,
// in seconds; ok is false when it cannot be told (a token, an expression it
// does not read). A rate(N unit) starts one every N units. Of a
// cron(minutes hours day-of-month month day-of-week year) it reads the
// minutes and the hours (values, ranges a-b, lists, * and increments
// x/step), and takes the shortest gap between two runs of one day; the gap
// across midnight counts only when every day runs (day-of-month and
// day-of-week are * or ?), since other days may not follow each other. A
// day that runs once gives a day.
func shortestGap(schedule string) (gap float64, ok bool) {
	if *awscdk.Token_IsUnresolved(jsii.String(schedule)) {
		return 0, false
	}
	if s := rateSeconds(schedule); s > 0 {
		return s, true
	}
	inner, ok := strings.CutPrefix(schedule, "cron(")
	if !ok {
		return 0, false
	}
	inner, ok = strings.CutSuffix(inner, ")")
	fields := strings.Fields(inner)
	if !ok || len(fields) != 6 {
		return 0, false
	}
	minutes, okMinutes := cronField(fields[0], 59)
	hours, okHours := cronField(fields[1], 23)
	if !okMinutes || !okHours {
		return 0, false
	}
	var times []int // minutes of the day
	for _, h := range hours {
		for _, m := range minutes {
			times = append(times, h*60+m)
		}
	}
	slices.Sort(times)
	shortest := 24 * 60
	for i := 1; i < len(times); i++ {
		shortest = min(shortest, times[i]-times[i-1])
	}
	everyDay := func(f string) bool { return f == "*" || f == "?" }
	if everyDay(fields[2]) && everyDay(fields[4]) {
		shortest = min(shortest, times[0]+24*60-times[len(times)-1])
	}
	return float64(shortest * 60), true
}

// cronField is the sorted values of a cron minutes or hours field whose
// largest value is last (59, 23); ok is false when it cannot read it.
func cronField(field string, last int) ([]int, bool) {
	set := map[int]bool{}
	for _, part := range strings.Split(field, ",") {
		span, stepText, stepped := strings.Cut(part, "/")
		step := 1
		if stepped {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return nil, false
			}
			step = n
		}
		lo, hi := 0, last
		switch from, to, isRange := strings.Cut(span, "-"); {
		case span == "*":
		case isRange:
			a, errA := strconv.Atoi(from)
			b, errB := strconv.Atoi(to)
			if errA != nil || errB != nil || a > b {
				return nil, false
			}
			lo, hi = a, b
		default:
			n, err := strconv.Atoi(span)
			if err != nil {
				return nil, false
			}
			lo = n
			if !stepped {
				hi = n
			}
		}
		if lo < 0 || hi > last {
			return nil, false
		}
		for v := lo; v <= hi; v += step {
			set[v] = true
		}
	}
	values := make([]int, 0, len(set))
	for v := range set {
		values = append(values, v)
	}
	slices.Sort(values)
	return values, len(values) > 0
}

// overlapWarning is the warning for runs that overlap: schedule starts one
// every gap seconds, and each may last timeout seconds.
func overlapWarning(schedule string, gap, timeout float64) string {
	return fmt.Sprintf("the replay schedule %s starts a run every %s, but Replay.Timeout is %s: a run that takes its time overlaps the next. "+
		"Overlapping runs are safe (the ledger leases every dead letter to one run), but each applies its own RATE, MAX_PER_RUN and CANARY_LIMIT, "+
		"so together they send up to %d times the rate to the source queue and its consumer. "+
		"Set a Replay.Schedule of at least %s, or a Replay.Timeout of at most %s; if the overlap is meant, acknowledge the warning %s "+
		"on Lane.ReplaySchedule() (awscdk.Annotations_Of(...).AcknowledgeWarning).",
		schedule, human(gap), human(timeout), int(math.Ceil(timeout/gap)), human(timeout), human(gap), warnReplayOverlap)
}
