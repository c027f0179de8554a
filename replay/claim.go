package replay

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/homingdlq/homing/internal/record"
)

// each runs f for the items want selects, concurrently (at most maxBatch).
func each(items []*item, want func(*item) bool, f func(*item)) {
	var wg sync.WaitGroup
	for _, it := range items {
		if want(it) {
			wg.Go(func() { f(it) })
		}
	}
	wg.Wait()
}

// claim writes the INTENT records of the batch's movers, leased until the
// messages' visibility ends; beside it, it reads which movers' keys are
// already applied. The INTENT write is also the batch's look-up: a mover
// whose record is final was sent by an earlier run (recovered: deleted
// without sending); one whose INTENT another run holds is hidden until
// that lease ends. A park goes on without the ledger (the rescue must not
// depend on it); a replay does not, unless it is about to expire (then it
// is parked). The claim also writes the final records c carries (the
// previous batch's), when c is not nil. A dry run writes nothing: it reads
// the messages' records.
func (w *worker) claim(ctx context.Context, b *batch, c *finals) {
	r, p := w.r, w.p
	var wg sync.WaitGroup
	check := w.appliedCandidates(b) // before the claims change outcomes
	wg.Go(func() { w.applied(ctx, check) })
	if r.req.DryRun {
		dryTwins(b.items)
		each(b.items, lookedUp, func(it *item) { w.lookUp(ctx, b, it) })
	} else {
		w.intend(ctx, b, c)
	}
	wg.Wait()
	for _, it := range b.items {
		// A removal needs the ledger (its RESOLVED record); without it the
		// message moves as planned.
		if it.completed && it.outcome.moves() && (it.intent || r.req.DryRun) {
			it.to(OutcomeApplied)
			it.reason = ReasonAlreadyApplied
		}
	}
	newGroupOrder(p.route).apply(b.items)
}

// lookedUp reports whether a dry run looks up the item's record: the ones a
// real run would claim or mark seen.
func lookedUp(it *item) bool {
	return it.outcome.moves() || it.outcome == OutcomeDelayed || it.outcome == OutcomeBlocked
}

// lookUp is a dry run's claim: it reads the message's record and decides as
// the INTENT write would.
func (w *worker) lookUp(ctx context.Context, b *batch, it *item) {
	r := w.r
	history, err := r.e.ledger.History(ctx, record.HistoryKey(it.msg.key, it.msg.originalID()))
	if err != nil {
		it.warn = fmt.Errorf("read the history of %s: %w", it.msg.id, err)
		return
	}
	id := it.recordID()
	i := slices.IndexFunc(history, func(rec record.Message) bool { return rec.ID() == id })
	if i < 0 {
		it.first = true
		return
	}
	switch own := history[i]; {
	case own.State.Final():
		it.to(OutcomeRecovered)
	case own.State == record.Intent && b.plan.now.Before(own.LeaseUntil) && it.outcome.moves():
		it.to(OutcomeDelayed) // a dry run holds it: no hide
	}
}

// intend writes the INTENT records of the batch's movers, with the final
// records of the previous batch that c carries, if any, in one call.
func (w *worker) intend(ctx context.Context, b *batch, c *finals) {
	r, p := w.r, w.p
	now := b.plan.now
	var movers []*item
	var recs []record.Message
	if c != nil {
		recs = c.records(r)
		// What was sent must be recorded even when the run's context is
		// done: the carried records are written without its cancellation.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		ctx = fctx
	}
	ids := map[string]bool{}
	for _, rec := range recs {
		ids[rec.ID()] = true
	}
	for _, it := range b.items {
		if !it.outcome.moves() {
			continue
		}
		rec := r.record(p, it, record.Intent, now)
		rec.LeaseUntil = b.receivedAt.Add(r.visibility)
		if twin(ids, it, rec, b) {
			continue
		}
		it.lease = rec.LeaseUntil
		it.claimed = true
		movers = append(movers, it)
		recs = append(recs, rec)
	}
	marked := r.mark(ctx, recs)
	if c != nil {
		c.written <- marked[:len(c.items)]
		marked = marked[len(c.items):]
	}
	for k, m := range marked {
		it := movers[k]
		switch cur := m.Record; {
		case m.Err != nil && it.outcome == OutcomeParked:
			it.warn = fmt.Errorf("mark %s intent: %w", it.msg.id, m.Err)
		case m.Err != nil && b.plan.rescue(it):
			it.warn = fmt.Errorf("mark %s intent: %w", it.msg.id, m.Err)
		case m.Err != nil:
			it.fail(fmt.Errorf("mark %s intent: %w", it.msg.id, m.Err))
		case m.OK:
			it.intent = true
			it.first = cur.State == "" // it replaced no record
		case cur.State.Final():
			it.to(OutcomeRecovered)
		case cur.State == record.Intent:
			it.delayFor(hide(cur.LeaseUntil, now, b.receivedAt))
		default:
			it.fail(fmt.Errorf("mark %s intent: the ledger holds %q", it.msg.id, cur.State))
		}
	}
}

// recordID is the ID of it's ledger record: its step, or its message id.
func (it *item) recordID() string {
	return record.Message{MessageID: it.msg.id, Step: it.msg.step}.ID()
}

// dryTwins holds, as a real run's claim would (see twin), the movers whose
// step an earlier mover of the batch shares.
func dryTwins(items []*item) {
	ids := map[string]bool{}
	for _, it := range items {
		switch id := it.recordID(); {
		case !it.outcome.moves():
		case ids[id]:
			it.to(OutcomeDelayed) // a dry run holds it: no hide
		default:
			ids[id] = true
		}
	}
}

// twin reports whether the call that writes the records in ids (true: a
// sent message's final record) already writes rec, the INTENT of it: one
// write per record in a call. A copy of a step (see stepOf) is then
// recovered when its twin was sent, and waits for its twin's lease
// otherwise. Else it adds rec to ids.
func twin(ids map[string]bool, it *item, rec record.Message, b *batch) bool {
	sent, dup := ids[rec.ID()]
	switch {
	case !dup:
		ids[rec.ID()] = false
		return false
	case sent:
		it.to(OutcomeRecovered)
	default:
		it.delayFor(hide(rec.LeaseUntil, b.plan.now, b.receivedAt))
		it.claimed = true // its twin's record stands for it: no SEEN beside it
	}
	return true
}

func (r *run) record(p *pass, it *item, s record.State, now time.Time) record.Message {
	return record.Message{
		HistoryKey: record.HistoryKey(it.msg.key, it.msg.originalID()), MessageID: it.msg.id, Step: it.msg.step, State: s,
		Route: p.route.Name, Key: boundedKey(it.msg.key), OriginalMessageID: record.BoundedID(it.msg.originalID()), RunID: r.id,
		FirstSeenAt: now, At: now, ExpiresAt: now.Add(r.e.opts.RecordLifetime),
	}
}

// mark writes records in one ledger call.
func (r *run) mark(ctx context.Context, recs []record.Message) []record.Marked {
	if len(recs) == 0 {
		return nil
	}
	return r.e.ledger.MarkBatch(ctx, recs)
}

// appliedCandidates returns the movers whose removal as already applied
// the completions read decides: those with a key, on a route whose
// consumer writes completion records.
func (w *worker) appliedCandidates(b *batch) []*item {
	r, p := w.r, w.p
	if r.e.opts.Completions == nil || !p.route.Records {
		return nil
	}
	var out []*item
	for _, it := range b.items {
		if !it.outcome.moves() || !completable(it.msg.key) {
			continue
		}
		out = append(out, it)
	}
	return out
}

// completable reports whether key can have a completion record: any key
// (the completions reader bounds a long one as the consumer's record does).
func completable(key string) bool { return key != "" }

// applied finds the candidates whose key the consumer has completed with
// the same payload (it sets completed; claim turns them into OutcomeApplied):
// nobody needs them, so they are removed rather than replayed or parked.
// A different payload still goes back (the consumer routes the conflict),
// and so does one whose record's hash cannot be compared (a record of an
// earlier hash version, or a body the hash cannot read): see
// payload.Hash.Same. One read per batch; when it fails, the messages move
// as planned.
func (w *worker) applied(ctx context.Context, items []*item) {
	r, p := w.r, w.p
	if len(items) == 0 {
		return
	}
	keys := make([]string, 0, len(items))
	for _, it := range items {
		keys = append(keys, it.msg.key)
	}
	done, err := r.e.opts.Completions.Completed(ctx, keys)
	if err != nil {
		r.e.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "replay completions", slog.String("runId", r.id), slog.String("error", err.Error()))
		return
	}
	for _, it := range items {
		recorded, ok := done[it.msg.key]
		if !ok {
			continue
		}
		if same, comparable := p.lane.hash.Same(recorded, []byte(it.msg.body)); same && comparable {
			it.completed = true
		}
	}
}
