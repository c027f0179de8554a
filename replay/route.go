package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// pass is the state of one route in a run. The fields after the first
// group are shared by the route's workers, under the run's lock.
type pass struct {
	route     Route
	lane      lane          // the route's key and payload hash, compiled
	retention time.Duration // the DLQ's; 0 when unknown
	sourceMax int           // the source queue's MaximumMessageSize
	// returnBound is how long a failed replay takes to come back to the
	// DLQ (the source's maxReceiveCount × visibility timeout); zero when
	// unknown.
	returnBound time.Duration
	// unrecordedSince is the start of the first of the consecutive runs
	// that counted the route unrecorded before this one (zero: none).
	unrecordedSince time.Time

	rs         *RouteSummary
	gates      []gate       // the route's gates, in the order they decide
	replayLeft int          // replays the canary allows; -1 unlimited
	gated      bool         // a gate is closed: no replays, the rescue goes on
	budget     int          // messages left to receive in this pass
	received   int          // messages received in this pass
	active     int          // workers still receiving
	started    time.Time    // when the pass started
	trust      trust        // tells our metadata from a producer's
	deferred   []visibility // the first maxDeferred messages deferred (see deferred.go), released when the pass ends
	stopped    StopReason   // why the pass ended, once a worker ended it
	err        error        // the error that ended it
	// suspects are the latest replaying runs none of whose keys has
	// completed yet: a message one of them replayed seen back in the DLQ
	// trips the breaker.
	suspects []string
	// watched are the latest replaying runs, each with how many of its
	// replays the pass has seen back in the DLQ (see signal.go).
	watched []watched
	// unrecorded: the canary holds the route while none of the latest
	// replaying run's keys has completed.
	unrecorded bool
	// refill: the DLQ grew past RefillThreshold; the refill gate closes
	// once more than that many replays came back (see refillGate.watch).
	refill bool
	// judgeProbe: no pass had looked at the DLQ since the breaker's probe
	// late enough to tell; this one holds replays and judges the probe at
	// its end (dlqSignal.judge).
	judgeProbe bool
	// blind: the recent runs could not be read, so neither could the
	// breaker that gives failed replays back.
	blind bool
	// knownLimit: the canary limits the route on a run of known failures
	// alone, so they take its slots (see planner.slot).
	knownLimit bool
	// knownRuns are the recent runs that replayed known failures alone:
	// their replays back count as evidence (see backFrom).
	knownRuns []string
	keys      keySample // the replayed keys the next runs judge this one by
}

// end records why a worker ended the pass. The pass ends when its last
// worker does, so a later reason replaces an earlier one: the first error
// stands over everything, and "drained" replaces nothing (a worker that
// found the DLQ empty while the others went on to the cap or the deadline
// must not hide that the run left messages for a later one).
func (r *run) end(p *pass, reason StopReason, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case p.err != nil:
	case err != nil, p.stopped == "", reason != StopDrained:
		p.stopped = reason
		p.err = err
	}
}

// route serves one route: it reads the DLQ's attributes, evaluates the
// route's gates, and runs the workers until the pass ends.
func (r *run) route(ctx context.Context, rt Route, recent []Summary, prevErr error) (RouteSummary, error) {
	rs := RouteSummary{Route: rt.Name, FIFO: rt.FIFO(), Gates: []Gate{}, Counts: newCounts()}
	if reason := r.stop(ctx); reason != "" {
		rs.StopReason = reason
		return rs, nil
	}
	p, err := r.open(ctx, rt, &rs)
	if err != nil {
		rs.StopReason = StopError
		rs.Error = err.Error()
		return rs, err
	}
	r.gate(ctx, p, recent, prevErr)
	r.progress(&rs)

	var wg sync.WaitGroup
	p.active = r.e.opts.Workers
	for range r.e.opts.Workers {
		wg.Go(func() {
			r.work(ctx, p)
			r.mu.Lock()
			p.active--
			r.mu.Unlock()
		})
	}
	wg.Wait()
	// Release what the pass deferred, even when ctx has ended.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	r.changeVisibility(rctx, p, p.deferred, slog.LevelDebug)

	rs.StopReason = p.stopped
	if p.err != nil {
		rs.StopReason = StopError
		rs.Error = p.err.Error()
		return rs, p.err
	}
	if p.gated && (rs.StopReason == StopDrained || rs.StopReason == StopPass) {
		rs.StopReason = StopGate
	}
	for _, g := range p.gates {
		if e, ok := g.(ender); ok {
			e.end(ctx, p)
		}
	}
	sayBackClasses(&rs)
	return rs, nil
}

// sayBackClasses adds to the canary gate's detail, when the route's breaker
// is open, the failure classes of the replays the pass saw back.
func sayBackClasses(rs *RouteSummary) {
	i := slices.IndexFunc(rs.Gates, func(g Gate) bool { return g.Name == GateCanary })
	if i < 0 || rs.Breaker == nil || !rs.Breaker.Open || len(rs.BackClasses) == 0 {
		return
	}
	rs.Gates[i].Detail += "; back by failure class: " + topClasses(rs.BackClasses, 3)
}

// open starts the pass of route rt, summarized in rs: it compiles the
// route's expressions and reads its DLQ's attributes (retention, depth)
// and, beside them, its source queue's size limit.
func (r *run) open(ctx context.Context, rt Route, rs *RouteSummary) (*pass, error) {
	// Once per run, not per message (Request.Validate has compiled them
	// already: this cannot fail for a valid request).
	ln, err := rt.compile()
	if err != nil {
		return nil, err
	}
	type source struct {
		maxSize     int
		returnBound time.Duration
	}
	sourceCh := make(chan source, 1)
	go func() {
		var src source
		src.maxSize, src.returnBound = r.sourceAttrs(ctx, rt)
		sourceCh <- src
	}()
	out, err := r.e.queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(rt.DLQURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameMessageRetentionPeriod,
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	src := <-sourceCh
	if err != nil {
		return nil, fmt.Errorf("read attributes of %s: %w", rt.DLQURL, err)
	}
	attr := func(name types.QueueAttributeName) int {
		n, _ := strconv.Atoi(out.Attributes[string(name)])
		return n
	}
	rs.Depth = attr(types.QueueAttributeNameApproximateNumberOfMessages)
	rs.InFlight = attr(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	return &pass{
		route: rt, lane: ln, rs: rs, replayLeft: -1, sourceMax: src.maxSize, returnBound: src.returnBound, started: r.now(), trust: newTrust(r.key, rt),
		retention: time.Duration(attr(types.QueueAttributeNameMessageRetentionPeriod)) * time.Second,
		budget:    rs.Depth + maxBatch,
	}, nil
}

// gate builds the route's gates from the recent runs, evaluates them and
// sets the pass's limits. The refill gate compares with the latest run
// that read the route; the canary checks the keys of the latest runs that
// replayed on the route. Runs of other routes (an operator's replay from
// the parking queue), runs held before reading, and runs that replayed
// nothing are looked past.
func (r *run) gate(ctx context.Context, p *pass, recent []Summary, prevErr error) {
	rs, name := p.rs, p.route.Name
	p.blind = prevErr != nil
	read := routeRuns(recent, name, func(rs RouteSummary) bool { return len(rs.Gates) > 0 })
	replayed := routeRuns(recent, name, func(rs RouteSummary) bool { return len(rs.ReplayedKeys) > 0 })
	for _, h := range routeRuns(recent, name, func(rs RouteSummary) bool { return rs.Replayed > 0 && rs.Replayed <= rs.Retried }) {
		p.knownRuns = append(p.knownRuns, h.runID)
	}
	if b := routeRuns(recent, name, func(rs RouteSummary) bool { return rs.Breaker != nil }); len(b) > 0 {
		rs.Breaker = b[0].rs.Breaker.clone()
	}
	var last *RouteSummary
	if len(read) > 0 {
		last = read[0].rs
	}
	for _, h := range read {
		if h.rs.Unrecorded <= 0 {
			break
		}
		p.unrecordedSince = h.startedAt
	}
	p.watched = watchRuns(routeRuns(recent, name, func(rs RouteSummary) bool { return rs.Replayed > 0 }),
		routeRuns(recent, name, func(rs RouteSummary) bool { return len(rs.Returned) > 0 }))
	p.gates = []gate{
		refillGate{threshold: r.e.opts.RefillThreshold, prev: last, prevErr: prevErr},
		newCanaryGate(&r.e.opts, r.id, replayed, last, prevErr),
	}
	start := len(rs.Gates)
	for _, g := range p.gates {
		rs.Gates = append(rs.Gates, g.decide(ctx, p))
	}
	decided := rs.Gates[start:]
	for _, g := range decided {
		r.logGate(ctx, p.route.DLQURL, g)
	}
	if rs.closed(r.health) {
		// Gates hold replays, never the expiry rescue: the pass goes on
		// to park what is about to expire.
		p.gated = true
		p.replayLeft = 0
		return
	}
	for _, g := range decided {
		if g.Decision == GateLimited {
			p.replayLeft = g.Limit
		}
	}
}

// sourceAttrs returns the source queue's MaximumMessageSize, or SQS's
// maximum when it cannot be read (a replay too large for the queue then
// fails and is rescued before it expires), and the time a failed replay
// takes to come back to the DLQ: maxReceiveCount × its visibility timeout,
// zero when they cannot be read.
func (r *run) sourceAttrs(ctx context.Context, rt Route) (maxSize int, returnBound time.Duration) {
	maxSize = envelope.MaxMessageBytes
	out, err := r.e.queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(rt.SourceURL), AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameMaximumMessageSize, types.QueueAttributeNameVisibilityTimeout, types.QueueAttributeNameRedrivePolicy,
		},
	})
	if err != nil {
		return maxSize, 0
	}
	if n, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameMaximumMessageSize)]); err == nil && n > 0 {
		maxSize = n
	}
	var redrive struct {
		MaxReceiveCount json.Number `json:"maxReceiveCount"`
	}
	vis, verr := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)])
	if verr != nil || json.Unmarshal([]byte(out.Attributes[string(types.QueueAttributeNameRedrivePolicy)]), &redrive) != nil {
		return maxSize, 0
	}
	if n, err := redrive.MaxReceiveCount.Int64(); err == nil && n > 0 && vis > 0 && n <= 1000 {
		returnBound = time.Duration(n) * time.Duration(vis) * time.Second
	}
	return maxSize, returnBound
}
