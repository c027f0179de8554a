package replay

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
)

// send sends the movers, 10 per SendMessageBatch call per destination. The
// batch waits for the rate limit once, for all its movers, then renews the
// lease of every one that needs it, then sends them back to back: a batch
// that both replays and parks never waits between its sends, so no lease
// runs out between a send and the batch's records and deletes. For FIFO
// routes it sends in rounds of one message per group, so that a failed send
// stops the later messages of its group (see groupOrder).
func (w *worker) send(ctx context.Context, b *batch) {
	r, p := w.r, w.p
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
	w.renew(ctx, movers) // an item whose lease cannot be renewed fails
	order := newGroupOrder(p.route)
	for _, round := range rounds(p.route, movers) {
		for _, it := range round {
			order.block(it) // behind a message of its group that failed
		}
		for _, dest := range [...]string{p.route.SourceURL, p.route.ParkingURL} {
			w.sendRound(ctx, dest, round)
		}
		for _, it := range round {
			order.note(it)
		}
	}
}

// rounds splits the movers of a FIFO route into rounds of at most one
// message per group, in receive order; a standard route's movers are one
// round.
func rounds(rt Route, movers []*item) [][]*item {
	if !rt.FIFO() {
		return [][]*item{movers}
	}
	var out [][]*item
	depth := map[string]int{}
	for _, it := range movers {
		k := depth[it.msg.group]
		depth[it.msg.group]++
		if k == len(out) {
			out = append(out, nil)
		}
		out[k] = append(out[k], it)
	}
	return out
}

// sendRound sends the movers of a round bound for dest, and fails those
// whose send failed.
func (w *worker) sendRound(ctx context.Context, dest string, round []*item) {
	var out []*item
	for _, it := range round {
		if it.dest == dest && it.outcome.moves() {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return
	}
	errs := w.sendBatch(ctx, dest, out)
	for i, it := range out {
		if err := errs[i]; err != nil {
			it.fail(fmt.Errorf("send %s to %s: %w", it.msg.id, dest, err))
			continue
		}
		it.sent = true
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
func (w *worker) sendBatch(ctx context.Context, dest string, out []*item) map[int]error {
	r := w.r
	errs := map[int]error{}
	for start := 0; start < len(out); {
		end, size := start, 0
		for end < len(out) && end-start < maxBatch {
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
func (w *worker) renew(ctx context.Context, out []*item) {
	r, p := w.r, w.p
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
			rec := r.record(p, it, record.Intent, now)
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
