package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// fate is what happens to one message of a batch.
type fate int

const (
	fateUndecided fate = iota
	fateReplay         // send to the source queue
	fatePark           // send to the parking queue
	fateRecover        // sent by an earlier run: delete only
	fateApplied        // the consumer completed the order with the same payload: delete only
	fateDelay          // hide until due
	fateBlocked        // FIFO: an earlier message of its group is not moved
	fateSkip           // rejected by the filter
	fateDefer          // cap or canary limit reached
	fateFail           // an error before the move
)

var outcomes = [...]string{
	fateUndecided: "undecided", fateReplay: "replayed", fatePark: "parked", fateRecover: "recovered", fateApplied: "applied",
	fateDelay: "delayed", fateBlocked: "blocked", fateSkip: "skipped", fateDefer: "deferred", fateFail: "failed",
}

// Visibilities that are not a timeout.
const (
	// keep leaves a message as it is: it reappears when the receive
	// visibility (the decision window) ends.
	keep = -1
	// hold keeps a message left for a later run hidden until the route's
	// pass ends, then releases it (visibility 0). Releasing it at once would
	// hand it back to the next receive (SQS FIFO always returns the first
	// message of a group, and the emulator and small standard queues return
	// the oldest messages first), and the pass would never reach the rest.
	hold = -2
)

// finishTimeout bounds the ledger marks and the delete that follow a send,
// which run even when the run's context is done.
const finishTimeout = 5 * time.Second

// maxHeld bounds the messages a pass holds; past it the oldest are
// released early. About 0.5 KiB each (id and receipt handle).
const maxHeld = 1000

type item struct {
	msg       message
	own       *MessageRecord // the message's ledger record, if any
	first     bool           // seen for the first time
	history   int            // the highest replay count the ledger's SENT records of the original message hold
	ledgerErr error          // the ledger could not be read: decide on the metadata alone
	intent    bool           // the run holds the message's INTENT record
	lease     time.Time      // the run holds the message (visibility, and INTENT when intent) until then
	refund    bool           // the last replay failed in a failed run: it is given back
	facts     Facts
	fate      fate
	reason    string // parking reason
	vis       int32  // the visibility to set, or keep
	dest      string // the queue a mover goes to
	entry     types.SendMessageBatchRequestEntry
	count     int   // the replay count in the metadata sent
	sent      bool  // the send succeeded
	err       error // why it failed (fateFail)
	warn      error // a failure after the move: the ledger mark, or the delete
}

func (it *item) fail(err error) { it.fate, it.err, it.vis = fateFail, err, keep }

func (it *item) mover() bool { return it.fate == fateReplay || it.fate == fatePark }

// acts reports whether the run writes an INTENT for the item and then
// settles it: the movers, and the applied ones it removes.
func (it *item) acts() bool { return it.mover() || it.fate == fateApplied }

// passes reports whether the item leaves the DLQ without holding up its
// FIFO group: moved, recovered, or applied.
func (it *item) passes() bool { return it.mover() || it.fate == fateRecover || it.fate == fateApplied }

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

func undecided(it *item) bool { return it.fate == fateUndecided }

// batch handles one received batch. Messages examined before in this run
// are left as they are. An error means the run must stop (the test-only
// crash hook).
func (r *run) batch(ctx context.Context, p *pass, msgs []types.Message, receivedAt time.Time) error {
	now := r.now()
	items := make([]*item, 0, len(msgs))
	for _, m := range msgs {
		if r.seen.add(aws.ToString(m.MessageId)) {
			// Examined before in this run (it reappeared after its
			// decision window): not examined again, held until the pass
			// ends like the others left for a later run, so the next run
			// finds it visible.
			p.held = append(p.held, visibility{id: aws.ToString(m.MessageId), receipt: aws.ToString(m.ReceiptHandle)})
			continue
		}
		it := &item{msg: readMessage(m, now), vis: keep}
		if r.req.ResetCount {
			it.msg.meta.ReplayCount, it.msg.meta.LastReplayAt, it.msg.meta.ResetAt = 0, time.Time{}, now
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil
	}
	for _, it := range items {
		switch {
		case !r.req.Filter.match(it.msg, now):
			// Filters apply first: a run for some messages leaves the
			// others alone, whatever their state.
			it.fate, it.vis = fateSkip, hold
		}
	}
	r.watch(ctx, p, items, now)
	if p.gated {
		// Nothing is replayed: only what is about to expire needs a
		// decision (and the ledger); the rest is left for a later run
		// without a single call for it.
		for _, it := range items {
			if it.fate == fateUndecided && !r.expiring(p, it, now) {
				it.fate, it.vis = fateDefer, hold
			}
		}
	}
	each(items, undecided, func(it *item) { r.look(ctx, p, it, now) })
	r.applied(ctx, items)
	for _, it := range items {
		if it.fate == fateUndecided {
			r.decide(p, it, now, receivedAt)
		}
	}
	plannedMoves, plannedReplays := r.plan(p, items, now)

	if r.req.DryRun {
		for _, it := range items {
			it.vis = hold
		}
	} else {
		each(items, func(it *item) bool { return it.first && !it.acts() && it.fate != fateFail }, func(it *item) { r.see(ctx, p, it, now) })
		each(items, (*item).acts, func(it *item) { r.intend(ctx, p, it, now, receivedAt) })
		if p.fifo {
			blockBehind(items)
		}
		r.send(ctx, p, items)
		for _, it := range items {
			if it.fate == fateApplied {
				it.sent = true // nothing to send: removed below
			}
		}
		// What was sent must be recorded and deleted even when the run is
		// cancelled or out of time now: otherwise the next run finds an
		// expired INTENT and sends the messages again.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		each(items, func(it *item) bool { return it.sent && it.intent }, func(it *item) { r.settle(fctx, p, it, now) })
		if r.e.afterSend != nil {
			var ids []string
			for _, it := range items {
				if it.sent {
					ids = append(ids, it.msg.id)
				}
			}
			if err := r.e.afterSend(p.route.Name, ids); err != nil {
				r.account(ctx, p, items, plannedMoves, plannedReplays)
				return fmt.Errorf("after send: %w", err)
			}
		}
		r.remove(fctx, p, items)
	}
	r.release(ctx, p, items)
	r.account(ctx, p, items, plannedMoves, plannedReplays)
	return nil
}

// look reads the order's history from the ledger: the message's own record,
// and the replays of the same original message (its earlier DLQ copies). A
// message without a record is seen for the first time (see writes its
// record later). The budget belongs to the message: replays of the order's
// other messages do not count, nor do INTENT records (a send that may never
// have happened), nor the replays of a failed run (see [Breaker]). When the
// ledger cannot be read, the message is decided on its metadata alone.
func (r *run) look(ctx context.Context, p *pass, it *item, now time.Time) {
	key := OrderKey(it.msg.orderID, it.msg.originalID())
	history, err := r.e.ledger.OrderHistory(ctx, key)
	if err != nil {
		it.ledgerErr = fmt.Errorf("read the history of %s: %w", key, err)
		return
	}
	for _, rec := range history {
		switch {
		case rec.MessageID == it.msg.id:
			it.own = &rec
		case rec.State == Sent && rec.OriginalMessageID == it.msg.originalID() &&
			!rec.At.Before(it.msg.meta.ResetAt) && !p.rs.Breaker.failed(rec.RunID):
			it.history = max(it.history, rec.ReplayCount)
		}
	}
	if it.own != nil {
		return
	}
	it.first = true
}

// applied finds the messages whose order the consumer has completed with
// the same payload: nobody needs them, so they are removed rather than
// replayed or parked. A different payload still goes back (the consumer
// routes the conflict). One read per batch; when it fails, the messages are
// decided as usual.
func (r *run) applied(ctx context.Context, items []*item) {
	if r.e.opts.Completions == nil || r.e.opts.PayloadHash == nil {
		return
	}
	hashes := map[*item]string{}
	var ids []string
	for _, it := range items {
		// A message the ledger cannot be read for is left to decide: its
		// removal needs the ledger, its rescue does not.
		if it.fate != fateUndecided || it.msg.orderID == "" || it.ledgerErr != nil || it.own != nil && it.own.State.final() {
			continue
		}
		if h, ok := r.e.opts.PayloadHash(it.msg.body); ok {
			hashes[it] = h
			ids = append(ids, it.msg.orderID)
		}
	}
	if len(ids) == 0 {
		return
	}
	done, err := r.e.opts.Completions.Completed(ctx, ids)
	if err != nil {
		r.e.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "replay completions", slog.String("runId", r.id), slog.String("error", err.Error()))
		return
	}
	for it, h := range hashes {
		if got, ok := done[it.msg.orderID]; ok && got == h {
			it.fate, it.reason = fateApplied, ReasonAlreadyApplied
		}
	}
}

// see writes the SEEN record of a message seen for the first time that
// stays in the DLQ. A mover needs none: its INTENT record, written from
// absent, is its first record (one conditional write per message saved on
// the path that matters).
func (r *run) see(ctx context.Context, p *pass, it *item, now time.Time) {
	_, ok, err := r.e.ledger.Mark(ctx, r.record(p, it, Seen, now))
	switch {
	case err != nil:
		it.warn = fmt.Errorf("mark %s seen: %w", it.msg.id, err)
		it.first = false
	case !ok:
		it.first = false // another run was quicker
	}
}

func (r *run) record(p *pass, it *item, s State, now time.Time) MessageRecord {
	return MessageRecord{
		OrderKey: OrderKey(it.msg.orderID, it.msg.originalID()), MessageID: it.msg.id, State: s,
		Route: p.route.Name, OrderID: it.msg.orderID, OriginalMessageID: it.msg.originalID(), RunID: r.id,
		FirstSeenAt: now, At: now, ExpiresAt: now.Add(r.e.opts.RecordLifetime),
	}
}

// decide applies the policy, after the ledger's verdict on earlier moves.
func (r *run) decide(p *pass, it *item, now, receivedAt time.Time) {
	if own := it.own; own != nil {
		switch {
		case own.State.final():
			it.fate = fateRecover
			return
		case own.State == Intent && now.Before(own.LeaseUntil) && own.RunID != r.id:
			it.fate, it.vis = fateDelay, hide(own.LeaseUntil, now, receivedAt)
			return
		}
	}
	count := it.msg.meta.ReplayCount
	if p.rs.Breaker.failed(it.msg.meta.RunID) && count > 0 {
		// Its last replay failed in a run whose replays all failed: the
		// failure was the system's, so that replay is given back.
		count--
		it.refund = true
	}
	it.facts = Facts{
		ReplayCount:    max(count, it.history),
		DeadLetteredAt: it.msg.deadLetteredAt,
		LastReplayAt:   it.msg.meta.LastReplayAt,
		JitterKey:      it.msg.originalID(),
	}
	it.facts.ExpiresAt = expiresAt(p, it)
	d := r.e.policy.Decide(it.facts, now)
	switch {
	case d.Action == Replay && it.ledgerErr != nil && r.e.policy.Expiring(it.facts, now):
		// No replay without the ledger, but the rescue goes on.
		it.fate, it.reason = fatePark, ReasonExpiryRescue
	case d.Action == Replay && it.ledgerErr != nil:
		it.fail(it.ledgerErr)
	case d.Action == Replay:
		it.fate = fateReplay
	case d.Action == Park:
		it.fate, it.reason = fatePark, d.Reason
	case d.Action == Delay:
		it.fate, it.vis = fateDelay, hide(d.Until, now, receivedAt)
	}
}

// expiresAt is when the DLQ drops the item's message; zero when unknown.
func expiresAt(p *pass, it *item) time.Time {
	if it.msg.sentAt.IsZero() || p.retention <= 0 {
		return time.Time{}
	}
	return it.msg.sentAt.Add(p.retention)
}

// expiring reports whether the item's message is within its rescue window.
func (r *run) expiring(p *pass, it *item, now time.Time) bool {
	return r.e.policy.Expiring(Facts{ExpiresAt: expiresAt(p, it)}, now)
}

// hide is the visibility timeout, in seconds, that hides a message received
// at receivedAt until until: at least 1 s, and within SQS's 12 hours from
// the receive (with a minute to spare).
func hide(until, now, receivedAt time.Time) int32 {
	limit := MaxVisibility - now.Sub(receivedAt) - time.Minute
	d := min(max(until.Sub(now), time.Second), limit)
	return int32(math.Ceil(d.Seconds()))
}

// plan applies, in receive order, the FIFO order rule, the run's cap and the
// canary limit, and builds the messages to send. It returns the moves and
// replays it reserved.
func (r *run) plan(p *pass, items []*item, now time.Time) (moves, replays int) {
	blocked := map[string]bool{}
	for _, it := range items {
		if p.fifo && blocked[it.msg.group] && it.mover() {
			it.fate, it.vis = fateBlocked, keep
		}
		switch it.fate {
		case fateReplay:
			switch {
			case r.moved < r.max && p.replayLeft != 0:
				replays++
				if p.replayLeft > 0 {
					p.replayLeft--
				}
			case r.moved < r.max && r.e.policy.Expiring(it.facts, now):
				it.fate, it.reason = fatePark, ReasonExpiryRescue
			default:
				it.fate, it.vis = fateDefer, hold
			}
		case fatePark:
			if r.moved >= r.max {
				it.fate, it.vis = fateDefer, hold
			}
		}
		if it.mover() {
			r.moved++
			moves++
			if err := r.build(p, it, now); err != nil {
				it.fail(err)
			}
		}
		if p.fifo && !it.passes() {
			blocked[it.msg.group] = true
		}
	}
	return moves, replays
}

// build prepares the message a mover sends: the body and the producer's
// attributes unchanged, plus our metadata.
func (r *run) build(p *pass, it *item, now time.Time) error {
	m := it.msg
	meta := Metadata{
		ReplayCount: it.facts.ReplayCount, FirstDeadLetteredAt: m.firstDeadLettered(), LastReplayAt: m.meta.LastReplayAt,
		OriginalMessageID: m.originalID(), Route: p.route.Name, RunID: r.id, ResetAt: m.meta.ResetAt, Refunds: m.meta.Refunds,
	}
	if it.refund {
		meta.Refunds++
	}
	it.dest = p.route.ParkingURL
	if it.fate == fateReplay {
		meta.ReplayCount++
		meta.LastReplayAt = now
		it.dest = p.route.SourceURL
	} else {
		meta.Reason, meta.ParkedAt = it.reason, now
	}
	it.count = meta.ReplayCount
	attrs, err := envelope.Pack(m.producer, AttributeName, meta)
	if err != nil {
		return fmt.Errorf("pack metadata of %s: %w", m.id, err)
	}
	if it.fate == fateReplay && envelope.MessageBytes(len(m.body), attrs) > p.sourceMax {
		// With our metadata it no longer fits its source queue: it would
		// fail every run until it expired. Park it for an operator.
		it.fate, it.reason = fatePark, ReasonTooLarge
		return r.build(p, it, now)
	}
	it.entry = types.SendMessageBatchRequestEntry{MessageBody: aws.String(m.body), MessageAttributes: attrs}
	if p.fifo {
		group := m.group
		if group == "" {
			group = p.route.Name
		}
		it.entry.MessageGroupId = aws.String(group)
		// After a reset the counts start again, so the ids must differ
		// from those of the first replays, and be the same when the reset
		// run is retried: the run that resets names the message it resets
		// (its id in the queue it reads, the same on every retry); later
		// runs name the reset time their metadata carries.
		dedup := meta.Reason
		switch {
		case r.req.ResetCount:
			dedup += "\nreset of " + m.id
		case !meta.ResetAt.IsZero():
			dedup += "\nreset " + meta.ResetAt.UTC().Format(time.RFC3339Nano)
		}
		// A replay given back by the breaker is sent again under the same
		// count: a new send, so a new id (SQS would drop it as a duplicate
		// within its 5-minute window, and the DLQ copy would be deleted).
		if meta.Refunds > 0 {
			dedup += "\nrefunds " + strconv.Itoa(meta.Refunds)
		}
		it.entry.MessageDeduplicationId = aws.String(DeduplicationID(m.originalID(), meta.ReplayCount, dedup))
	}
	return nil
}

// blockBehind turns the movers behind a message of their group that does not
// move into blocked ones, left as they are.
func blockBehind(items []*item) {
	stopped := map[string]bool{}
	for _, it := range items {
		if stopped[it.msg.group] && it.mover() {
			it.fate, it.vis = fateBlocked, keep
		}
		if !it.passes() {
			stopped[it.msg.group] = true
		}
	}
}

// intend writes the INTENT record of a mover, leased until the message's
// visibility ends (no other run can receive it before). A park goes on
// without the ledger: the rescue must not depend on it.
func (r *run) intend(ctx context.Context, p *pass, it *item, now, receivedAt time.Time) {
	rec := r.record(p, it, Intent, now)
	rec.LeaseUntil = receivedAt.Add(r.visibility)
	it.lease = rec.LeaseUntil
	if it.ledgerErr != nil && it.fate == fatePark {
		it.first = false
		it.warn = it.ledgerErr
		return
	}
	cur, ok, err := r.e.ledger.Mark(ctx, rec)
	if !ok {
		it.first = false // no record of ours: another run (or an error) was first
	}
	switch {
	case err != nil && it.fate == fatePark:
		it.warn = fmt.Errorf("mark %s intent: %w", it.msg.id, err)
	case err != nil:
		it.fail(fmt.Errorf("mark %s intent: %w", it.msg.id, err))
	case ok:
		it.intent = true
	case cur.State.final():
		it.fate = fateRecover
	case cur.State == Intent:
		it.fate, it.vis = fateDelay, hide(cur.LeaseUntil, now, receivedAt)
	default:
		it.fail(fmt.Errorf("mark %s intent: the ledger holds %q", it.msg.id, cur.State))
	}
}

// send sends the movers, 10 per SendMessageBatch call per destination. For
// FIFO routes it sends in rounds of one message per group, so that a failed
// send stops the later messages of its group.
func (r *run) send(ctx context.Context, p *pass, items []*item) {
	var rounds [][]*item
	depth := map[string]int{}
	for _, it := range items {
		if !it.mover() {
			continue
		}
		k := 0
		if p.fifo {
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
		for _, dest := range [...]string{p.route.SourceURL, p.route.ParkingURL} {
			var batch []*item
			for _, it := range round {
				switch {
				case it.dest != dest:
				case p.fifo && failed[it.msg.group]:
					it.fate, it.vis = fateBlocked, keep
				default:
					batch = append(batch, it)
				}
			}
			if len(batch) == 0 {
				continue
			}
			errs := map[int]error{}
			if err := r.limiter.wait(ctx, len(batch)); err != nil {
				for i := range batch {
					errs[i] = err
				}
			} else if batch = r.renew(ctx, p, batch); len(batch) > 0 {
				errs = r.sendBatch(ctx, dest, batch)
			}
			for i, it := range batch {
				if err := errs[i]; err != nil {
					it.fail(fmt.Errorf("send %s to %s: %w", it.msg.id, dest, err))
					failed[it.msg.group] = true
					continue
				}
				it.sent = true
			}
			for _, it := range round {
				if it.fate == fateFail {
					failed[it.msg.group] = true // not renewed: stops its group too
				}
			}
		}
	}
}

// sendBatch sends batch to dest in SendMessageBatch calls of at most 10
// messages and at most envelope.MaxMessageBytes in all (SQS's limit on a
// batch request), and returns the error of each item (by index) not sent.
func (r *run) sendBatch(ctx context.Context, dest string, batch []*item) map[int]error {
	errs := map[int]error{}
	for start := 0; start < len(batch); {
		end, size := start, 0
		for end < len(batch) && end-start < MaxBatch {
			n := envelope.MessageBytes(len(aws.ToString(batch[end].entry.MessageBody)), batch[end].entry.MessageAttributes)
			if end > start && size+n > envelope.MaxMessageBytes {
				break
			}
			size += n
			end++
		}
		chunk := batch[start:end]
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
			out, err := r.e.queue.SendMessageBatch(sctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dest), Entries: entries})
			if err != nil {
				return nil, nil, err
			}
			return successful(out.Successful, func(e types.SendMessageBatchResultEntry) *string { return e.Id }), out.Failed, nil
		}) {
			errs[start+i] = err
		}
		start = end
	}
	return errs
}

// renew makes sure the run holds every item of batch for as long as a send
// may take (half the decision window): a run must never send a message
// whose lease it no longer holds, or a concurrent run that took it over
// sends it too. The lease of an item that ends sooner is extended, its
// visibility first (it fails when another run has received the message
// since), then its INTENT record (it fails when another run holds or has
// settled it). An item that cannot be extended is not sent; it fails and
// is left as it is. It returns the items to send.
func (r *run) renew(ctx context.Context, p *pass, batch []*item) []*item {
	now := r.now()
	var due []visibility
	for _, it := range batch {
		if it.lease.Sub(now) < r.e.opts.DecisionWindow/2 {
			due = append(due, visibility{id: it.msg.id, receipt: it.msg.receipt, seconds: int32(math.Ceil(r.visibility.Seconds()))})
		}
	}
	if len(due) == 0 {
		return batch
	}
	failed := changeVisibility(ctx, r.e.queue, p.route.DLQURL, due)
	return slices.DeleteFunc(batch, func(it *item) bool {
		if it.lease.Sub(now) >= r.e.opts.DecisionWindow/2 {
			return false
		}
		if err, bad := failed[it.msg.id]; bad {
			it.fail(fmt.Errorf("lease of %s ran out and could not be renewed: %w", it.msg.id, err))
			return true
		}
		lease := now.Add(r.visibility)
		if it.intent {
			rec := r.record(p, it, Intent, now)
			rec.LeaseUntil = lease
			if _, ok, err := r.e.ledger.Mark(ctx, rec); err != nil || !ok {
				it.fail(fmt.Errorf("lease of %s ran out and could not be renewed: ok=%v: %w", it.msg.id, ok, errors.Join(err, errLeaseLost)))
				return true
			}
		}
		it.lease = lease
		return false
	})
}

// errLeaseLost says another run holds or has settled a message.
var errLeaseLost = errors.New("another run holds the message")

// settle writes SENT or PARKED over the mover's INTENT. A failure is a
// warning: the message was sent, it is deleted all the same.
func (r *run) settle(ctx context.Context, p *pass, it *item, now time.Time) {
	rec := r.record(p, it, Sent, now)
	rec.ReplayCount = it.count
	switch it.fate {
	case fatePark:
		rec.State, rec.Reason = Parked, it.reason
	case fateApplied:
		rec.State, rec.Reason = Resolved, it.reason
	}
	_, ok, err := r.e.ledger.Mark(ctx, rec)
	switch {
	case err != nil:
		it.warn = fmt.Errorf("mark %s %s: %w", it.msg.id, rec.State, err)
	case !ok:
		it.warn = fmt.Errorf("mark %s %s: the INTENT of run %s is gone", it.msg.id, rec.State, r.id)
	}
}

// remove deletes from the DLQ what was sent now or by an earlier run.
func (r *run) remove(ctx context.Context, p *pass, items []*item) {
	var gone []*item
	var ids, receipts []string
	for _, it := range items {
		if it.sent || it.fate == fateRecover {
			gone = append(gone, it)
			ids, receipts = append(ids, it.msg.id), append(receipts, it.msg.receipt)
		}
	}
	if len(gone) == 0 {
		return
	}
	failed := deleteMessages(ctx, r.e.queue, p.route.DLQURL, ids, receipts)
	for _, it := range gone {
		err, bad := failed[it.msg.id]
		switch {
		case !bad:
		case it.sent:
			it.warn = err // the ledger says SENT: the next run deletes it
		default:
			it.fail(err)
		}
	}
}

// release hides delayed messages until due and holds the ones left for a
// later run until the pass ends (releasing the oldest held ones early when
// there are too many).
func (r *run) release(ctx context.Context, p *pass, items []*item) {
	var changes []visibility
	for _, it := range items {
		switch {
		case it.sent || it.fate == fateRecover || it.vis == keep:
		case it.vis == hold:
			p.held = append(p.held, visibility{id: it.msg.id, receipt: it.msg.receipt})
		default:
			changes = append(changes, visibility{id: it.msg.id, receipt: it.msg.receipt, seconds: it.vis})
		}
	}
	r.changeVisibility(ctx, p, changes, slog.LevelWarn)
	if n := len(p.held) - maxHeld; n > 0 {
		r.changeVisibility(ctx, p, p.held[:n], slog.LevelDebug)
		p.held = slices.Delete(p.held, 0, n)
	}
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

// account counts the outcomes, logs one line per message, and gives back
// the reservations of moves that did not happen.
func (r *run) account(ctx context.Context, p *pass, items []*item, plannedMoves, plannedReplays int) {
	c := &p.rs.Counts
	c.Examined += len(items)
	moves, replays := 0, 0
	for _, it := range items {
		moved := it.mover() && (it.sent || r.req.DryRun) // an applied removal is no move: the cap counts replays and parks
		if it.first {
			c.DeadLettered++
		}
		switch it.fate {
		case fateReplay:
			if moved {
				c.Replayed++
				replays++
				if it.msg.orderID != "" && len(p.rs.ReplayedOrders) < maxReplayedOrders && !slices.Contains(p.rs.ReplayedOrders, it.msg.orderID) {
					p.rs.ReplayedOrders = append(p.rs.ReplayedOrders, it.msg.orderID)
				}
			}
		case fatePark:
			if moved {
				c.Parked[it.reason]++
			}
		case fateRecover:
			c.Recovered++
		case fateApplied:
			if it.sent || r.req.DryRun {
				c.Applied++
			}
		case fateDelay:
			c.Delayed++
		case fateBlocked:
			c.Blocked++
		case fateSkip:
			c.Skipped++
		case fateDefer:
			c.Deferred++
		case fateFail:
			c.Errors++
		}
		if moved {
			moves++
		}
		if it.warn != nil {
			c.Errors++
		}
		r.logItem(ctx, p, it)
	}
	r.moved += moves - plannedMoves
	if p.replayLeft >= 0 {
		p.replayLeft += plannedReplays - replays
	}
}

// maxReplayedOrders bounds RouteSummary.ReplayedOrders.
const maxReplayedOrders = 100

func (r *run) logItem(ctx context.Context, p *pass, it *item) {
	level := slog.LevelDebug
	switch {
	case it.fate == fateFail || it.warn != nil:
		level = slog.LevelWarn
	case it.fate == fateReplay || it.fate == fatePark || it.fate == fateRecover || it.fate == fateApplied:
		level = slog.LevelInfo
	}
	if !r.e.opts.Logger.Enabled(ctx, level) {
		return
	}
	count := it.count
	if !it.mover() {
		count = it.facts.ReplayCount
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("runId", r.id), slog.String("messageId", it.msg.id), slog.String("outcome", outcomes[it.fate]),
		slog.String("queue", p.route.DLQURL), slog.Int("replayCount", count))
	if it.msg.orderID != "" {
		attrs = append(attrs, slog.String("orderId", it.msg.orderID))
	}
	switch {
	case it.fate == fatePark || it.fate == fateApplied:
		attrs = append(attrs, slog.String("reason", it.reason))
	case it.fate == fateSkip:
		attrs = append(attrs, slog.String("reason", it.msg.reason))
	}
	if it.mover() {
		attrs = append(attrs, slog.String("to", it.dest))
	}
	if r.req.DryRun {
		attrs = append(attrs, slog.Bool("dryRun", true))
	}
	if it.err != nil {
		attrs = append(attrs, slog.String("error", it.err.Error()))
	}
	if it.warn != nil {
		attrs = append(attrs, slog.String("warning", it.warn.Error()))
	}
	r.e.opts.Logger.LogAttrs(ctx, level, "replay message", attrs...)
}
