package replay

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// A message the pass leaves for a later run (deferred by a closed gate, the
// canary, the breaker or the cap; rejected by a filter; every message of a
// dry run; one examined before in the pass) is deferred: hidden until the pass
// ends, so that the pass's next receives reach the rest of the DLQ instead
// of the same messages again (SQS FIFO always returns the first message of
// a group, and the emulator and small standard queues the oldest first).
// The hide is set when the message is deferred, so that a pass covers every
// message its DLQ held at its start, however many it defers: the pass does
// not keep them to hide them. It remembers the first maxDeferred to release
// them when it ends (the next run then finds them visible at once); the
// others become visible when their hide ends, at the end the pass expected.

// maxDeferred bounds the messages a pass remembers to release when it ends:
// about 0.5 KiB each (id and receipt handle).
const maxDeferred = 1000

// deferUntil is when the pass expects to end: the run's deadline when it has
// one; otherwise three times the rest of the pass at its pace so far, plus
// a decision window. It holds the run's lock.
func (w *worker) deferUntil(ctx context.Context, now time.Time) time.Time {
	r, p := w.r, w.p
	if deadline, ok := ctx.Deadline(); ok {
		return deadline
	}
	rest := r.e.opts.DecisionWindow
	if elapsed := now.Sub(p.started); p.received > 0 && elapsed > 0 {
		left := max(p.rs.Depth-p.received, maxBatch)
		rest += 3 * time.Duration(float64(elapsed)*float64(left)/float64(p.received))
	}
	return now.Add(rest)
}

// deferral is the visibility that defers a message sent at sentAt (zero when
// unknown) and received at receivedAt until end: never past the start of
// its rescue window (it must be seen again before it can expire), and not
// changed at all (seconds 0) when its receive already hides it as long.
func (w *worker) deferral(id, receipt string, sentAt, receivedAt, now, end time.Time) visibility {
	r, p := w.r, w.p
	v := visibility{id: id, receipt: receipt}
	if !sentAt.IsZero() && p.retention > 0 {
		end = minTime(end, sentAt.Add(p.retention).Add(-r.e.opts.ExpiryRescueWindow))
	}
	if end.After(receivedAt.Add(r.visibility)) {
		v.seconds = hide(end, now, receivedAt)
	}
	return v
}

// deferMessages defers raw received messages (a batch received ahead that the
// worker will not examine, or messages examined before in the pass). It
// holds the run's lock and returns the visibility changes to make.
func (w *worker) deferMessages(ctx context.Context, msgs []types.Message, receivedAt time.Time) []visibility {
	r, p := w.r, w.p
	now := r.now()
	end := w.deferUntil(ctx, now)
	vs := make([]visibility, 0, len(msgs))
	for _, m := range msgs {
		sentAt := millis(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)])
		vs = append(vs, w.deferral(aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle), sentAt, receivedAt, now, end))
	}
	return p.noteDeferred(vs)
}

// noteDeferred remembers the first maxDeferred messages deferred, to release when the pass
// ends, and returns the visibility changes that hide them until then. The
// caller holds the run's lock.
func (p *pass) noteDeferred(vs []visibility) []visibility {
	changes := vs[:0:0]
	for _, v := range vs {
		if len(p.deferred) < maxDeferred {
			p.deferred = append(p.deferred, visibility{id: v.id, receipt: v.receipt})
		}
		if v.seconds > 0 {
			changes = append(changes, v)
		}
	}
	return changes
}

// deferAhead defers the messages of a batch received ahead that the worker
// will not examine.
func (w *worker) deferAhead(ctx context.Context, got received) {
	r, p := w.r, w.p
	if len(got.msgs) == 0 {
		return
	}
	r.mu.Lock()
	changes := w.deferMessages(ctx, got.msgs, got.at)
	r.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	r.changeVisibility(rctx, p, changes, slog.LevelDebug)
}
