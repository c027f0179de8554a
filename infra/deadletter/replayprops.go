package deadletter

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/internal/settings"
)

// Defaults of [ReplayProps] that the construct owns; the tuning fields'
// defaults are the replay function's own (package settings).
const (
	// defaultReplaySchedule is the replay function's EventBridge schedule.
	defaultReplaySchedule = "rate(15 minutes)"
	// defaultReplayTimeoutSeconds is the replay function's timeout: at the
	// function's default RATE it leaves room for a run of MAX_PER_RUN
	// (100,000 messages at 250 msgs/s take 400 s) and ends before the
	// next scheduled run starts (docs/OPERATIONS.md, "How long a backlog
	// takes").
	defaultReplayTimeoutSeconds = 10 * 60
	// defaultReplayMemoryMB is the replay function's memory size.
	defaultReplayMemoryMB = 256
)

// Ranges of [ReplayProps] enforced by [LaneProps.Validate].
const (
	// minReplayTimeoutSeconds and maxReplayTimeoutSeconds bound
	// ReplayProps.Timeout: a run needs time for its gates and at least one
	// batch beside the deadline margin.
	minReplayTimeoutSeconds = 10
	maxReplayTimeoutSeconds = 900
	// maxReplayIntervalSeconds bounds ReplayProps.Interval: the report
	// alarms' period, twice it, stays within a day.
	maxReplayIntervalSeconds = 12 * 3600
)

// replayWiredEnvironment are the replay variables the construct sets from its
// own resources and props; ReplayProps.Environment must not set them, nor any
// variable of [replayTuning].
var replayWiredEnvironment = []string{settings.ReplayRoutes.Env, settings.LedgerTable.Env, settings.IdempotencyTable.Env, settings.ConsumerName.Env,
	settings.HealthURL.Env, settings.ServiceName.Env, settings.MetricsNamespace.Env,
	settings.ArchiveBucket.Env, settings.ArchiveInvalidQueueURL.Env, settings.ArchiveMode.Env, settings.ArchiveMargin.Env}

// ReplayProps configures the lane's replay function (functions/replay) and
// the EventBridge rule that invokes it. Every field is optional.
//
// The tuning fields (MaxReplays through Workers) become the function's
// environment variables of the same meaning; an unset field sets no
// variable, so the function's own default, named in the field's comment,
// applies. Validate checks them against the function's ranges and the lane.
type ReplayProps struct {
	// RouteName names the lane's one route in REPLAY_ROUTES (operators select
	// it with {"routes":["<name>"]}). Default the lane's Name.
	RouteName *string
	// Schedule is the rule's schedule expression, "rate(...)" or "cron(...)".
	// Default "rate(15 minutes)". A schedule that starts runs more often
	// than Timeout lets them overlap, and the lane warns at synth (see
	// [Lane.ReplaySchedule]).
	Schedule *string
	// Enabled is the rule's state as deployed. Default true. During an
	// incident operators stop scheduled replay without a deploy:
	// `aws events disable-rule --name <ReplayScheduleName output>`, and
	// enable-rule to resume. CloudFormation does not notice that change; only
	// a deploy that changes the rule applies this state again.
	Enabled *bool
	// Interval is the longest time between two scheduled runs. The replay
	// function reports each run (its heartbeat and its dead letters'
	// expiry, see [Alarms]) and the alarms on that report evaluate periods
	// of twice the Interval. Default the interval of a rate() Schedule;
	// required with a cron() Schedule or a token; whole minutes,
	// 1 min..12 h.
	Interval awscdk.Duration
	// Timeout of the replay function. Default 10 minutes; 10 s..15 min.
	// Keep it no longer than the time between two scheduled runs.
	Timeout awscdk.Duration
	// MemorySize in MB. Default 256.
	MemorySize *float64
	// ReservedConcurrency reserves (and caps) the replay function's
	// concurrency. Default none: Lambda keeps 100 of the account's
	// concurrency unreserved, so any reservation fails the deploy in an
	// account whose quota is small (new accounts start at 10). Runs that
	// overlap are safe (the ledger leases every message to one run), so set
	// it to 1 only to keep a scheduled run and an on-demand one from
	// overlapping, in an account whose quota leaves at least 100 unreserved
	// after every reservation (the default quota, 1000, does).
	ReservedConcurrency *float64
	// HealthURL gates replay: the replay function (HEALTH_URL) probes
	// GET HealthURL/health before a run and holds the run while the
	// downstream is unhealthy. Default none: no health gate (the canary
	// and refill gates still hold). An http:// or https:// URL, or a token
	// (a deploy parameter).
	HealthURL *string

	// MaxReplays is how often a message is replayed before it is parked
	// (MAX_REPLAYS). Function default 3; 1..100.
	MaxReplays *float64
	// BackoffBase is the backoff ceiling before the first replay, doubled per
	// replay (BACKOFF_BASE). Function default 5m; above 0.
	BackoffBase awscdk.Duration
	// BackoffMax caps the backoff ceiling (BACKOFF_MAX). Function default
	// 4h; at least BackoffBase.
	BackoffMax awscdk.Duration
	// ExpiryRescueWindow: a DLQ message this close to its expiry that cannot
	// be replayed is parked (EXPIRY_RESCUE_WINDOW). Function default
	// 24h; above 0 and shorter than Queues.DeadLetterRetention.
	ExpiryRescueWindow awscdk.Duration
	// Rate is the messages sent per second (RATE). Function default 250;
	// 0.1..3000.
	Rate *float64
	// MaxPerRun caps the messages moved per run (MAX_PER_RUN). Function
	// default 100000; a whole number >= 1.
	MaxPerRun *float64
	// CanaryLimit is the replays per run while the previous run's orders
	// are not completed (CANARY_LIMIT). Function default 5; >= 1.
	CanaryLimit *float64
	// RefillThreshold is the DLQ growth since the previous run that holds
	// the route (REFILL_THRESHOLD). Function default 100; >= 1.
	RefillThreshold *float64
	// DeadlineMargin: no batch starts with less time left
	// (DEADLINE_MARGIN). Function default 5s; above 0 and shorter than
	// Timeout.
	DeadlineMargin awscdk.Duration
	// Workers is the number of receive loops per route (WORKERS), sharing
	// the rate and the cap. Function default 4; 1..16.
	Workers *float64

	// CodeDir is a directory holding a prebuilt bootstrap of the replay
	// function (functions/replay of github.com/homingdlq/homing, built for
	// Lambda: CGO_ENABLED=0 GOOS=linux GOARCH=arm64 -tags lambda.norpc, or
	// the release's replay_<version>_lambda_<arch>.zip unzipped). Default:
	// LaneProps.CodeDir/replay when CodeDir is set; otherwise the lane
	// builds it at synth from the root module the CDK app requires
	// (`go list -m github.com/homingdlq/homing`), into the user's cache
	// directory, so an adopter needs no build step (Go must be on PATH, as
	// it is for any CDK app in Go).
	CodeDir *string

	// Environment adds further variables of the replay function. It must
	// not set the variables the construct wires (REPLAY_ROUTES,
	// LEDGER_TABLE, IDEMPOTENCY_TABLE, CONSUMER_NAME, HEALTH_URL) nor those
	// of the tuning fields above.
	Environment map[string]string

	// FunctionProps overrides the props of the replay function: Vpc,
	// SecurityGroups, Tracing, Layers, Description, ApplicationLogLevelV2
	// and the rest pass through. The lane owns what
	// ConsumerProps.FunctionProps lists, and the asynchronous invocation
	// (RetryAttempts, MaxEventAge, OnFailure, OnSuccess): setting one is
	// refused (see [LaneProps]). Default none.
	FunctionProps *awslambda.FunctionProps
}

// replayTuning are the tuning fields of ReplayProps, each nil when unset
// (the function's own default applies), durations in seconds.
type replayTuning struct {
	maxReplays         *float64
	backoffBase        *float64
	backoffMax         *float64
	expiryRescueWindow *float64
	rate               *float64
	maxPerRun          *float64
	canaryLimit        *float64
	refillThreshold    *float64
	deadlineMargin     *float64
	workers            *float64
}

// tuning is one replay tuning variable: its field, its variable and, when
// the field is set, its value (a number, or a duration in seconds).
type tuning struct {
	field, key string
	value      *float64
	duration   bool
}

// list is every tuning variable, in the order of ReplayProps.
func (t replayTuning) list() []tuning {
	return []tuning{
		{field: "MaxReplays", key: settings.MaxReplays.Env, value: t.maxReplays},
		{field: "BackoffBase", key: settings.BackoffBase.Env, value: t.backoffBase, duration: true},
		{field: "BackoffMax", key: settings.BackoffMax.Env, value: t.backoffMax, duration: true},
		{field: "ExpiryRescueWindow", key: settings.ExpiryRescueWindow.Env, value: t.expiryRescueWindow, duration: true},
		{field: "Rate", key: settings.Rate.Env, value: t.rate},
		{field: "MaxPerRun", key: settings.MaxPerRun.Env, value: t.maxPerRun},
		{field: "CanaryLimit", key: settings.CanaryLimit.Env, value: t.canaryLimit},
		{field: "RefillThreshold", key: settings.RefillThreshold.Env, value: t.refillThreshold},
		{field: "DeadlineMargin", key: settings.ReplayDeadlineMargin.Env, value: t.deadlineMargin, duration: true},
		{field: "Workers", key: settings.Workers.Env, value: t.workers},
	}
}

// The values in effect, the field's or else the function's default, in
// seconds for a duration.
func (t replayTuning) backoffBaseSeconds() float64 {
	return number(t.backoffBase, settings.BackoffBase.Default.Seconds())
}
func (t replayTuning) backoffMaxSeconds() float64 {
	return number(t.backoffMax, settings.BackoffMax.Default.Seconds())
}
func (t replayTuning) rescueWindowSeconds() float64 {
	return number(t.expiryRescueWindow, settings.ExpiryRescueWindow.Default.Seconds())
}
func (t replayTuning) deadlineMarginSeconds() float64 {
	return number(t.deadlineMargin, settings.ReplayDeadlineMargin.Default.Seconds())
}
func (t replayTuning) rateValue() float64 { return number(t.rate, settings.Rate.Default) }

// env renders a set tuning value as the function parses it (strconv.Atoi,
// ParseFloat, time.ParseDuration), durations without zero trailing units
// ("5m", "4h", "1m30s").
func (t tuning) env() string {
	if !t.duration {
		return strconv.FormatFloat(*t.value, 'f', -1, 64)
	}
	return settings.FormatDuration(time.Duration(math.Round(*t.value * float64(time.Second))))
}

// replayResolved is ReplayProps with the defaults the construct owns applied.
type replayResolved struct {
	routeName string
	schedule  string
	// interval is the longest time between two scheduled runs in seconds,
	// 0 when it is not known (a cron() Schedule without Interval).
	interval      float64
	enabled       bool
	timeout       float64
	memory        float64
	reserved      *float64
	healthURL     *string
	codeDir       *string
	tuning        replayTuning
	environment   map[string]string
	functionProps *awslambda.FunctionProps
}

// resolve applies the defaults; lane is the lane's name, the default route.
func (p *ReplayProps) resolve(lane string) replayResolved {
	r := replayResolved{
		routeName:     lane,
		schedule:      defaultReplaySchedule,
		enabled:       p.Enabled == nil || *p.Enabled,
		timeout:       seconds(p.Timeout, defaultReplayTimeoutSeconds),
		memory:        number(p.MemorySize, defaultReplayMemoryMB),
		reserved:      p.ReservedConcurrency,
		healthURL:     p.HealthURL,
		codeDir:       p.CodeDir,
		environment:   p.Environment,
		functionProps: p.FunctionProps,
		tuning: replayTuning{
			maxReplays:         p.MaxReplays,
			backoffBase:        optionalSeconds(p.BackoffBase),
			backoffMax:         optionalSeconds(p.BackoffMax),
			expiryRescueWindow: optionalSeconds(p.ExpiryRescueWindow),
			rate:               p.Rate,
			maxPerRun:          p.MaxPerRun,
			canaryLimit:        p.CanaryLimit,
			refillThreshold:    p.RefillThreshold,
			deadlineMargin:     optionalSeconds(p.DeadlineMargin),
			workers:            p.Workers,
		},
	}
	if p.RouteName != nil {
		r.routeName = *p.RouteName
	}
	if p.Schedule != nil {
		r.schedule = *p.Schedule
	}
	r.interval = rateSeconds(r.schedule)
	if p.Interval != nil {
		r.interval = seconds(p.Interval, 0)
	}
	return r
}

// variables are the tuning variables of the set fields.
func (r replayResolved) variables() map[string]string {
	env := map[string]string{}
	for _, t := range r.tuning.list() {
		if t.value != nil {
			env[t.key] = t.env()
		}
	}
	return env
}

// validate reports the invalid replay props; deadLetterRetention is the
// lane's, in seconds.
func (r replayResolved) validate(deadLetterRetention float64) []error {
	c := checker{prefix: "Replay."}
	if strings.TrimSpace(r.routeName) == "" {
		c.bad("RouteName is empty")
	}
	if len(r.routeName) > settings.MaxRouteNameBytes {
		c.bad("RouteName is %d bytes, want at most %d (it travels in the replay's sealed metadata)", len(r.routeName), settings.MaxRouteNameBytes)
	}
	// A token (a CfnParameter, say) is checked by EventBridge at deploy time.
	if !*awscdk.Token_IsUnresolved(jsii.String(r.schedule)) &&
		!((strings.HasPrefix(r.schedule, "rate(") || strings.HasPrefix(r.schedule, "cron(")) && strings.HasSuffix(r.schedule, ")")) {
		c.bad("Schedule is %q, want an EventBridge schedule expression, rate(...) or cron(...)", r.schedule)
	}
	switch {
	case r.interval == 0:
		c.bad("Interval is required with the Schedule %q: the heartbeat and expiry alarms evaluate periods of twice the interval between runs", r.schedule)
	case r.interval < 60 || r.interval > maxReplayIntervalSeconds || math.Mod(r.interval, 60) != 0:
		c.bad("Interval is %s, want a whole number of minutes in %s..%s (CloudWatch alarm periods; the report alarms evaluate twice it)",
			human(r.interval), human(60), human(maxReplayIntervalSeconds))
	}
	if r.timeout < minReplayTimeoutSeconds || r.timeout > maxReplayTimeoutSeconds {
		c.bad("Timeout is %s, want %s..%s", human(r.timeout), human(minReplayTimeoutSeconds), human(maxReplayTimeoutSeconds))
	}
	c.memory("MemorySize", r.memory)
	if r.reserved != nil {
		c.whole("ReservedConcurrency", *r.reserved, 1, math.MaxInt32)
	}
	if u := r.healthURL; u != nil && !*awscdk.Token_IsUnresolved(jsii.String(*u)) {
		if !(strings.HasPrefix(*u, "https://") && len(*u) > len("https://") || strings.HasPrefix(*u, "http://") && len(*u) > len("http://")) {
			c.bad("HealthURL is %q, want an http:// or https:// URL", withoutCredentials(*u))
		}
	}

	// An unset field is the function's default, which is valid: the checks
	// of single fields pass it a value in range, the checks of pairs the
	// function's default.
	t := r.tuning
	for _, f := range []struct {
		field string
		value *float64
		decl  settings.Int
	}{
		{"MaxReplays", t.maxReplays, settings.MaxReplays},
		{"MaxPerRun", t.maxPerRun, settings.MaxPerRun},
		{"CanaryLimit", t.canaryLimit, settings.CanaryLimit},
		{"RefillThreshold", t.refillThreshold, settings.RefillThreshold},
		{"Workers", t.workers, settings.Workers},
	} {
		c.whole(f.field, number(f.value, float64(f.decl.Default)), float64(f.decl.Min), float64(f.decl.Upper()))
	}
	if rate := t.rateValue(); settings.Rate.Check(rate) != nil {
		c.bad("Rate is %v, want %s", rate, settings.Rate.Want())
	}
	if base, backoffMax := t.backoffBaseSeconds(), t.backoffMaxSeconds(); base <= 0 || backoffMax < base {
		c.bad("BackoffBase (%s) and BackoffMax (%s): want 0 < BackoffBase <= BackoffMax (unset: %s and %s)", human(base), human(backoffMax),
			human(settings.BackoffBase.Default.Seconds()), human(settings.BackoffMax.Default.Seconds()))
	}
	if window := t.rescueWindowSeconds(); window <= 0 || window >= deadLetterRetention {
		c.bad("ExpiryRescueWindow is %s, want above 0 and shorter than Queues.DeadLetterRetention (%s)", human(window), human(deadLetterRetention))
	}
	if margin := t.deadlineMarginSeconds(); margin <= 0 || margin >= r.timeout {
		c.bad("DeadlineMargin is %s, want above 0 and shorter than Timeout (%s)", human(margin), human(r.timeout))
	}

	managed := append([]string{}, replayWiredEnvironment...)
	for _, t := range t.list() {
		managed = append(managed, t.key)
	}
	for _, key := range managed {
		if _, ok := r.environment[key]; ok {
			c.bad("Environment sets %s, which the lane wires itself or from a ReplayProps field", key)
		}
	}
	return append(c.errs, functionRule("Replay").refused("Replay.FunctionProps", r.functionProps)...)
}

// withoutCredentials is u with the user information of its authority (a
// user name and password) masked, for an error message: a synth error is
// printed in CI logs.
func withoutCredentials(u string) string {
	rest := u
	if _, after, ok := strings.Cut(u, "://"); ok {
		rest = after
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return u
	}
	return u[:len(u)-len(rest)] + "REDACTED" + rest[at:]
}
