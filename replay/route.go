package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// run is the state of one Run. Its routes are served one after the other;
// the workers of a route share the run's lock for what they share.
type run struct {
	e          *Engine
	req        Request
	id         string
	start      time.Time
	max        int
	rate       float64
	visibility time.Duration // the receive visibility timeout
	limiter    *limiter
	health     []Gate
	key        []byte // the seal key; nil when it could not be read (see seal.go)

	mu      sync.Mutex    // guards the fields below and the pass's shared state
	moved   int           // messages moved (or, in a dry run, that would be) or reserved so far
	longest time.Duration // the longest batch so far: the estimate of the next one
	seen    *seen
}

func (e *Engine) newRun(req Request) *run {
	r := &run{e: e, req: req, id: req.RunID, start: e.opts.Now(), max: req.Max, rate: req.Rate, longest: time.Second, seen: newSeen()}
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
	// Long enough to decide, and to wait for the rate limit of one batch
	// of every worker; outside lockstep a batch received ahead also waits
	// behind its worker's batch in hand, so twice that.
	ahead := 1
	if !e.opts.Lockstep {
		ahead = 2
	}
	r.visibility = e.opts.DecisionWindow + time.Duration(float64(ahead*e.opts.Workers*MaxBatch)/r.rate*float64(time.Second))
	return r
}

func (r *run) now() time.Time { return r.e.opts.Now() }

// stop says why the run must not start another batch, or "".
func (r *run) stop(ctx context.Context) StopReason {
	if ctx.Err() != nil {
		return StopCanceled
	}
	r.mu.Lock()
	moved, longest := r.moved, r.longest
	r.mu.Unlock()
	if moved >= r.max {
		return StopCap
	}
	if deadline, ok := ctx.Deadline(); ok {
		need := r.e.opts.DeadlineMargin + longest
		if !r.req.DryRun {
			need += r.limiter.delay()
		}
		if deadline.Sub(r.now()) < need {
			return StopDeadline
		}
	}
	return ""
}

// pass is the state of one route in a run. The fields after the first
// group are shared by the route's workers, under the run's lock.
type pass struct {
	route     Route
	lane      lane          // the route's key and payload hash, compiled
	retention time.Duration // the DLQ's; 0 when unknown
	sourceMax int           // the source queue's MaximumMessageSize

	rs         *RouteSummary
	replayLeft int          // replays the canary allows; -1 unlimited
	gated      bool         // a gate is closed: no replays, the rescue goes on
	budget     int          // messages left to receive in this pass
	received   int          // messages received in this pass
	active     int          // workers still receiving
	started    time.Time    // when the pass started
	trust      trust        // tells our metadata from a producer's
	held       []visibility // the first maxHeld messages held (see hold.go), released when the pass ends
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
	// Once per run, not per message (Request.Validate has compiled them
	// already: this cannot fail for a valid request).
	ln, err := rt.compile()
	if err != nil {
		rs.StopReason = StopError
		rs.Error = err.Error()
		return rs, err
	}
	// The source queue's size limit is read beside the DLQ's attributes.
	sourceMax := make(chan int, 1)
	go func() { sourceMax <- r.sourceMax(ctx, rt) }()
	out, err := r.e.queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(rt.DLQURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameMessageRetentionPeriod,
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	maxSize := <-sourceMax
	if err != nil {
		rs.StopReason = StopError
		rs.Error = err.Error()
		return rs, fmt.Errorf("read attributes of %s: %w", rt.DLQURL, err)
	}
	attr := func(name types.QueueAttributeName) int {
		n, _ := strconv.Atoi(out.Attributes[string(name)])
		return n
	}
	rs.Depth = attr(types.QueueAttributeNameApproximateNumberOfMessages)
	rs.InFlight = attr(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	p := &pass{
		route: rt, lane: ln, rs: &rs, replayLeft: -1, sourceMax: maxSize, started: r.now(), trust: newTrust(r.key, rt),
		retention: time.Duration(attr(types.QueueAttributeNameMessageRetentionPeriod)) * time.Second,
		budget:    rs.Depth + MaxBatch,
	}

	// The refill gate compares with the latest run that read this route's
	// DLQ; the canary checks the keys of the latest runs that replayed
	// on it. Runs of other routes (an operator's replay from the parking
	// queue), runs held before reading, and runs that replayed nothing are
	// looked past.
	read := routeRuns(recent, rt.Name, func(rs RouteSummary) bool { return len(rs.Gates) > 0 })
	replayed := routeRuns(recent, rt.Name, func(rs RouteSummary) bool { return len(rs.ReplayedKeys) > 0 })
	if b := routeRuns(recent, rt.Name, func(rs RouteSummary) bool { return rs.Breaker != nil }); len(b) > 0 {
		rs.Breaker = b[0].rs.Breaker.clone()
	}
	var last *RouteSummary
	if len(read) > 0 {
		last = read[0].rs
	}
	p.watched = watchRuns(routeRuns(recent, rt.Name, func(rs RouteSummary) bool { return rs.Replayed > 0 }),
		routeRuns(recent, rt.Name, func(rs RouteSummary) bool { return len(rs.Returned) > 0 }))
	refill, canary := r.refillGate(rs, last, prevErr), r.canaryGate(ctx, p, replayed, last, prevErr)
	rs.Gates = append(rs.Gates, refill, canary)
	r.logGate(ctx, rt.DLQURL, refill)
	r.logGate(ctx, rt.DLQURL, canary)
	if rs.closed(r.health) {
		// Gates hold replays, never the expiry rescue: the pass goes on
		// to park what is about to expire.
		p.gated = true
		p.replayLeft = 0
	} else if canary.Decision == GateLimited {
		p.replayLeft = canary.Limit
	}
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
	// Release what the pass held, even when ctx has ended.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r.changeVisibility(rctx, p, p.held, slog.LevelDebug)

	rs.StopReason = p.stopped
	if p.err != nil {
		rs.StopReason = StopError
		rs.Error = p.err.Error()
		return rs, p.err
	}
	if p.gated && (rs.StopReason == StopDrained || rs.StopReason == StopPass) {
		rs.StopReason = StopGate
	}
	r.noteUnrecorded(ctx, p, last)
	return rs, nil
}

// work is one worker of a route: it receives a batch, plans it, claims it,
// sends it, and finishes it, until the pass ends. On a standard route,
// unless Options.Lockstep, the worker pipelines: the finish of a batch
// (its deletes) runs beside the next one's receive and claim, its final
// records go to the ledger with the next one's INTENT records, in one
// call, and the next receive goes out beside this batch's send (one batch
// ahead per worker, taken by the worker that sent it out). A batch ahead
// is examined only if the run would start a batch when it arrives (cap,
// deadline, pass budget, a stop); otherwise it is held, untouched, and
// released when the pass ends, like the other messages left for a later
// run.
func (r *run) work(ctx context.Context, p *pass) {
	overlap := !r.e.opts.Lockstep && !p.route.FIFO()
	var pending chan struct{} // the previous batch's finish, running
	join := func() {
		if pending != nil {
			<-pending
			pending = nil
		}
	}
	var carried *carry      // the previous batch's final records, for the next claim
	var ahead chan received // the next batch's receive, running
	defer func() {
		if ahead != nil {
			r.holdAll(ctx, p, <-ahead)
		}
		if carried != nil {
			carried.flush(ctx, r)
		}
		join()
	}()
	var wait int32 // a short poll, as long as messages come
	for {
		var got received
		if ahead != nil {
			got = <-ahead
			ahead = nil
			if reason := r.next(ctx, p); reason != "" {
				// Received ahead, but the run would not have started this
				// batch now: it goes back untouched, and the pass ends for
				// the reason it would have ended (not "drained" because the
				// receive ahead came back empty).
				r.holdAll(ctx, p, got)
				r.end(p, reason, nil)
				return
			}
		} else {
			if reason := r.next(ctx, p); reason != "" {
				r.end(p, reason, nil)
				return
			}
			got = r.receive(ctx, p, wait)
		}
		switch {
		case got.err != nil && ctx.Err() != nil:
			r.end(p, StopCanceled, nil)
			return
		case got.err != nil:
			r.end(p, StopError, fmt.Errorf("receive from %s: %w", p.route.DLQURL, got.err))
			return
		case len(got.msgs) == 0 && wait == 0 && r.short(p):
			// A short poll samples some of SQS's servers: with fewer
			// messages received than the DLQ held, a long poll makes sure.
			wait = 1
			continue
		case len(got.msgs) == 0:
			r.end(p, StopDrained, nil)
			return
		}
		wait = 0
		at := got.at
		b := r.prepare(ctx, p, got.msgs, at)
		got = received{} // the batch holds what it needs: the raw messages may go
		if b == nil {
			continue
		}
		r.claim(ctx, p, b, carried)
		carried = nil
		join()
		if overlap && r.next(ctx, p) == "" {
			// The next receive goes out now: by the time this batch is
			// sent it is in, and this worker's next batch costs its path
			// the claim and the send, not the receive too.
			ahead = make(chan received, 1)
			go func(next chan<- received) { next <- r.receive(ctx, p, 0) }(ahead)
		}
		if !r.req.DryRun {
			r.send(ctx, p, b)
		}
		if overlap {
			var c *carry
			if !r.req.DryRun {
				c = r.carryOf(p, b)
				carried = c
			}
			pending = make(chan struct{})
			go func(done chan<- struct{}) {
				defer close(done)
				r.finish(ctx, p, b, c)
				r.took(at)
			}(pending)
			continue
		}
		r.finish(ctx, p, b, nil)
		r.took(at)
	}
}

// received is the answer to one receive.
type received struct {
	msgs []types.Message
	at   time.Time // when the receive went out
	err  error
}

// receive receives a batch from the route's DLQ, long-polling wait seconds.
func (r *run) receive(ctx context.Context, p *pass, wait int32) received {
	at := r.now()
	out, err := r.e.queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(p.route.DLQURL),
		MaxNumberOfMessages:         MaxBatch,
		VisibilityTimeout:           int32(math.Ceil(r.visibility.Seconds())),
		WaitTimeSeconds:             wait,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return received{at: at, err: err}
	}
	r.mu.Lock()
	p.received += len(out.Messages)
	r.mu.Unlock()
	return received{msgs: out.Messages, at: at}
}

// next says why the worker must not start another batch, or "".
func (r *run) next(ctx context.Context, p *pass) StopReason {
	r.mu.Lock()
	stopped, budget := p.stopped != "" && p.err != nil, p.budget
	r.mu.Unlock()
	switch {
	case stopped:
		return StopError
	case budget <= 0:
		return StopPass
	}
	return r.stop(ctx)
}

// short reports whether the pass has received fewer messages than the DLQ
// held when it started and the asking worker is the last one receiving
// (the others would receive what is left).
func (r *run) short(p *pass) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return p.received < p.rs.Depth && p.active <= 1
}

// took notes how long a batch took, from its receive to its end.
func (r *run) took(started time.Time) {
	d := r.now().Sub(started)
	r.mu.Lock()
	r.longest = max(r.longest, d)
	r.mu.Unlock()
}

// prepare reads a received batch and plans it under the run's lock: the
// cap and the canary limit are the run's, shared by the workers. A message
// examined before in this run (it reappeared after its decision window) is
// not examined again: it is held until the pass ends, like the others left
// for a later run, so the next run finds it visible. It returns nil when
// nothing is left to examine.
func (r *run) prepare(ctx context.Context, p *pass, msgs []types.Message, receivedAt time.Time) *batch {
	now := r.now()
	items := make([]*item, 0, len(msgs))
	var again []types.Message
	r.mu.Lock()
	p.budget -= len(msgs)
	for _, m := range msgs {
		if r.seen.add(aws.ToString(m.MessageId)) {
			again = append(again, m)
			continue
		}
		items = append(items, &item{msg: readMessage(m, now, p.trust, p.lane.key)})
	}
	early := r.holdMessages(ctx, p, again, receivedAt)
	var b *batch
	if len(items) > 0 {
		r.watch(ctx, p, items, now)
		pl := &planner{
			policy: r.e.opts.Policy, route: p.route, runID: r.id, now: now, receivedAt: receivedAt,
			retention: p.retention, sourceMax: p.sourceMax, filter: r.req.Filter, reset: r.req.ResetCount,
			gated: p.gated, breaker: p.rs.Breaker, key: r.key, movesLeft: r.max - r.moved, replayLeft: p.replayLeft,
		}
		b = &batch{items: items, receivedAt: receivedAt, plan: pl}
		b.moves, b.replays = pl.plan(items)
		for _, it := range items {
			it.msg.producer = nil // the plan built what is sent: a batch on its way holds no copy
		}
		r.moved += b.moves
		p.replayLeft = pl.replayLeft
	}
	r.mu.Unlock()
	r.changeVisibility(ctx, p, early, slog.LevelDebug)
	return b
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
