package replay

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Engine runs replays. It is safe for concurrent use when its ports are;
// concurrent runs share nothing else.
type Engine struct {
	queue  Queue
	ledger Ledger
	opts   Options

	keyMu sync.Mutex
	keys  *sealKeys // once read (see seal.go)
}

// sealKeys are the engine's seal keys and what its runs cannot do with
// them ("" when they can do all).
type sealKeys struct {
	sealer sealer
	note   string
}

// New returns an Engine on the queues of q and the ledger l.
func New(q Queue, l Ledger, opts Options) *Engine {
	return &Engine{queue: q, ledger: l, opts: opts.withDefaults()}
}

// sealKeys returns the seal keys, read from the ledger once per engine
// (again while the public key could not be written).
func (e *Engine) sealKeys(ctx context.Context) (sealKeys, error) {
	e.keyMu.Lock()
	defer e.keyMu.Unlock()
	if e.keys != nil {
		return *e.keys, nil
	}
	s, note, err := readSealer(ctx, e.ledger, e.opts.Now())
	if err != nil {
		return sealKeys{}, err
	}
	keys := sealKeys{sealer: s, note: note}
	if s.priv == nil || note == "" {
		e.keys = &keys
	}
	return keys, nil
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
	if len(req.Filter.ErrorClasses) > 0 && e.opts.Failures == nil {
		return Summary{}, fmt.Errorf("%w: filter errorClasses: the engine reads no failure records (Options.Failures)", ErrInvalidRequest)
	}
	r := e.newRun(req)
	sum, recent, prevErr := r.begin(ctx)
	var errs []error
	if prevErr != nil {
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
	sum.bound()
	sum.FinishedAt = e.opts.Now()
	sum.DurationMS = sum.FinishedAt.Sub(sum.StartedAt).Milliseconds()
	if !req.DryRun {
		errs = append(errs, e.record(ctx, sum)...)
	}
	err := errors.Join(errs...)
	logSummary(ctx, e.opts.Logger, sum, err)
	return sum, err
}

// begin starts the run's summary with the run's gates (health, and seal
// when closed or when it has a note) and reads the recent runs the routes'
// gates compare with, the three at once; prevErr is why the recent runs
// could not be read.
func (r *run) begin(ctx context.Context) (sum Summary, recent []Summary, prevErr error) {
	type runs struct {
		recent []Summary
		err    error
	}
	read := make(chan runs, 1)
	go func() {
		recent, err := r.e.ledger.Runs(ctx, gateHistory)
		read <- runs{recent, err}
	}()
	seal := &sealGate{e: r.e}
	sealed := make(chan Gate, 1)
	go func() { sealed <- seal.decide(ctx, nil) }()
	sum = Summary{
		RunID: r.id, DryRun: r.req.DryRun, StartedAt: r.start, Max: r.max, Rate: r.rate,
		Gates: []Gate{healthGate{probe: r.e.opts.Health}.decide(ctx, nil)}, Routes: []RouteSummary{}, Total: newCounts(),
	}
	g := <-sealed
	r.key = seal.key
	if g.Decision == GateClosed || g.Detail != "" {
		sum.Gates = append(sum.Gates, g)
		r.logGate(ctx, "", g)
	}
	if !r.req.Filter.empty() {
		f := r.req.Filter
		sum.Filter = &f
	}
	r.health = sum.Gates
	r.logGate(ctx, "", sum.Gates[0])
	got := <-read
	if got.err != nil {
		return sum, got.recent, fmt.Errorf("read the recent runs from the ledger: %w", got.err)
	}
	return sum, got.recent, nil
}

// record writes the run's summary to the ledger and its metrics. The
// summary is written even when ctx has ended: the next run's gates depend
// on it.
func (e *Engine) record(ctx context.Context, sum Summary) []error {
	var errs []error
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := e.ledger.PutRun(wctx, sum, sum.StartedAt.Add(e.opts.RecordLifetime)); err != nil {
		errs = append(errs, fmt.Errorf("write run %s to the ledger: %w", sum.RunID, err))
	}
	if e.opts.Metrics != nil {
		if err := writeEMF(e.opts.Metrics, e.opts.Namespace, e.opts.Lane, sum); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
