package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/homingdlq/homing/internal/record"
)

// finishTimeout bounds the ledger marks and the delete that follow a send,
// which run even when the run's context is done.
const finishTimeout = 5 * time.Second

// finish settles a sent batch: it writes the SENT, PARKED and RESOLVED
// records over the run's INTENT ones and the SEEN records of what stays,
// and deletes from the DLQ what left it, the three at once (a record that
// fails is a warning; a delete that fails leaves the record for the next
// run to recover; a delete before its record is written and a crash leave
// the message gone with its INTENT, the audit of a move that happened).
// In lockstep the records go first and the deletes after them. Then it
// hides the delayed messages and defers the ones left for a later run. It
// runs to the end even when ctx is done: what was sent must be recorded and
// deleted, or the next run finds an expired INTENT and sends it again.
func (w *worker) finish(ctx context.Context, b *batch, c *finals) {
	r := w.r
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	var deleted map[string]error // the deletes that failed
	if !r.req.DryRun {
		var wg sync.WaitGroup
		remove := func() { deleted = w.remove(fctx, b) }
		together := !r.e.opts.Lockstep
		if together {
			wg.Go(remove)
		}
		wg.Go(func() { w.markSeen(fctx, b) })
		if c == nil {
			w.settle(fctx, b)
		}
		wg.Wait()
		if c != nil {
			c.apply(r, <-c.written) // written by the next batch's claim, or flushed
		}
		if !together {
			remove()
		}
		w.removed(b, deleted)
	}
	w.forget(b, deleted)
	w.release(ctx, b)
	w.account(b)
	w.logItems(ctx, b)
}

// markSeen writes the SEEN records of the messages that stay in the DLQ and
// were not claimed: a message is seen for the first time when it had no
// record.
func (w *worker) markSeen(ctx context.Context, b *batch) {
	r, p := w.r, w.p
	var stay []*item
	var recs []record.Message
	ids := map[string]bool{} // one write per record: copies of one step share it
	for _, it := range b.items {
		if !it.claimed && (it.outcome == OutcomeDelayed || it.outcome == OutcomeBlocked) {
			rec := r.record(p, it, record.Seen, b.plan.now)
			if ids[rec.ID()] {
				continue
			}
			ids[rec.ID()] = true
			stay = append(stay, it)
			recs = append(recs, rec)
		}
	}
	for k, m := range r.mark(ctx, recs) {
		it := stay[k]
		switch {
		case m.Err != nil:
			it.warn = fmt.Errorf("mark %s seen: %w", it.msg.id, m.Err)
		case m.OK:
			it.first = true
		}
	}
}

// forget ends the way of a batch's messages in the run's memory of the ids
// it examined (see seen): before any is released, so none is examined
// again. failed are the deletes that failed.
func (w *worker) forget(b *batch, failed map[string]error) {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range b.items {
		_, bad := failed[it.msg.id]
		r.seen.done(it.msg.id, !r.req.DryRun && (it.sent || it.outcome == OutcomeRecovered) && !bad)
	}
}

// settle writes SENT, PARKED or RESOLVED over the movers' INTENT. A
// failure is a warning: the message was sent, it is deleted all the same.
func (w *worker) settle(ctx context.Context, b *batch) {
	r := w.r
	c := w.finalsOf(b)
	c.apply(r, r.mark(ctx, c.records(r)))
}

// finals is the final records of a sent batch on their way to the ledger:
// written by settle, or carried by the next batch's claim, which writes them
// with its INTENT records in one call. It holds the items until then, not
// the records: those are made when written.
type finals struct {
	p       *pass
	now     time.Time // the batch's
	items   []*item
	written chan []record.Marked // the results, once written
}

// finalsOf returns the final records of b's movers that the
// run holds.
func (w *worker) finalsOf(b *batch) *finals {
	p := w.p
	c := &finals{p: p, now: b.plan.now, written: make(chan []record.Marked, 1)}
	for _, it := range b.items {
		if it.sent && it.intent {
			c.items = append(c.items, it)
		}
	}
	return c
}

// records returns the final records of c's items, in their order.
func (c *finals) records(r *run) []record.Message {
	recs := make([]record.Message, len(c.items))
	for k, it := range c.items {
		recs[k] = r.record(c.p, it, finalState(it), c.now)
		recs[k].ReplayCount = it.count
		if recs[k].State != record.Sent {
			recs[k].Reason = it.reason
		}
	}
	return recs
}

// finalState is the state of the final record of a mover sent.
func finalState(it *item) record.State {
	switch it.outcome {
	case OutcomeParked:
		return record.Parked
	case OutcomeApplied:
		return record.Resolved
	}
	return record.Sent
}

// flush writes the records of finals no claim took.
func (c *finals) flush(ctx context.Context, r *run) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	c.written <- r.mark(fctx, c.records(r))
}

// apply notes what the ledger answered for the carried records.
func (c *finals) apply(r *run, marked []record.Marked) {
	for k, m := range marked {
		it := c.items[k]
		state := finalState(it)
		switch {
		case m.Err != nil:
			it.warn = errors.Join(it.warn, fmt.Errorf("mark %s %s: %w", it.msg.id, state, m.Err))
		case !m.OK:
			it.warn = errors.Join(it.warn, fmt.Errorf("mark %s %s: the INTENT of run %s is gone", it.msg.id, state, r.id))
		}
	}
}

// remove deletes from the DLQ what was sent now or by an earlier run, and
// returns the error of each message (by id) not deleted.
func (w *worker) remove(ctx context.Context, b *batch) map[string]error {
	r, p := w.r, w.p
	var ids, receipts []string
	for _, it := range b.items {
		if it.sent || it.outcome == OutcomeRecovered {
			ids = append(ids, it.msg.id)
			receipts = append(receipts, it.msg.receipt)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return deleteMessages(ctx, r.e.queue, p.route.DLQURL, ids, receipts)
}

// removed notes the deletes that failed: a warning for a message sent (the
// ledger says SENT: the next run deletes it), a failure for a recovered one.
func (w *worker) removed(b *batch, failed map[string]error) {
	for _, it := range b.items {
		err, bad := failed[it.msg.id]
		switch {
		case !bad || !it.sent && it.outcome != OutcomeRecovered:
		case it.sent:
			it.warn = errors.Join(it.warn, err)
		default:
			it.fail(err)
		}
	}
}

// release hides delayed messages until due and defers the ones left for a
// later run until the pass ends (see deferred.go).
func (w *worker) release(ctx context.Context, b *batch) {
	r, p := w.r, w.p
	var changes, deferred []visibility
	now := r.now()
	r.mu.Lock()
	end := w.deferUntil(ctx, now)
	for _, it := range b.items {
		switch e, stays := it.end(r.req.DryRun); {
		case !stays || e == endKeep:
		case e == endDefer:
			deferred = append(deferred, w.deferral(it.msg.id, it.msg.receipt, it.msg.sentAt, b.receivedAt, now, end))
		case e == endHide:
			changes = append(changes, visibility{id: it.msg.id, receipt: it.msg.receipt, seconds: it.delay})
		}
	}
	deferred = p.noteDeferred(deferred)
	r.mu.Unlock()
	r.changeVisibility(ctx, p, changes, slog.LevelWarn)
	r.changeVisibility(ctx, p, deferred, slog.LevelDebug)
}

// changeVisibility applies changes to the route's DLQ. A failure is harmless
// (the message reappears when its visibility ends) and only logged, at
// level: releasing a deferred message fails as a matter of course when its
// decision window has already ended.
func (r *run) changeVisibility(ctx context.Context, p *pass, changes []visibility, level slog.Level) {
	if len(changes) == 0 {
		return
	}
	for id, err := range changeVisibility(ctx, r.e.queue, p.route.DLQURL, changes) {
		r.e.opts.Logger.LogAttrs(ctx, level, "replay visibility", slog.String("runId", r.id),
			slog.String("messageId", id), slog.String("queue", p.route.DLQURL), slog.String("error", err.Error()))
	}
}
