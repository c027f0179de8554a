package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
)

// Handler processes one record. It returns nil on success, an error with an
// Invalid() (reason, detail string) method when the record will never be
// valid, and any other error when it may succeed later. It must honour ctx.
type Handler func(ctx context.Context, msg events.SQSMessage) error

// Rejection says why a record goes to the invalid channel.
type Rejection struct {
	Reason string // stable, machine-readable code, e.g. "missing-field"
	Detail string // one human sentence
}

// Reject returns the error a [Handler] returns for a record that will never
// be valid: the processor sends the record to the invalid channel with reason
// and detail, and acknowledges it.
func Reject(reason, detail string) error { return Rejection{Reason: reason, Detail: detail} }

// Error says "invalid: reason: detail".
func (r Rejection) Error() string { return "invalid: " + r.Reason + ": " + r.Detail }

// Invalid returns the reason and the detail.
func (r Rejection) Invalid() (reason, detail string) { return r.Reason, r.Detail }

// InvalidChannel receives the records that will never be valid. Publish must
// return an error unless the record is durably stored. [InvalidQueue]
// implements it on SQS, batchtest.InvalidChannel in memory.
type InvalidChannel interface {
	Publish(ctx context.Context, msg events.SQSMessage, r Rejection) error
}

// Outcome is what happened to one record; it is logged with the key "outcome".
type Outcome string

// The outcomes of a record.
const (
	Succeeded  Outcome = "succeeded"   // the handler returned nil
	Invalid    Outcome = "invalid"     // published to the invalid channel and acknowledged
	Failed     Outcome = "failed"      // transient failure: delivered again by SQS
	Panicked   Outcome = "panicked"    // the handler panicked: delivered again by SQS
	NotStarted Outcome = "not-started" // too little time left in the invocation
	Blocked    Outcome = "blocked"     // FIFO: an earlier record of its group failed
	Parked     Outcome = "parked"      // FIFO with Groups: sent to the parking queue with its group and acknowledged
)

// acknowledged reports whether the record leaves the source queue: anything
// else is a batch item failure, delivered again by SQS.
func (o Outcome) acknowledged() bool {
	return o == Succeeded || o == Invalid || o == Parked
}

// Defaults of [Options]: the consumer function's, as package settings
// declares them (CONCURRENCY, DEADLINE_MARGIN).
const (
	defaultConcurrency    = settings.DefaultConcurrency
	defaultDeadlineMargin = settings.DefaultConsumerDeadlineMargin
)

// Options tune a [Processor]. The zero value is usable.
type Options struct {
	// Concurrency bounds the records (standard queues) or message groups
	// (FIFO queues) processed at once. Default 10.
	Concurrency int
	// DeadlineMargin: no record starts when the invocation has less than
	// this left. Default 2s.
	DeadlineMargin time.Duration
	// Logger receives one line per record. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// OnOutcome, when set, is called once per record when its outcome is
	// decided, with the ctx of Process and, for an Invalid record, its
	// reason, for a batch item failure its failure class ("" otherwise);
	// for metrics (emf.CountOutcome). It is called concurrently from the
	// records' goroutines and must return quickly.
	OnOutcome func(ctx context.Context, o Outcome, reason string)
	// Groups, on a FIFO source, keeps each message group in publication
	// order through any failure of that group (package fifo): a record
	// that fails waits in the source for a backoff, its group behind it,
	// and a record that can never succeed parks its group. Nil: a FIFO
	// batch keeps order within itself only (Blocked). New panics when
	// Groups does not validate.
	Groups *fifo.Keeper
	// Failures, when set, records why messages fail: one [Failure] per
	// failed message, written after the batch ran, at its delivery number
	// MaxReceiveCount (every failed delivery when MaxReceiveCount is 0).
	Failures FailureLog
	// MaxReceiveCount is the source queue's redrive maxReceiveCount
	// (MAX_RECEIVE_COUNT); 0 unknown.
	MaxReceiveCount int
}

// Processor runs a [Handler] over SQS batches. It is safe for concurrent use.
type Processor struct {
	handle  Handler
	invalid InvalidChannel
	opts    Options
}

// New returns a Processor that sends invalid records to invalid.
//
// New panics when h or invalid is nil (invalid a nil interface or a nil
// *InvalidQueue), with the message "batch: New: nil Handler" or "batch:
// New: nil InvalidChannel": either would fail every record it was given,
// so the mistake stops the cold start instead. The zero fields of opts take
// their defaults.
func New(h Handler, invalid InvalidChannel, opts Options) *Processor {
	if h == nil {
		panic("batch: New: nil Handler")
	}
	if q, ok := invalid.(*InvalidQueue); invalid == nil || ok && q == nil {
		panic("batch: New: nil InvalidChannel")
	}
	if opts.Groups != nil {
		if err := opts.Groups.Validate(); err != nil {
			panic("batch: New: Groups: " + err.Error())
		}
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = defaultConcurrency
	}
	if opts.DeadlineMargin <= 0 {
		opts.DeadlineMargin = defaultDeadlineMargin
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Processor{handle: h, invalid: invalid, opts: opts}
}

// Process handles every record of ev and returns the partial batch failures.
// It never returns an error: a failure of one record is reported for that
// record only. Its signature is the one lambda.Start expects for SQS.
func (p *Processor) Process(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	outcomes := make([]Outcome, len(ev.Records))
	failed := &failureSet{byID: map[string]Failure{}}
	ctx = context.WithValue(ctx, failureSetKey{}, failed)
	units := p.units(ev.Records)
	parks, perr := p.readParks(ctx, ev.Records)
	if len(units) == 1 || p.opts.Concurrency == 1 {
		for _, u := range units {
			p.runUnit(ctx, ev.Records, u, outcomes, parks, perr)
		}
	} else {
		var wg sync.WaitGroup
		sem := make(chan struct{}, p.opts.Concurrency)
		for _, u := range units {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				p.runUnit(ctx, ev.Records, u, outcomes, parks, perr)
			})
		}
		wg.Wait()
	}
	p.writeFailures(ctx, ev.Records, failed)
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, o := range outcomes {
		if !o.acknowledged() {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp, nil
}

// units splits the records into the groups that must run in order: one
// record each for standard queues, one message group each for FIFO queues.
func (p *Processor) units(records []events.SQSMessage) [][]int {
	var units [][]int
	groups := map[string]int{}
	for i, r := range records {
		if !settings.IsFIFO(r.EventSourceARN) {
			units = append(units, []int{i})
			continue
		}
		g := r.Attributes["MessageGroupId"]
		u, ok := groups[g]
		if !ok {
			u = len(units)
			groups[g] = u
			units = append(units, nil)
		}
		units[u] = append(units[u], i)
	}
	return units
}

func (p *Processor) runUnit(ctx context.Context, records []events.SQSMessage, unit []int, outcomes []Outcome, parks map[string]fifo.Park, perr error) {
	first := records[unit[0]]
	if p.opts.Groups != nil && settings.IsFIFO(first.EventSourceARN) {
		p.newGroupRun(first, parks, perr).run(ctx, records, unit, outcomes)
		return
	}
	blocked := false
	for _, i := range unit {
		msg := records[i]
		reason := ""
		switch {
		case blocked:
			outcomes[i] = Blocked
			p.log(ctx, msg, Blocked, nil, nil, slog.String("reason", "earlier record of the message group failed"))
		case p.tooLate(ctx):
			outcomes[i] = NotStarted
			p.log(ctx, msg, NotStarted, nil, nil, slog.String("reason", "invocation deadline too close"))
		default:
			outcomes[i], reason = p.runRecord(ctx, msg)
		}
		if !outcomes[i].acknowledged() {
			reason = classOf(ctx, msg)
		}
		if p.opts.OnOutcome != nil {
			p.opts.OnOutcome(ctx, outcomes[i], reason)
		}
		if !outcomes[i].acknowledged() {
			blocked = true
		}
	}
}

func (p *Processor) tooLate(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && deadline.Sub(p.opts.Now()) < p.opts.DeadlineMargin
}

// runRecord runs the handler on msg; reason is the rejection's when the
// outcome is Invalid.
func (p *Processor) runRecord(ctx context.Context, msg events.SQSMessage) (o Outcome, reason string) {
	notes := &annotations{}
	rctx := context.WithValue(ctx, annotationsKey{}, notes)
	start := p.opts.Now()
	stack, err := p.call(rctx, msg)
	elapsed := slog.Duration("elapsed", p.opts.Now().Sub(start))
	switch {
	case err == nil:
		p.log(ctx, msg, Succeeded, notes, nil, elapsed)
		return Succeeded, ""
	case stack != nil:
		p.log(ctx, msg, Panicked, notes, err, elapsed, slog.String("stack", string(stack)))
		return Panicked, ""
	}
	var inv invalider
	if !errors.As(err, &inv) {
		p.log(ctx, msg, Failed, notes, err, elapsed)
		return Failed, ""
	}
	reason, detail := inv.Invalid()
	rej := Rejection{Reason: reason, Detail: detail}
	if perr := p.invalid.Publish(ctx, msg, rej); perr != nil {
		p.log(ctx, msg, Failed, notes, fmt.Errorf("publish to the invalid channel: %w", perr), elapsed, slog.String("reason", reason))
		return Failed, ""
	}
	p.log(ctx, msg, Invalid, notes, nil, elapsed, slog.String("reason", reason), slog.String("detail", detail))
	return Invalid, reason
}

// call runs the handler and turns a panic into an error with its stack.
func (p *Processor) call(ctx context.Context, msg events.SQSMessage) (stack []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack, err = debug.Stack(), fmt.Errorf("panic: %v", v)
		}
	}()
	return nil, p.handle(ctx, msg)
}

func (p *Processor) log(ctx context.Context, msg events.SQSMessage, o Outcome, notes *annotations, err error, extra ...slog.Attr) {
	level := slog.LevelInfo
	switch o {
	case Failed, NotStarted, Blocked:
		level = slog.LevelWarn
	case Panicked:
		level = slog.LevelError
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("messageId", msg.MessageId), slog.String("queue", msg.EventSourceARN), slog.String("outcome", string(o)))
	if notes != nil {
		attrs = append(attrs, notes.attrs...)
	}
	attrs = append(attrs, extra...)
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	p.opts.Logger.LogAttrs(ctx, level, "record", attrs...)
	p.note(ctx, msg, o, err)
}

type invalider interface {
	Invalid() (reason, detail string)
}

type annotationsKey struct{}

type annotations struct{ attrs []slog.Attr }

// Annotate adds attributes (for example slog.String("shipmentId", id)) to the
// log line the Processor writes for the record being handled in ctx. It is a
// no-op outside a Processor. A handler calls it from its own goroutine only.
func Annotate(ctx context.Context, attrs ...slog.Attr) {
	if a, ok := ctx.Value(annotationsKey{}).(*annotations); ok {
		a.attrs = append(a.attrs, attrs...)
	}
}
