package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/homingdlq/homing/internal/wait"

	"github.com/homingdlq/homing/internal/settings"
)

// Defaults of [Options]: those the replay function's environment sets are
// its settings' defaults, as package settings declares them (RATE,
// MAX_PER_RUN, CANARY_LIMIT, REFILL_THRESHOLD, DEADLINE_MARGIN, WORKERS).
const (
	defaultRate            = settings.DefaultRate // messages sent per second
	defaultMaxPerRun       = settings.DefaultMaxPerRun
	defaultCanaryLimit     = settings.DefaultCanaryLimit
	defaultRefillThreshold = settings.DefaultRefillThreshold
	defaultDeadlineMargin  = settings.DefaultReplayDeadlineMargin
	defaultWorkers         = settings.DefaultWorkers
)

// defaultDecisionWindow is the default of [Options.DecisionWindow].
const defaultDecisionWindow = 30 * time.Second

// maxWorkers bounds [Options.Workers] (settings.Workers.Max): past it a
// route gains nothing but throttling (SQS answers a receive in about 10 ms
// in a region; 16 loops of 10 messages reach the 3,000 messages/s of
// maxRate).
const maxWorkers = settings.MaxWorkers

// Options tune an [Engine]. The zero value gives the defaults. The
// [Policy] is embedded: its fields are the decision's settings, under
// their one name (o.MaxReplays, o.ExpiryRescueWindow, ...).
type Options struct {
	Policy
	Rate            float64       // messages sent per second when the request sets none; default defaultRate
	MaxPerRun       int           // cap on messages moved when the request sets none; default defaultMaxPerRun
	CanaryLimit     int           // replays per route while the canary gate is limited; default defaultCanaryLimit
	RefillThreshold int           // DLQ growth since the previous run that closes the refill gate; default defaultRefillThreshold
	DeadlineMargin  time.Duration // no batch starts with less time left; default defaultDeadlineMargin
	// DecisionWindow is the receive visibility timeout, less the time the
	// rate limit may hold a batch: the time to decide and move a batch.
	// Default defaultDecisionWindow.
	DecisionWindow time.Duration
	RecordLifetime time.Duration // of ledger records; default defaultRecordLifetime
	// Workers is the number of receive loops per route, 1..MaxWorkers;
	// default defaultWorkers. They share the run's rate limit and cap. On
	// a FIFO route they run in parallel across message groups (SQS hands
	// out no message of a group while an earlier one is in flight), and a
	// batch keeps the order of each group.
	Workers int
	// Lockstep makes a worker finish a batch, its final ledger records
	// first and then its deletes, before it receives the next one. By
	// default the finish overlaps the next batch's receive and claim, and
	// the final records ride with that claim beside the deletes: about one
	// round trip per batch faster, but a crash between a batch's sends and
	// its final records has the next run send those messages again (the
	// consumer's idempotency absorbs the copies). In lockstep a crash
	// after the records leaves them, and the next run deletes the messages
	// without sending them. Every call of a worker then also happens in a
	// fixed order, for a deterministic replay of a run. FIFO routes always
	// run in lockstep: a group is free again only once the batch's deletes
	// are done.
	Lockstep bool
	// Health is the downstream health probe of the health gate; nil skips
	// the gate.
	Health func(ctx context.Context) error
	// Completions reads the consumer's completion records of business
	// keys, on the routes whose consumer writes them ([Route.Records]): the
	// canary gate, the breaker, and the removal of dead letters already
	// applied (a dead letter whose key completed with the same payload hash,
	// by its route's [Route.PayloadHash], is removed instead of replayed,
	// counted as applied). Nil skips them on every route.
	Completions Completions
	// Failures returns the class of the consumer's failure record of each
	// message id among ids that has one (the DLQ keeps a message's id):
	// dynamo.FailureLog.Classes. A run filtered by class
	// ([Filter.ErrorClasses]) reads every message's, other runs those of
	// the replays that came back, whose classes the summary counts
	// ([RouteSummary.BackClasses]). One call per batch; nil reads none.
	Failures func(ctx context.Context, ids []string) (map[string]string, error)
	// Consumer is the consumer scope Completions reads (the lane's
	// CONSUMER_NAME), named in the report of a route whose replays are
	// consumed but never recorded ([RouteSummary.RecordsMissing]).
	Consumer string
	// Logger gets one line per message and one summary line per run.
	// Default slog.Default().
	Logger *slog.Logger
	// Metrics gets the Embedded Metric Format lines of each run that is not
	// a dry run. Nil writes none.
	Metrics io.Writer
	// Namespace of the metrics; default "Homing/Replay".
	Namespace string
	// Lane, when set, is the metrics' Lane dimension beside Route: it keeps
	// the metrics of two lanes whose routes share a name apart.
	Lane string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Sleep waits for the rate limit: d or until ctx ends, returning
	// ctx.Err() then. Default a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnProgress, when set, is called when a route's pass starts (its
	// depth read, nothing counted yet) and after each batch, from one
	// goroutine at a time. It must return quickly; nil calls nothing.
	OnProgress func(Progress)
}

// Progress is what a run has done so far on one route.
type Progress struct {
	RunID  string
	Route  string
	Depth  int    // the DLQ's visible messages when the route's pass started
	Counts Counts // the route's outcomes so far (a copy)
}

func (o Options) withDefaults() Options {
	o.Policy = o.Policy.withDefaults()
	o.Rate = cmpDefault(o.Rate, defaultRate)
	o.MaxPerRun = cmpDefault(o.MaxPerRun, defaultMaxPerRun)
	o.CanaryLimit = cmpDefault(o.CanaryLimit, defaultCanaryLimit)
	o.RefillThreshold = cmpDefault(o.RefillThreshold, defaultRefillThreshold)
	o.DeadlineMargin = cmpDefault(o.DeadlineMargin, defaultDeadlineMargin)
	o.DecisionWindow = cmpDefault(o.DecisionWindow, defaultDecisionWindow)
	o.RecordLifetime = cmpDefault(o.RecordLifetime, defaultRecordLifetime)
	o.Workers = cmpDefault(o.Workers, defaultWorkers)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Namespace == "" {
		o.Namespace = namespace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = wait.Sleep
	}
	return o
}

func cmpDefault[T int | float64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Validate reports every option that is out of range after the defaults
// are applied; [Engine.Run] refuses to run with them.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if math.IsNaN(o.Rate) || o.Rate < minRate || o.Rate > maxRate {
		errs = append(errs, fmt.Errorf("rate %g: want %g..%g messages per second", o.Rate, minRate, maxRate))
	}
	if o.DecisionWindow > maxVisibility {
		errs = append(errs, fmt.Errorf("decision window %s: want at most %s", o.DecisionWindow, maxVisibility))
	}
	if o.Workers > maxWorkers {
		errs = append(errs, fmt.Errorf("workers %d: want 1..%d", o.Workers, maxWorkers))
	}
	return errors.Join(errs...)
}
