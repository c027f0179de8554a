package replay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/wait"
)

// Defaults of [Options].
const (
	DefaultRate            = 50.0 // messages sent per second
	DefaultMaxPerRun       = 1000
	DefaultCanaryLimit     = 5
	DefaultRefillThreshold = 100
	DefaultDeadlineMargin  = 5 * time.Second
	DefaultDecisionWindow  = 30 * time.Second
)

// Limits of a [Request].
const (
	MinRate       = 0.1
	MaxRate       = 3000.0 // SQS FIFO batched throughput per action
	MaxVisibility = 12 * time.Hour
)

// ErrInvalidRequest is wrapped by [Engine.Run] when the request is invalid;
// nothing has been done then.
var ErrInvalidRequest = errors.New("replay: invalid request")

// Route is one dead-letter queue with its source and parking queues, all of
// the same type (FIFO when the URLs end in ".fifo").
type Route struct {
	Name       string `json:"name"`
	DLQURL     string `json:"dlqUrl"`
	SourceURL  string `json:"sourceUrl"`
	ParkingURL string `json:"parkingUrl"`
}

// FIFO reports whether the route's queues are FIFO queues.
func (r Route) FIFO() bool { return strings.HasSuffix(r.DLQURL, ".fifo") }

// Validate reports every missing URL and a mix of queue types.
func (r Route) Validate() error {
	var errs []error
	if r.Name == "" {
		errs = append(errs, errors.New("route without a name"))
	}
	for _, f := range [...]struct{ key, url string }{{"dlqUrl", r.DLQURL}, {"sourceUrl", r.SourceURL}, {"parkingUrl", r.ParkingURL}} {
		switch {
		case f.url == "":
			errs = append(errs, fmt.Errorf("route %q: %s is required", r.Name, f.key))
		case strings.HasSuffix(f.url, ".fifo") != r.FIFO():
			errs = append(errs, fmt.Errorf("route %q: %s %s: all queues of a route must be FIFO, or none", r.Name, f.key, f.url))
		}
	}
	return errors.Join(errs...)
}

// Filter selects the messages an on-demand run considers; the zero value
// selects all. Every non-empty criterion must match.
type Filter struct {
	Reasons   []string      // the message's reason: ours, the invalid lane's, or ReasonDeadLettered
	OlderThan time.Duration // dead-lettered at least this long ago
	OrderIDs  []string      // the body's orderId
}

type filterJSON struct {
	Reasons   []string `json:"reasons,omitempty"`
	OlderThan string   `json:"olderThan,omitempty"`
	OrderIDs  []string `json:"orderIds,omitempty"`
}

// MarshalJSON writes OlderThan as a Go duration string ("1h0m0s").
func (f Filter) MarshalJSON() ([]byte, error) {
	j := filterJSON{Reasons: f.Reasons, OrderIDs: f.OrderIDs}
	if f.OlderThan != 0 {
		j.OlderThan = f.OlderThan.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads OlderThan as a Go duration string ("90m"). Unknown
// fields are an error: a misspelt criterion must not widen a run.
func (f *Filter) UnmarshalJSON(b []byte) error {
	var j filterJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	*f = Filter{Reasons: j.Reasons, OrderIDs: j.OrderIDs}
	if j.OlderThan != "" {
		d, err := time.ParseDuration(j.OlderThan)
		if err != nil {
			return fmt.Errorf("olderThan %q: not a duration like 90m or 24h", j.OlderThan)
		}
		f.OlderThan = d
	}
	return nil
}

func (f Filter) empty() bool { return len(f.Reasons) == 0 && f.OlderThan == 0 && len(f.OrderIDs) == 0 }

func (f Filter) match(m message, now time.Time) bool {
	return (len(f.Reasons) == 0 || slices.Contains(f.Reasons, m.reason)) &&
		(f.OlderThan == 0 || now.Sub(m.firstDeadLettered()) >= f.OlderThan) &&
		(len(f.OrderIDs) == 0 || m.orderID != "" && slices.Contains(f.OrderIDs, m.orderID))
}

// Request is one run.
type Request struct {
	Routes []Route
	DryRun bool    // decide and report, move and write nothing
	Max    int     // cap on messages moved (replayed + parked); 0 means Options.MaxPerRun
	Rate   float64 // messages sent per second; 0 means Options.Rate
	Filter Filter
	RunID  string // "" means a random id
	// ResetCount restarts the replay count of every message the run
	// examines: the count in its metadata and the order's earlier replays
	// in the ledger are ignored, and the metadata sent records the reset
	// (Metadata.ResetAt), so later runs count only the replays after it.
	// For an operator who fixed the cause of messages that exhausted their
	// replays and brings them back from the parking queue.
	ResetCount bool
}

// Validate reports every problem of the request.
func (r Request) Validate() error {
	var errs []error
	if len(r.Routes) == 0 {
		errs = append(errs, errors.New("no routes"))
	}
	names := map[string]bool{}
	for _, rt := range r.Routes {
		if err := rt.Validate(); err != nil {
			errs = append(errs, err)
		}
		if names[rt.Name] {
			errs = append(errs, fmt.Errorf("route %q appears twice", rt.Name))
		}
		names[rt.Name] = true
	}
	if r.Max < 0 {
		errs = append(errs, fmt.Errorf("max %d: want >= 0", r.Max))
	}
	if r.Rate != 0 && (r.Rate < MinRate || r.Rate > MaxRate || math.IsNaN(r.Rate)) {
		errs = append(errs, fmt.Errorf("rate %g: want %g..%g messages per second", r.Rate, MinRate, MaxRate))
	}
	if r.Filter.OlderThan < 0 {
		errs = append(errs, fmt.Errorf("filter olderThan %s: want >= 0", r.Filter.OlderThan))
	}
	if len(r.RunID) > 128 {
		errs = append(errs, errors.New("runId longer than 128 characters"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}

// Options tune an [Engine]. The zero value gives the defaults.
type Options struct {
	MaxReplays         int           // park after this many replays; default DefaultMaxReplays
	BackoffBase        time.Duration // default DefaultBackoffBase
	BackoffMax         time.Duration // default DefaultBackoffMax
	ExpiryRescueWindow time.Duration // default DefaultExpiryRescueWindow
	Rate               float64       // messages sent per second when the request sets none; default DefaultRate
	MaxPerRun          int           // messages moved per run when the request sets none; default DefaultMaxPerRun
	CanaryLimit        int           // replays per route while the canary gate is limited; default DefaultCanaryLimit
	RefillThreshold    int           // DLQ growth since the previous run that closes the refill gate; default DefaultRefillThreshold
	DeadlineMargin     time.Duration // time kept free before the context's deadline; default DefaultDeadlineMargin
	DecisionWindow     time.Duration // visibility timeout while a batch is decided; default DefaultDecisionWindow
	RecordLifetime     time.Duration // ledger records live this long; default DefaultRecordLifetime

	// Health probes the downstream; an error closes the health gate. Nil
	// skips the gate.
	Health func(context.Context) error
	// Completions reads whether orders completed, for the canary gate and
	// the breaker, and with PayloadHash to remove dead letters the consumer
	// has already applied. Nil skips the gate.
	Completions Completions
	// PayloadHash returns the hash the consumer's idempotency record holds
	// for a message body (for the invoice consumer: the order's canonical
	// hash), ok=false when the body has none (it is invalid). With
	// Completions, a dead letter whose order completed with the same hash
	// is removed instead of replayed (counted as applied). Nil skips that.
	PayloadHash func(body string) (hash string, ok bool)
	// Logger gets one line per message and one summary line per run.
	// Default slog.Default().
	Logger *slog.Logger
	// Metrics gets the Embedded Metric Format lines of each run that is not
	// a dry run. Nil writes none.
	Metrics io.Writer
	// Namespace of the metrics; default Namespace.
	Namespace string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Sleep waits for the rate limit: d or until ctx ends, returning
	// ctx.Err() then. Default a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnProgress, when set, is called on the run's goroutine when a route's
	// pass starts (its depth read, nothing counted yet) and after each
	// batch. It must return quickly; nil calls nothing.
	OnProgress func(Progress)
}

// Progress is what a run has done so far on one route.
type Progress struct {
	RunID  string
	Route  string
	Depth  int    // the DLQ's visible messages when the route's pass started
	Counts Counts // the route's outcomes so far (a copy)
}

func (r *run) progress(rs *RouteSummary) {
	if r.e.opts.OnProgress != nil {
		r.e.opts.OnProgress(Progress{RunID: r.id, Route: rs.Route, Depth: rs.Depth, Counts: rs.Counts.clone()})
	}
}

func (o Options) withDefaults() Options {
	o.Rate = cmpDefault(o.Rate, DefaultRate)
	o.MaxPerRun = cmpDefault(o.MaxPerRun, DefaultMaxPerRun)
	o.CanaryLimit = cmpDefault(o.CanaryLimit, DefaultCanaryLimit)
	o.RefillThreshold = cmpDefault(o.RefillThreshold, DefaultRefillThreshold)
	o.DeadlineMargin = cmpDefault(o.DeadlineMargin, DefaultDeadlineMargin)
	o.DecisionWindow = cmpDefault(o.DecisionWindow, DefaultDecisionWindow)
	o.RecordLifetime = cmpDefault(o.RecordLifetime, DefaultRecordLifetime)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Namespace == "" {
		o.Namespace = Namespace
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

// Engine runs replays. It is safe for concurrent use when its ports are;
// concurrent runs share nothing else.
type Engine struct {
	queue  Queue
	ledger Ledger
	opts   Options
	policy Policy

	// afterSend, when set (by tests only, see export_test.go), is called
	// after a batch's sends and ledger marks and before its deletes; an
	// error stops the run there, as a crash would.
	afterSend func(route string, ids []string) error
}

// New returns an Engine on the queues of q and the ledger l.
func New(q Queue, l Ledger, opts Options) *Engine {
	opts = opts.withDefaults()
	return &Engine{
		queue: q, ledger: l, opts: opts,
		policy: Policy{MaxReplays: opts.MaxReplays, BackoffBase: opts.BackoffBase, BackoffMax: opts.BackoffMax, RescueWindow: opts.ExpiryRescueWindow}.withDefaults(),
	}
}

// Validate reports every option that is out of range after the defaults
// are applied; [Engine.Run] refuses to run with them.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if math.IsNaN(o.Rate) || o.Rate < MinRate || o.Rate > MaxRate {
		errs = append(errs, fmt.Errorf("rate %g: want %g..%g messages per second", o.Rate, MinRate, MaxRate))
	}
	if o.DecisionWindow > MaxVisibility {
		errs = append(errs, fmt.Errorf("decision window %s: want at most %s", o.DecisionWindow, MaxVisibility))
	}
	return errors.Join(errs...)
}

// Run runs req and returns its summary. It returns an error wrapping
// ErrInvalidRequest (and an empty summary) for an invalid request or
// invalid options;
// otherwise the summary, and an error when a route stopped on an error or
// the run record could not be written. Errors of single messages are counted
// in the summary, not returned. The summary is logged and, unless the run is
// a dry run, written to the ledger and emitted as metrics.
func (e *Engine) Run(ctx context.Context, req Request) (Summary, error) {
	if err := req.Validate(); err != nil {
		return Summary{}, err
	}
	if err := e.opts.Validate(); err != nil {
		return Summary{}, fmt.Errorf("%w: options: %w", ErrInvalidRequest, err)
	}
	r := e.newRun(req)
	sum := Summary{
		RunID: r.id, DryRun: req.DryRun, StartedAt: r.start, Max: r.max, Rate: r.rate,
		Gates: []Gate{r.healthGate(ctx)}, Routes: []RouteSummary{}, Total: newCounts(),
	}
	if !req.Filter.empty() {
		f := req.Filter
		sum.Filter = &f
	}
	r.health = sum.Gates
	r.logGate(ctx, "", sum.Gates[0])

	var errs []error
	recent, prevErr := e.ledger.Runs(ctx, gateHistory)
	if prevErr != nil {
		prevErr = fmt.Errorf("read the recent runs from the ledger: %w", prevErr)
		errs = append(errs, prevErr)
	}
	for _, rt := range req.Routes {
		rs, err := r.route(ctx, rt, recent, prevErr)
		if err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", rt.Name, err))
		}
		sum.Total.add(rs.Counts)
		rs.Counts = rs.Counts.clone()
		sum.Routes = append(sum.Routes, rs)
	}
	sum.FinishedAt = e.opts.Now()
	sum.DurationMS = sum.FinishedAt.Sub(sum.StartedAt).Milliseconds()

	if !req.DryRun {
		// The record is written even when ctx has ended: the next run's
		// gates depend on it.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := e.ledger.PutRun(wctx, sum, sum.StartedAt.Add(e.opts.RecordLifetime)); err != nil {
			errs = append(errs, fmt.Errorf("write run %s to the ledger: %w", sum.RunID, err))
		}
		cancel()
		if e.opts.Metrics != nil {
			if err := WriteEMF(e.opts.Metrics, e.opts.Namespace, sum); err != nil {
				errs = append(errs, err)
			}
		}
	}
	err := errors.Join(errs...)
	logSummary(ctx, e.opts.Logger, sum, err)
	return sum, err
}

// run is the state of one Run.
type run struct {
	e          *Engine
	req        Request
	id         string
	start      time.Time
	max        int
	rate       float64
	moved      int           // messages moved (or, in a dry run, that would be) so far
	longest    time.Duration // the longest batch so far: the estimate of the next one
	visibility time.Duration // the receive visibility timeout
	limiter    *limiter
	seen       *seenFilter
	health     []Gate
}

func (e *Engine) newRun(req Request) *run {
	r := &run{e: e, req: req, id: req.RunID, start: e.opts.Now(), max: req.Max, rate: req.Rate, longest: time.Second, seen: newSeenFilter()}
	if r.id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		r.id = "run-" + r.start.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	}
	if r.max == 0 {
		r.max = e.opts.MaxPerRun
	}
	if r.rate == 0 {
		r.rate = e.opts.Rate
	}
	r.limiter = newLimiter(r.rate, e.opts.Now, e.opts.Sleep)
	// Long enough to decide, and to wait for the rate limit of one batch.
	r.visibility = e.opts.DecisionWindow + time.Duration(float64(MaxBatch)/r.rate*float64(time.Second))
	return r
}

func (r *run) now() time.Time { return r.e.opts.Now() }

// stop says why the run must not start another batch, or "".
func (r *run) stop(ctx context.Context) StopReason {
	if ctx.Err() != nil {
		return StopCanceled
	}
	if r.moved >= r.max {
		return StopCap
	}
	if deadline, ok := ctx.Deadline(); ok {
		need := r.e.opts.DeadlineMargin + r.longest
		if !r.req.DryRun {
			need += r.limiter.delay()
		}
		if deadline.Sub(r.now()) < need {
			return StopDeadline
		}
	}
	return ""
}

// pass is the state of one route in a run.
type pass struct {
	route      Route
	rs         *RouteSummary
	fifo       bool
	retention  time.Duration // 0 when unknown
	replayLeft int           // replays the canary allows; -1 unlimited
	gated      bool          // a gate is closed: no replays, the rescue goes on
	sourceMax  int           // the source queue's MaximumMessageSize
	held       []visibility  // messages left for a later run, released when the pass ends
	// suspects are the latest replaying runs none of whose orders has
	// completed yet: a message one of them replayed seen back in the DLQ
	// trips the breaker.
	suspects []string
}

// gateHistory is how many recent runs the gates look back through.
const gateHistory = 20

// routeRun is the part of an earlier run about one route.
type routeRun struct {
	runID     string
	startedAt time.Time
	rs        *RouteSummary
}

// routeRuns returns the summaries of route in runs (latest first) for which
// want holds, latest first.
func routeRuns(runs []Summary, route string, want func(RouteSummary) bool) []routeRun {
	var out []routeRun
	for _, s := range runs {
		if i := slices.IndexFunc(s.Routes, func(p RouteSummary) bool { return p.Route == route && want(p) }); i >= 0 {
			out = append(out, routeRun{runID: s.RunID, startedAt: s.StartedAt, rs: &s.Routes[i]})
		}
	}
	return out
}

func (r *run) route(ctx context.Context, rt Route, recent []Summary, prevErr error) (RouteSummary, error) {
	rs := RouteSummary{Route: rt.Name, FIFO: rt.FIFO(), Gates: []Gate{}, Counts: newCounts()}
	if reason := r.stop(ctx); reason != "" {
		rs.StopReason = reason
		return rs, nil
	}
	out, err := r.e.queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(rt.DLQURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameMessageRetentionPeriod,
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		rs.StopReason, rs.Error = StopError, err.Error()
		return rs, fmt.Errorf("read attributes of %s: %w", rt.DLQURL, err)
	}
	attr := func(name types.QueueAttributeName) int {
		n, _ := strconv.Atoi(out.Attributes[string(name)])
		return n
	}
	rs.Depth = attr(types.QueueAttributeNameApproximateNumberOfMessages)
	rs.InFlight = attr(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	p := &pass{route: rt, rs: &rs, fifo: rt.FIFO(), replayLeft: -1, sourceMax: r.sourceMax(ctx, rt),
		retention: time.Duration(attr(types.QueueAttributeNameMessageRetentionPeriod)) * time.Second}

	// The refill gate compares with the latest run that read this route's
	// DLQ; the canary checks the orders of the latest runs that replayed
	// on it. Runs of other routes (an operator's replay from the parking
	// queue), runs held before reading, and runs that replayed nothing are
	// looked past.
	read := routeRuns(recent, rt.Name, func(rs RouteSummary) bool { return len(rs.Gates) > 0 })
	replayed := routeRuns(recent, rt.Name, func(rs RouteSummary) bool { return len(rs.ReplayedOrders) > 0 })
	if b := routeRuns(recent, rt.Name, func(rs RouteSummary) bool { return rs.Breaker != nil }); len(b) > 0 {
		rs.Breaker = b[0].rs.Breaker.clone()
	}
	var last *RouteSummary
	if len(read) > 0 {
		last = read[0].rs
	}
	refill, canary := r.refillGate(rs, last, prevErr), r.canaryGate(ctx, p, replayed, prevErr)
	rs.Gates = append(rs.Gates, refill, canary)
	r.logGate(ctx, rt.DLQURL, refill)
	r.logGate(ctx, rt.DLQURL, canary)
	if rs.closed(r.health) {
		// Gates hold replays, never the expiry rescue: the pass goes on
		// to park what is about to expire.
		p.gated, p.replayLeft = true, 0
	} else if canary.Decision == GateLimited {
		p.replayLeft = canary.Limit
	}
	r.progress(&rs)
	stop := func(reason StopReason) (RouteSummary, error) {
		if p.gated && (reason == StopDrained || reason == StopPass) {
			reason = StopGate
		}
		rs.StopReason = reason
		return rs, nil
	}

	defer func() {
		// Release what the pass held, even when ctx has ended.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		r.changeVisibility(rctx, p, p.held, slog.LevelDebug)
	}()
	budget := rs.Depth + MaxBatch
	for {
		if reason := r.stop(ctx); reason != "" {
			return stop(reason)
		}
		if budget <= 0 {
			return stop(StopPass)
		}
		started := r.now()
		got, err := r.e.queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(rt.DLQURL),
			MaxNumberOfMessages:         MaxBatch,
			VisibilityTimeout:           int32(math.Ceil(r.visibility.Seconds())),
			WaitTimeSeconds:             1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() != nil {
				rs.StopReason = StopCanceled
				return rs, nil
			}
			rs.StopReason, rs.Error = StopError, err.Error()
			return rs, fmt.Errorf("receive from %s: %w", rt.DLQURL, err)
		}
		if len(got.Messages) == 0 {
			return stop(StopDrained)
		}
		budget -= len(got.Messages)
		err = r.batch(ctx, p, got.Messages, started)
		r.longest = max(r.longest, r.now().Sub(started))
		r.progress(&rs)
		if err != nil {
			rs.StopReason, rs.Error = StopError, err.Error()
			return rs, err
		}
	}
}

// sourceMax returns the source queue's MaximumMessageSize, or SQS's maximum
// when it cannot be read (a replay too large for the queue then fails and
// is rescued before it expires).
func (r *run) sourceMax(ctx context.Context, rt Route) int {
	out, err := r.e.queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(rt.SourceURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMaximumMessageSize},
	})
	if err == nil {
		if n, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameMaximumMessageSize)]); err == nil && n > 0 {
			return n
		}
	}
	return envelope.MaxMessageBytes
}

func (r *run) healthGate(ctx context.Context) Gate {
	g := Gate{Name: GateHealth, Decision: GateOpen}
	switch {
	case r.e.opts.Health == nil:
		g.Decision, g.Detail = GateSkipped, "no health probe configured"
	default:
		if err := r.e.opts.Health(ctx); err != nil {
			g.Decision, g.Detail = GateClosed, err.Error()
		}
	}
	return g
}

// refillGate closes when the DLQ holds more than RefillThreshold messages
// more than the previous run left in it (its depth at the start, visible and
// in flight, minus what it moved).
func (r *run) refillGate(rs RouteSummary, prev *RouteSummary, prevErr error) Gate {
	g := Gate{Name: GateRefill, Decision: GateOpen}
	switch {
	case prevErr != nil:
		g.Decision, g.Detail = GateClosed, "previous run unknown: "+prevErr.Error()
	case prev == nil:
		g.Detail = "no previous run read this route"
	default:
		left := max(0, prev.Depth+prev.InFlight-prev.Replayed-prev.ParkedTotal()-prev.Recovered-prev.Applied)
		growth := rs.Depth + rs.InFlight - left
		g.Detail = fmt.Sprintf("DLQ grew by %d since the previous run (threshold %d)", growth, r.e.opts.RefillThreshold)
		if growth > r.e.opts.RefillThreshold {
			g.Decision = GateClosed
		}
	}
	return g
}

func (r *run) logGate(ctx context.Context, queue string, g Gate) {
	level := slog.LevelInfo
	if g.Decision == GateClosed || g.Decision == GateLimited {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("runId", r.id), slog.String("gate", g.Name), slog.String("decision", string(g.Decision)), slog.String("reason", g.Detail)}
	if queue != "" {
		attrs = append(attrs, slog.String("queue", queue))
	}
	r.e.opts.Logger.LogAttrs(ctx, level, "replay gate", attrs...)
}
