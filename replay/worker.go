package replay

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/settings"
)

// A worker takes a batch through the phases, one file each, in this order:
// receive (here), plan (plan.go), claim (claim.go), send (send.go), finish
// (finish.go) and account (account.go). Each phase takes one round trip
// per batch: the ledger marks of a batch go out together in one call, the
// queue calls carry up to 10 messages each.

// worker is one receive loop of a route's pass. On a standard route,
// unless Options.Lockstep, it pipelines: the finish of a batch (its
// deletes) runs beside the next one's receive and claim, its final records
// go to the ledger with the next one's INTENT records, in one call, and the
// next receive goes out beside this batch's send (one batch ahead per
// worker, taken by the worker that sent it out). A batch ahead is examined
// only if the run would start a batch when it arrives (cap, deadline, pass
// budget, a stop); otherwise it is deferred, untouched, and released when the
// pass ends, like the other messages left for a later run.
type worker struct {
	r       *run
	p       *pass
	overlap bool
	wait    int32         // the next receive's long poll: 0 as long as messages come
	ahead   chan received // the next batch's receive, running
	finals  *finals       // the previous batch's final records, for the next claim
	pending chan struct{} // the previous batch's finish, running
}

// work runs one worker until the pass ends.
func (r *run) work(ctx context.Context, p *pass) {
	w := &worker{r: r, p: p, overlap: !r.e.opts.Lockstep && !p.route.FIFO()}
	defer w.stop(ctx)
	for {
		got, ok := w.receive(ctx)
		if !ok {
			return
		}
		at := got.at
		b := w.prepare(ctx, got.msgs, at)
		got = received{} // the batch holds what it needs: the raw messages may go
		if b != nil {
			w.move(ctx, b, at)
		}
	}
}

// receive returns the next batch to examine: the batch ahead, or a
// receive. It returns false when the pass ends, having recorded why.
func (w *worker) receive(ctx context.Context) (received, bool) {
	r, p := w.r, w.p
	for {
		var got received
		if w.ahead != nil {
			got = <-w.ahead
			w.ahead = nil
			if reason := w.next(ctx); reason != "" {
				// Received ahead, but the run would not have started this
				// batch now: it goes back untouched, and the pass ends for
				// the reason it would have ended (not "drained" because the
				// receive ahead came back empty).
				w.deferAhead(ctx, got)
				r.end(p, reason, nil)
				return received{}, false
			}
		} else {
			if reason := w.next(ctx); reason != "" {
				r.end(p, reason, nil)
				return received{}, false
			}
			got = w.poll(ctx, w.wait)
		}
		switch {
		case got.err != nil && ctx.Err() != nil:
			r.end(p, StopCanceled, nil)
			return received{}, false
		case got.err != nil:
			r.end(p, StopError, fmt.Errorf("receive from %s: %w", p.route.DLQURL, got.err))
			return received{}, false
		case len(got.msgs) == 0 && w.wait == 0 && w.mayHaveMore():
			// A short poll samples some of SQS's servers: with fewer
			// messages received than the DLQ held, a long poll makes sure.
			w.wait = 1
		case len(got.msgs) == 0:
			r.end(p, StopDrained, nil)
			return received{}, false
		default:
			w.wait = 0
			return got, true
		}
	}
}

// move takes a planned batch received at at through its claim, its send
// and its finish (beside the next batch, when pipelining).
func (w *worker) move(ctx context.Context, b *batch, at time.Time) {
	r := w.r
	w.claim(ctx, b, w.finals)
	w.finals = nil
	w.join()
	if w.overlap && w.next(ctx) == "" {
		// The next receive goes out now: by the time this batch is sent
		// it is in, and this worker's next batch costs its path the claim
		// and the send, not the receive too.
		w.ahead = make(chan received, 1)
		go func(next chan<- received) { next <- w.poll(ctx, 0) }(w.ahead)
	}
	if !r.req.DryRun {
		w.send(ctx, b)
	}
	if !w.overlap {
		w.finish(ctx, b, nil)
		w.noteBatchTime(at)
		return
	}
	var c *finals
	if !r.req.DryRun {
		c = w.finalsOf(b)
		w.finals = c
	}
	w.pending = make(chan struct{})
	go func(done chan<- struct{}) {
		defer close(done)
		w.finish(ctx, b, c)
		w.noteBatchTime(at)
	}(w.pending)
}

// join waits for the previous batch's finish.
func (w *worker) join() {
	if w.pending != nil {
		<-w.pending
		w.pending = nil
	}
}

// stop ends the worker: it defers a batch received ahead, writes the final
// records no claim carried, and waits for the last finish.
func (w *worker) stop(ctx context.Context) {
	if w.ahead != nil {
		w.deferAhead(ctx, <-w.ahead)
	}
	if w.finals != nil {
		w.finals.flush(ctx, w.r)
	}
	w.join()
}

// received is the answer to one receive.
type received struct {
	msgs []types.Message
	at   time.Time // when the receive went out
	err  error
}

// poll receives a batch from the route's DLQ, long-polling wait seconds.
func (w *worker) poll(ctx context.Context, wait int32) received {
	r, p := w.r, w.p
	at := r.now()
	out, err := r.e.queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(p.route.DLQURL),
		MaxNumberOfMessages:         maxBatch,
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
func (w *worker) next(ctx context.Context) StopReason {
	r, p := w.r, w.p
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

// mayHaveMore reports whether the pass has received fewer messages than the
// DLQ held when it started and the asking worker is the last one receiving
// (the others would receive what is left).
func (w *worker) mayHaveMore() bool {
	r, p := w.r, w.p
	r.mu.Lock()
	defer r.mu.Unlock()
	return p.received < p.rs.Depth && p.active <= 1
}

// noteBatchTime notes how long a batch took, from its receive to its end.
func (w *worker) noteBatchTime(started time.Time) {
	r := w.r
	d := r.now().Sub(started)
	r.mu.Lock()
	r.longest = max(r.longest, d)
	r.mu.Unlock()
}

// prepare reads a received batch and plans it under the run's lock: the
// cap and the canary limit are the run's, shared by the workers. A message
// examined before in this run (it reappeared after its decision window) is
// not examined again: it is deferred until the pass ends, like the others left
// for a later run, so the next run finds it visible. It returns nil when
// nothing is left to examine.
func (w *worker) prepare(ctx context.Context, msgs []types.Message, receivedAt time.Time) *batch {
	r, p := w.r, w.p
	now := r.now()
	read := make([]message, len(msgs))
	for i, m := range msgs {
		read[i] = readMessage(m, now, p.trust, p.lane.key)
	}
	if err := w.classify(ctx, read); err != nil {
		// A run filtered by class cannot tell which messages it selects:
		// it stops with the error and leaves the batch to a later run.
		r.end(p, StopError, err)
		r.mu.Lock()
		early := w.deferMessages(ctx, msgs, receivedAt)
		r.mu.Unlock()
		r.changeVisibility(ctx, p, early, slog.LevelDebug)
		return nil
	}
	items := make([]*item, 0, len(msgs))
	var again []types.Message
	r.mu.Lock()
	p.budget -= len(msgs)
	for i, m := range msgs {
		if r.seen.add(aws.ToString(m.MessageId)) {
			again = append(again, m)
			continue
		}
		items = append(items, &item{msg: read[i]})
	}
	early := w.deferMessages(ctx, again, receivedAt)
	var b *batch
	if len(items) > 0 {
		r.watch(ctx, p, items, now)
		pl := &planner{
			policy: r.e.opts.Policy, route: p.route, runID: r.id, now: now, receivedAt: receivedAt,
			retention: p.retention, sourceMax: p.sourceMax, filter: r.req.Filter, reset: r.req.ResetCount,
			gated: p.gated, breaker: p.rs.Breaker, key: r.key, movesLeft: r.max - r.moved, replayLeft: p.replayLeft,
			probe: p.rs.Probe, knownLimit: p.knownLimit, refill: p.refill, blind: p.blind,
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

// classUnknown is the failure class of a message the consumer recorded no
// failure of.
const classUnknown = settings.FailureClassUnknown

// classify sets the failure class of each message, when the run needs
// them: every message's for a filter by class, else those of the engine's
// replays that came back. The class is the record's of the message's own id
// (its latest round: the DLQ keeps the id), else of the original id its
// verified metadata names (its first round: a parked message's), else
// classUnknown; dlq reads them by the same rule. One read per batch. A read
// that fails is an error for a filter by class, else a warning: the
// messages have no class.
func (w *worker) classify(ctx context.Context, msgs []message) error {
	r := w.r
	if r.e.opts.Failures == nil {
		return nil
	}
	all := len(r.req.Filter.ErrorClasses) > 0
	var ids []string
	for _, m := range msgs {
		if all || m.hasMeta && m.meta.Reason == "" {
			ids = append(ids, m.id)
			if m.hasMeta && m.meta.OriginalMessageID != m.id {
				ids = append(ids, m.meta.OriginalMessageID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	got, err := r.e.opts.Failures(ctx, ids)
	switch {
	case err != nil && all:
		return fmt.Errorf("read the failure records of a run filtered by error class: %w", err)
	case err != nil:
		r.e.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "replay failure records", slog.String("runId", r.id), slog.String("error", err.Error()))
		return nil
	}
	for i := range msgs {
		m := &msgs[i]
		if !all && !(m.hasMeta && m.meta.Reason == "") {
			continue
		}
		m.class = classUnknown
		for _, id := range []string{m.id, m.meta.OriginalMessageID} {
			if c := got[id]; id != "" && settings.ValidFailureClass(c) {
				m.class = c
				break
			}
		}
	}
	return nil
}
