package replay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/homingdlq/homing/internal/clip"
	"github.com/homingdlq/homing/internal/emfline"
	"github.com/homingdlq/homing/internal/settings"
)

// Summary is the report of one run: the function's response, the CLI's
// --json output and the ledger's run record. Its JSON field names are stable.
type Summary struct {
	RunID      string         `json:"runId"`
	DryRun     bool           `json:"dryRun"`
	StartedAt  time.Time      `json:"startedAt"`
	FinishedAt time.Time      `json:"finishedAt"`
	DurationMS int64          `json:"durationMs"`
	Max        int            `json:"max"`              // the cap on messages moved
	Rate       float64        `json:"rate"`             // messages sent per second
	Filter     *Filter        `json:"filter,omitempty"` // nil when the run had no filter
	Gates      []Gate         `json:"gates"`            // run-wide gates (health)
	Routes     []RouteSummary `json:"routes"`
	Total      Counts         `json:"total"`
}

// RouteSummary is the part of a [Summary] about one route.
type RouteSummary struct {
	Route      string     `json:"route"`
	FIFO       bool       `json:"fifo"`
	Depth      int        `json:"depth"`    // ApproximateNumberOfMessages at the start
	InFlight   int        `json:"inFlight"` // ApproximateNumberOfMessagesNotVisible at the start
	Gates      []Gate     `json:"gates"`    // route gates (refill, canary)
	StopReason StopReason `json:"stopReason"`
	Error      string     `json:"error,omitempty"` // why the route stopped, when StopReason is "error"
	Counts
	// ReplayedKeys are the keys this run replayed on the route (a
	// sample of 100 when it replayed more, known failures' last): what
	// the next runs' canary and breaker judge it by. A summary stored by
	// an earlier version names them "replayedOrders" (see UnmarshalJSON).
	ReplayedKeys []string `json:"replayedKeys,omitempty"`
	// RetriedKeys are the keys of ReplayedKeys that only known failures
	// carried: messages whose replay count, after any refund, was one or
	// more (they failed after a replay that the breaker did not give
	// back). The gates judge the run by its other keys.
	RetriedKeys []string `json:"retriedKeys,omitempty"`
	// BackClasses counts the failure classes of the engine's replays this
	// pass saw back in the DLQ ([Options.Failures]; "unknown": no record):
	// at most 10 classes by name, the rest as "other".
	BackClasses map[string]int `json:"backClasses,omitempty"`
	// Retried counts the replays of known failures among Replayed.
	Retried int `json:"retried,omitempty"`
	// Probe is true when this run's replays on the route probed an open
	// breaker.
	Probe bool `json:"probe,omitempty"`
	// Breaker is the route's circuit breaker as this run left it; nil
	// while it has never opened (see [Breaker]).
	Breaker *Breaker `json:"breaker,omitempty"`
	// BreakerSignal names what the breaker read in this run:
	// [SignalCompletions] on a route whose consumer writes completion
	// records, [SignalDLQ] on one that writes none or whose records are
	// missing; empty when nothing could be read (no completions reader).
	BreakerSignal string `json:"breakerSignal,omitempty"`
	// Returned are the latest runs (at most 5) that replayed on the route,
	// latest first, each with how many of its replays this run's pass saw
	// back in the DLQ (known failures left out of both): the breaker's signal without records, and the
	// evidence that replays were consumed but never recorded.
	Returned []Return `json:"returned,omitempty"`
	// Unrecorded counts the consecutive runs, this one included, that the
	// canary held while none of the keys the latest replaying run replayed
	// had completed and none of its replays came back to the DLQ.
	Unrecorded int `json:"unrecorded,omitempty"`
	// RecordsMissing is true when the route's consumer consumes its
	// replays but writes no completion records for them (Unrecorded
	// reached unrecordedRuns, and no replayed key has completed since):
	// the route is not held at the canary but runs as a route without
	// records, its breaker on the DLQ signal. RecordsMissingDetail says
	// why and what to check.
	RecordsMissing       bool   `json:"recordsMissing,omitempty"`
	RecordsMissingDetail string `json:"recordsMissingDetail,omitempty"`
	// Expiry is what the run saw of its dead letters' expiry; nil when it
	// examined none with a SentTimestamp. The DLQ's own
	// ApproximateAgeOfOldestMessage leaves out messages received three times
	// or more, and the replay receives every dead letter on every run: this
	// is the expiry backstop's signal.
	Expiry *Expiry `json:"expiry,omitempty"`
}

// Expiry is what a run saw of the expiry of the dead letters it examined on
// a route.
type Expiry struct {
	// OldestSentAt is the SentTimestamp of the oldest dead letter examined:
	// the start of its retention clock in the DLQ (for a standard queue the
	// original send; SQS resets it on a FIFO queue's redrive).
	OldestSentAt time.Time `json:"oldestSentAt"`
	// ExpiresAt is when that dead letter expires; zero when the DLQ's
	// retention is unknown.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// InRescueWindow counts the examined dead letters within the rescue
	// window of their expiry (parked unless replayed at once).
	InRescueWindow int `json:"inRescueWindow"`
}

// see adds to e a dead letter sent at sentAt that expires at expiresAt
// (zero: unknown); rescuing says it is within its rescue window.
func (e *Expiry) see(sentAt, expiresAt time.Time, rescuing bool) {
	if e.OldestSentAt.IsZero() || sentAt.Before(e.OldestSentAt) {
		e.OldestSentAt = sentAt
		e.ExpiresAt = expiresAt
	}
	if rescuing {
		e.InRescueWindow++
	}
}

// StopReason says why a route's pass ended.
type StopReason string

// The stop reasons.
const (
	StopDrained  StopReason = "drained"       // a receive came back empty
	StopPass     StopReason = "pass-complete" // received as many as the DLQ held at the start
	StopCap      StopReason = "cap"           // the run's cap on messages moved is reached
	StopDeadline StopReason = "deadline"      // too little time left for another batch
	StopGate     StopReason = "gate"          // a gate is closed
	StopCanceled StopReason = "canceled"      // the context ended
	StopError    StopReason = "error"         // see Error
)

// Gate is the decision of one gate.
type Gate struct {
	Name     string       `json:"name"` // health, canary, refill
	Decision GateDecision `json:"decision"`
	Detail   string       `json:"detail,omitempty"`
	Limit    int          `json:"limit,omitempty"` // limited: at most this many replays
}

// GateDecision is the outcome of a gate.
type GateDecision string

// The gate decisions.
const (
	GateOpen    GateDecision = "open"
	GateClosed  GateDecision = "closed"  // no replays; the expiry rescue goes on
	GateLimited GateDecision = "limited" // at most Limit replays
	GateSkipped GateDecision = "skipped" // not configured
)

// The gate names.
const (
	GateHealth = "health"
	GateCanary = "canary"
	GateRefill = "refill"
	// GateSeal closes a run that cannot read the seal key from the ledger
	// (see [SealKey]): it cannot tell its own metadata from a producer's,
	// so it replays nothing; the expiry rescue goes on.
	GateSeal = "seal"
)

// maxDetail bounds each text a summary quotes (an error, a gate's detail):
// the run's record is one DynamoDB item, of at most 400 KB, whatever a
// probe or a service answered.
const maxDetail = 1024

// bound clips the texts of s to maxDetail bytes each. With the bounded
// lists (ReplayedKeys, Breaker.FailedRuns, the filter's), the summary's
// size does not grow with the messages a run examines.
func (s *Summary) bound() {
	clipGates := func(gs []Gate) {
		for i := range gs {
			gs[i].Detail = clip.String(gs[i].Detail, maxDetail)
		}
	}
	clipGates(s.Gates)
	for i := range s.Routes {
		s.Routes[i].Error = clip.String(s.Routes[i].Error, maxDetail)
		s.Routes[i].RecordsMissingDetail = clip.String(s.Routes[i].RecordsMissingDetail, maxDetail)
		clipGates(s.Routes[i].Gates)
	}
}

// closed reports whether a closed gate stops the route.
func (r RouteSummary) closed(run []Gate) bool {
	for _, g := range append(run[:len(run):len(run)], r.Gates...) {
		if g.Decision == GateClosed {
			return true
		}
	}
	return false
}

// namespace is the CloudWatch namespace of the metrics.
const namespace = "Homing/Replay"

// emfMetrics are the metrics of route r's line in run s, named as settings
// declares them: the counts (RunCompleted is 1 for every run: the heartbeat
// an alarm watches, no data for two schedule intervals meaning the schedule
// is off, failing or throttled; RecordsMissing is 1 while the route's
// replays are consumed but never recorded), then the expiry figures (see [Expiry]),
// absent when the run examined no dead letter with a SentTimestamp (or, for
// SecondsToExpiry, the retention is unknown).
func emfMetrics(s Summary, r RouteSummary) []emfline.Metric {
	count := func(name string, n int) emfline.Metric {
		return emfline.Metric{Name: name, Unit: emfline.Count, Value: float64(n)}
	}
	gateClosed := 0
	if r.closed(s.Gates) {
		gateClosed = 1
	}
	recordsMissing := 0
	if r.RecordsMissing {
		recordsMissing = 1
	}
	inRescueWindow := 0
	if r.Expiry != nil {
		inRescueWindow = r.Expiry.InRescueWindow
	}
	metrics := []emfline.Metric{
		count(settings.MetricReplayed, r.Replayed),
		count(settings.MetricParked, r.ParkedTotal()),
		count(settings.MetricDelayed, r.Delayed),
		count(settings.MetricGateClosed, gateClosed),
		count(settings.MetricDeadLettered, r.DeadLettered),
		count(settings.MetricErrors, r.Errors),
		count(settings.MetricRunCompleted, 1),
		count(settings.MetricInRescueWindow, inRescueWindow),
		count(settings.MetricRecordsMissing, recordsMissing),
	}
	if x := r.Expiry; x != nil {
		age := max(0, s.FinishedAt.Sub(x.OldestSentAt).Seconds())
		metrics = append(metrics, emfline.Metric{Name: settings.MetricOldestDeadLetterAge, Unit: emfline.Seconds, Value: age})
		if !x.ExpiresAt.IsZero() {
			left := max(0, x.ExpiresAt.Sub(s.FinishedAt).Seconds())
			metrics = append(metrics, emfline.Metric{Name: settings.MetricSecondsToExpiry, Unit: emfline.Seconds, Value: left})
		}
	}
	return metrics
}

// writeEMF writes one Embedded Metric Format line per route of s to w,
// in namespace ns with the dimensions Lane and Route, or Route alone when
// lane is empty. The lane (the function's POWERTOOLS_SERVICE_NAME) keeps
// the metrics of two lanes whose routes share a name apart. Each line is
// one Write call, through internal/emfline, the consumer's writer too (a
// line CloudWatch would reject is an error wrapping emfline.ErrInvalid). The run id
// is a property of the line, not a metric.
func writeEMF(w io.Writer, ns, lane string, s Summary) error {
	out := emfline.NewWriter(w)
	for _, r := range s.Routes {
		dimensions := []emfline.Dimension{{Name: settings.DimensionRoute, Value: r.Route}}
		if lane != "" {
			dimensions = []emfline.Dimension{{Name: settings.DimensionLane, Value: lane}, dimensions[0]}
		}
		line := emfline.Line{Namespace: ns, Timestamp: s.FinishedAt, Dimensions: dimensions, Metrics: emfMetrics(s, r),
			Properties: map[string]any{"runId": s.RunID}}
		if err := out.Write(line); err != nil {
			return fmt.Errorf("write metrics of route %s: %w", r.Route, err)
		}
	}
	return nil
}

// logSummary writes the run's one summary line.
func logSummary(ctx context.Context, l *slog.Logger, s Summary, err error) {
	level := slog.LevelInfo
	if err != nil || s.Total.Errors > 0 {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("runId", s.RunID),
		slog.Bool("dryRun", s.DryRun),
		slog.Int64("durationMs", s.DurationMS),
		slog.Any("gates", s.Gates),
		slog.Any("routes", s.Routes),
		slog.Any("total", s.Total),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	l.LogAttrs(ctx, level, "replay run", attrs...)
}
