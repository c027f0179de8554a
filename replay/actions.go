package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// The batched actions on a planned batch, in the order a worker takes
// them: claim (and, beside it, the completions read), send, then finish
// (settle, see, remove, then release). Each takes one round trip per
// batch: the ledger marks of a batch go out together (one call with a
// [BatchLedger]), the queue calls carry up to 10 messages each. Outside
// lockstep a batch's final records ride in the next batch's claim (see
// carry).

// finishTimeout bounds the ledger marks and the delete that follow a send,
// which run even when the run's context is done.
const finishTimeout = 5 * time.Second

// each runs f for the items want selects, concurrently (at most MaxBatch).
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
func (r *run) claim(ctx context.Context, p *pass, b *batch, c *carry) {
	var wg sync.WaitGroup
	check := r.appliedCandidates(p, b) // before the claims change outcomes
	wg.Go(func() { r.applied(ctx, p, check) })
	if r.req.DryRun {
		each(b.items, looked, func(it *item) { r.look(ctx, b, it) })
	} else {
		r.intend(ctx, p, b, c)
	}
	wg.Wait()
	for _, it := range b.items {
		// A removal needs the ledger (its RESOLVED record); without it the
		// message moves as planned.
		if it.done && it.outcome.moves() && (it.intent || r.req.DryRun) {
			it.outcome = OutcomeApplied
			it.reason = ReasonAlreadyApplied
		}
	}
	if p.route.FIFO() {
		blockBehind(b.items)
	}
}

// looked reports whether a dry run looks up the item's record: the ones a
// real run would claim or see.
func looked(it *item) bool { return it.outcome != OutcomeSkipped && it.outcome != OutcomeDeferred }

// look is a dry run's claim: it reads the message's record and decides as
// the INTENT write would.
func (r *run) look(ctx context.Context, b *batch, it *item) {
	history, err := r.e.ledger.History(ctx, HistoryKey(it.msg.key, it.msg.originalID()))
	if err != nil {
		it.warn = fmt.Errorf("read the history of %s: %w", it.msg.id, err)
		return
	}
	i := slices.IndexFunc(history, func(rec MessageRecord) bool { return rec.MessageID == it.msg.id })
	if i < 0 {
		it.first = true
		return
	}
	switch own := history[i]; {
	case own.State.Final():
		it.outcome = OutcomeRecovered
		it.vis = hold
	case own.State == Intent && b.plan.now.Before(own.LeaseUntil) && it.outcome.moves():
		it.outcome = OutcomeDelayed
		it.vis = hold
	}
}

// see writes the SEEN records of the messages that stay in the DLQ and
// were not claimed: a message is seen for the first time when it had no
// record.
func (r *run) see(ctx context.Context, p *pass, b *batch) {
	var stay []*item
	var recs []MessageRecord
	for _, it := range b.items {
		if !it.claimed && (it.outcome == OutcomeDelayed || it.outcome == OutcomeBlocked) {
			stay = append(stay, it)
			recs = append(recs, r.record(p, it, Seen, b.plan.now))
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

// mark writes records: in one call when the ledger is a [BatchLedger],
// else one Mark per record, concurrently.
func (r *run) mark(ctx context.Context, recs []MessageRecord) []Marked {
	if len(recs) == 0 {
		return nil
	}
	if bl, ok := r.e.ledger.(BatchLedger); ok {
		return bl.MarkBatch(ctx, recs)
	}
	out := make([]Marked, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Go(func() { out[i].Record, out[i].OK, out[i].Err = r.e.ledger.Mark(ctx, rec) })
	}
	wg.Wait()
	return out
}

// intend writes the INTENT records of the batch's movers, with the final
// records of the previous batch that c carries, if any (in one call when
// the ledger is a BatchLedger).
func (r *run) intend(ctx context.Context, p *pass, b *batch, c *carry) {
	now := b.plan.now
	var movers []*item
	var recs []MessageRecord
	if c != nil {
		recs = c.records(r)
		// What was sent must be recorded even when the run's context is
		// done: the carried records are written without its cancellation.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		ctx = fctx
	}
	for _, it := range b.items {
		if !it.outcome.moves() {
			continue
		}
		rec := r.record(p, it, Intent, now)
		rec.LeaseUntil = b.receivedAt.Add(r.visibility)
		it.lease = rec.LeaseUntil
		it.claimed = true
		movers = append(movers, it)
		recs = append(recs, rec)
	}
	marked := r.mark(ctx, recs)
	if c != nil {
		c.done <- marked[:len(c.items)]
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
			it.outcome = OutcomeRecovered
			it.vis = keep
		case cur.State == Intent:
			it.outcome = OutcomeDelayed
			it.vis = hide(cur.LeaseUntil, now, b.receivedAt)
		default:
			it.fail(fmt.Errorf("mark %s intent: the ledger holds %q", it.msg.id, cur.State))
		}
	}
}

func (r *run) record(p *pass, it *item, s State, now time.Time) MessageRecord {
	return MessageRecord{
		HistoryKey: HistoryKey(it.msg.key, it.msg.originalID()), MessageID: it.msg.id, State: s,
		Route: p.route.Name, Key: boundedKey(it.msg.key), OriginalMessageID: BoundedID(it.msg.originalID()), RunID: r.id,
		FirstSeenAt: now, At: now, ExpiresAt: now.Add(r.e.opts.RecordLifetime),
	}
}

// appliedCandidates returns the movers whose removal as already applied
// the completions read decides: those with a key, on a route whose
// consumer writes completion records.
func (r *run) appliedCandidates(p *pass, b *batch) []*item {
	if r.e.opts.Completions == nil || !p.route.Records {
		return nil
	}
	var out []*item
	for _, it := range b.items {
		if !it.outcome.moves() || it.msg.key == "" || len(it.msg.key) > MaxKeyID {
			continue // a key over the bound is no consumer's key either
		}
		out = append(out, it)
	}
	return out
}

// applied finds the candidates whose key the consumer has completed with
// the same payload (it sets done; claim turns them into OutcomeApplied):
// nobody needs them, so they are removed rather than replayed or parked.
// A different payload still goes back (the consumer routes the conflict),
// and so does one whose record's hash cannot be compared (a record of an
// earlier hash version, or a body the hash cannot read): see
// payload.Hash.Same. One read per batch; when it fails, the messages move
// as planned.
func (r *run) applied(ctx context.Context, p *pass, items []*item) {
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
			it.done = true
		}
	}
}

// send sends the movers, 10 per SendMessageBatch call per destination. The
// batch waits for the rate limit once, for all its movers, then renews the
// lease of every one that needs it, then sends them back to back: a batch
// that both replays and parks never waits between its sends, so no lease
// runs out between a send and the batch's records and deletes. For FIFO
// routes it sends in rounds of one message per group, so that a failed send
// stops the later messages of its group.
func (r *run) send(ctx context.Context, p *pass, b *batch) {
	defer drop(b)
	var movers []*item
	for _, it := range b.items {
		if it.outcome.moves() {
			movers = append(movers, it)
		}
	}
	if len(movers) == 0 {
		return
	}
	if err := r.limiter.wait(ctx, len(movers)); err != nil {
		for _, it := range movers {
			it.fail(fmt.Errorf("send %s: %w", it.msg.id, err))
		}
		return
	}
	r.renew(ctx, p, movers) // an item whose lease cannot be renewed fails
	var rounds [][]*item
	depth := map[string]int{}
	for _, it := range movers {
		k := 0
		if p.route.FIFO() {
			k = depth[it.msg.group]
			depth[it.msg.group]++
		}
		if k == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[k] = append(rounds[k], it)
	}
	failed := map[string]bool{}
	for _, round := range rounds {
		for _, it := range round {
			if it.outcome == OutcomeFailed {
				failed[it.msg.group] = true // not renewed: stops its group too
			}
		}
		for _, dest := range [...]string{p.route.SourceURL, p.route.ParkingURL} {
			var out []*item
			for _, it := range round {
				switch {
				case it.dest != dest || it.outcome == OutcomeFailed:
				case p.route.FIFO() && failed[it.msg.group]:
					it.outcome = OutcomeBlocked
					it.vis = keep
				default:
					out = append(out, it)
				}
			}
			if len(out) == 0 {
				continue
			}
			errs := r.sendBatch(ctx, dest, out)
			for i, it := range out {
				if err := errs[i]; err != nil {
					it.fail(fmt.Errorf("send %s to %s: %w", it.msg.id, dest, err))
					failed[it.msg.group] = true
					continue
				}
				it.sent = true
			}
		}
	}
}

// drop ends the sends of a batch: an applied removal counts as sent
// (nothing to send: removed when the batch finishes), and what is left to
// do needs the ids, not the bodies, so a run's memory stays that of the
// batches on their way.
func drop(b *batch) {
	for _, it := range b.items {
		if it.outcome == OutcomeApplied {
			it.sent = true
		}
		it.entry = types.SendMessageBatchRequestEntry{}
		it.msg.body = ""
		it.msg.producer = nil
	}
}

// sendBatch sends out to dest in SendMessageBatch calls of at most 10
// messages and at most envelope.MaxMessageBytes in all (SQS's limit on a
// batch request), and returns the error of each item (by index) not sent.
func (r *run) sendBatch(ctx context.Context, dest string, out []*item) map[int]error {
	errs := map[int]error{}
	for start := 0; start < len(out); {
		end, size := start, 0
		for end < len(out) && end-start < MaxBatch {
			n := envelope.MessageBytes(len(aws.ToString(out[end].entry.MessageBody)), out[end].entry.MessageAttributes)
			if end > start && size+n > envelope.MaxMessageBytes {
				break
			}
			size += n
			end++
		}
		chunk := out[start:end]
		for i, err := range inBatches(len(chunk), func(_ int, ids []string) ([]string, []types.BatchResultErrorEntry, error) {
			entries := make([]types.SendMessageBatchRequestEntry, len(ids))
			for i, id := range ids {
				entries[i] = chunk[i].entry
				entries[i].Id = aws.String(id)
			}
			// The call may not outlast the lease of any message it sends:
			// a slow call (SDK retries) is cut off rather than sending
			// after another run may have taken over.
			lease := chunk[0].lease
			for _, it := range chunk {
				lease = minTime(lease, it.lease)
			}
			sctx, cancel := context.WithDeadline(ctx, lease)
			defer cancel()
			res, err := r.e.queue.SendMessageBatch(sctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dest), Entries: entries})
			if err != nil {
				return nil, nil, err
			}
			return successful(res.Successful, func(e types.SendMessageBatchResultEntry) *string { return e.Id }), res.Failed, nil
		}) {
			errs[start+i] = err
		}
		start = end
	}
	return errs
}

// renew makes sure the run holds every item of out for as long as a send
// may take (half the decision window): a run must never send a message
// whose lease it no longer holds, or a concurrent run that took it over
// sends it too. The lease of an item that ends sooner is extended, its
// visibility first (it fails when another run has received the message
// since), then its INTENT record (it fails when another run holds or has
// settled it). An item that cannot be extended is not sent: it fails and is
// left as it is.
func (r *run) renew(ctx context.Context, p *pass, out []*item) {
	now := r.now()
	short := func(it *item) bool { return it.lease.Sub(now) < r.e.opts.DecisionWindow/2 }
	var due []visibility
	for _, it := range out {
		if short(it) {
			due = append(due, visibility{id: it.msg.id, receipt: it.msg.receipt, seconds: int32(math.Ceil(r.visibility.Seconds()))})
		}
	}
	if len(due) == 0 {
		return
	}
	failed := changeVisibility(ctx, r.e.queue, p.route.DLQURL, due)
	for _, it := range out {
		if !short(it) {
			continue
		}
		if err, bad := failed[it.msg.id]; bad {
			it.fail(fmt.Errorf("lease of %s ran out and could not be renewed: %w", it.msg.id, err))
			continue
		}
		lease := now.Add(r.visibility)
		if it.intent {
			rec := r.record(p, it, Intent, now)
			rec.LeaseUntil = lease
			if _, ok, err := r.e.ledger.Mark(ctx, rec); err != nil || !ok {
				it.fail(fmt.Errorf("lease of %s ran out and could not be renewed: ok=%v: %w", it.msg.id, ok, errors.Join(err, errLeaseLost)))
				continue
			}
		}
		it.lease = lease
	}
}

// errLeaseLost says another run holds or has settled a message.
var errLeaseLost = errors.New("another run holds the message")

// finish settles a sent batch: it writes the SENT, PARKED and RESOLVED
// records over the run's INTENT ones and the SEEN records of what stays,
// and deletes from the DLQ what left it, the three at once (a record that
// fails is a warning; a delete that fails leaves the record for the next
// run to recover; a delete before its record is written and a crash leave
// the message gone with its INTENT, the audit of a move that happened).
// In lockstep the records go first and the deletes after them. Then it
// hides the delayed messages and holds the ones left for a later run. It
// runs to the end even when ctx is done: what was sent must be recorded and
// deleted, or the next run finds an expired INTENT and sends it again.
func (r *run) finish(ctx context.Context, p *pass, b *batch, c *carry) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	var deleted map[string]error // the deletes that failed
	if r.req.DryRun {
		for _, it := range b.items {
			it.vis = hold
		}
	} else {
		var wg sync.WaitGroup
		remove := func() { deleted = r.remove(fctx, p, b) }
		together := !r.e.opts.Lockstep
		if together {
			wg.Go(remove)
		}
		wg.Go(func() { r.see(fctx, p, b) })
		if c == nil {
			r.settle(fctx, p, b)
		}
		wg.Wait()
		if c != nil {
			c.apply(r, <-c.done) // written by the next batch's claim, or flushed
		}
		if !together {
			remove()
		}
		r.removed(b, deleted)
	}
	r.forget(b, deleted)
	r.release(ctx, p, b)
	r.account(p, b)
	r.logItems(ctx, p, b)
}

// forget ends the way of a batch's messages in the run's memory of the ids
// it examined (see seen): before any is released, so none is examined
// again. failed are the deletes that failed.
func (r *run) forget(b *batch, failed map[string]error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range b.items {
		_, bad := failed[it.msg.id]
		r.seen.done(it.msg.id, !r.req.DryRun && (it.sent || it.outcome == OutcomeRecovered) && !bad)
	}
}

// settle writes SENT, PARKED or RESOLVED over the movers' INTENT. A
// failure is a warning: the message was sent, it is deleted all the same.
func (r *run) settle(ctx context.Context, p *pass, b *batch) {
	c := r.carryOf(p, b)
	c.apply(r, r.mark(ctx, c.records(r)))
}

// carry is the final records of a sent batch on their way to the ledger:
// written by settle, or carried by the next batch's claim, which writes them
// with its INTENT records in one call. It holds the items until then, not
// the records: those are made when written.
type carry struct {
	p     *pass
	now   time.Time // the batch's
	items []*item
	done  chan []Marked // the results, once written
}

// carryOf returns the carry of the final records of b's movers that the
// run holds.
func (r *run) carryOf(p *pass, b *batch) *carry {
	c := &carry{p: p, now: b.plan.now, done: make(chan []Marked, 1)}
	for _, it := range b.items {
		if it.sent && it.intent {
			c.items = append(c.items, it)
		}
	}
	return c
}

// records returns the final records of c's items, in their order.
func (c *carry) records(r *run) []MessageRecord {
	recs := make([]MessageRecord, len(c.items))
	for k, it := range c.items {
		recs[k] = r.record(c.p, it, finalState(it), c.now)
		recs[k].ReplayCount = it.count
		if recs[k].State != Sent {
			recs[k].Reason = it.reason
		}
	}
	return recs
}

// finalState is the state of the final record of a mover sent.
func finalState(it *item) State {
	switch it.outcome {
	case OutcomeParked:
		return Parked
	case OutcomeApplied:
		return Resolved
	}
	return Sent
}

// flush writes the records of a carry no claim took.
func (c *carry) flush(ctx context.Context, r *run) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	c.done <- r.mark(fctx, c.records(r))
}

// apply notes what the ledger answered for the carried records.
func (c *carry) apply(r *run, marked []Marked) {
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
func (r *run) remove(ctx context.Context, p *pass, b *batch) map[string]error {
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
func (r *run) removed(b *batch, failed map[string]error) {
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

// release hides delayed messages until due and holds the ones left for a
// later run until the pass ends (see hold.go).
func (r *run) release(ctx context.Context, p *pass, b *batch) {
	var changes, held []visibility
	now := r.now()
	r.mu.Lock()
	end := r.holdEnd(ctx, p, now)
	for _, it := range b.items {
		switch {
		case it.sent || it.outcome == OutcomeRecovered || it.vis == keep:
		case it.vis == hold:
			held = append(held, r.holding(p, it.msg.id, it.msg.receipt, it.msg.sentAt, b.receivedAt, now, end))
		default:
			changes = append(changes, visibility{id: it.msg.id, receipt: it.msg.receipt, seconds: it.vis})
		}
	}
	held = p.hold(held)
	r.mu.Unlock()
	r.changeVisibility(ctx, p, changes, slog.LevelWarn)
	r.changeVisibility(ctx, p, held, slog.LevelDebug)
}

// changeVisibility applies changes to the route's DLQ. A failure is harmless
// (the message reappears when its visibility ends) and only logged, at
// level: releasing a held message fails as a matter of course when its
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
