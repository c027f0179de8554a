package sim

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/invoicing"
	"github.com/homingdlq/homing/internal/order"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// Replay are the settings of the replay function.
type Replay struct {
	Options  replay.Options // the policy and limits (the ports and hooks are the simulation's)
	Schedule time.Duration  // EventBridge rate
	Timeout  time.Duration  // the function's timeout
	Health   bool           // the health gate probes the tax service
	Canary   bool           // the canary gate reads the consumer's completions
}

// leases tracks who holds each DLQ message's INTENT, from the ledger marks
// that succeeded. It is safe for concurrent use.
type leases struct {
	mu     sync.Mutex
	holder map[string]lease // DLQ message id -> holder
}

type lease struct {
	run   string
	until time.Time
}

func (l *leases) mark(r replay.MessageRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.State == replay.Intent {
		l.holder[r.MessageID] = lease{run: r.RunID, until: r.LeaseUntil}
		return
	}
	if r.State != replay.Seen {
		delete(l.holder, r.MessageID)
	}
}

// holding returns a DLQ message of original id orig whose INTENT this run
// marked and still holds at now, and whether there is one; else the last
// such message.
func (r *runState) holding(l *leases, orig string, now time.Time) (string, bool) {
	r.mu.Lock()
	ids := slices.Clone(r.intents[orig])
	r.mu.Unlock()
	last := ""
	for _, id := range ids {
		last = id
		if h, ok := l.get(id); ok && h.run == r.id && now.Before(h.until) {
			return id, true
		}
	}
	return last, false
}

// describeLease says who holds the lease of DLQ message id.
func (s *Sim) describeLease(id string) string {
	h, ok := s.leases.get(id)
	if !ok {
		return "no INTENT stands (another run settled it)"
	}
	return fmt.Sprintf("run %s holds it until %s", h.run, fmtOffset(h.until.Sub(s.start)))
}

func (l *leases) get(id string) (lease, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.holder[id]
	return h, ok
}

// replayRun runs the replay engine once, with its ports wrapped for this
// run, and returns its summary.
func (s *Sim) replayRun(kind string, req replay.Request, crash crashPlan, overlap func(context.Context) error) replay.Summary {
	s.runs++
	id := fmt.Sprintf("%s-%04d", kind, s.runs)
	now := s.clock.Now()
	inv := &invocation{id: id, deadline: now.Add(s.cfg.Replay.Timeout)}
	ctx, cancel := context.WithCancel(withSimDeadline(context.Background(), inv.deadline))
	defer cancel()
	inv.cancel = cancel
	rs := &runState{id: id, inv: inv, crash: crash, overlap: overlap, reset: req.ResetCount, filter: req.Filter, orig: map[string]string{}, intents: map[string][]string{}}
	opts := s.cfg.Replay.Options
	opts.Now = s.clock.Now
	opts.Sleep = s.clock.Sleep
	opts.Logger = slog.New(&traceHandler{s: s, actor: "replay/" + id})
	opts.Metrics = nil
	opts.Health = nil
	if s.cfg.Replay.Health {
		opts.Health = s.tax.Health
	}
	opts.Completions, opts.PayloadHash = nil, nil
	if s.cfg.Replay.Canary {
		// As the replay function is wired (functions/replay): the canary,
		// the breaker, and the removal of dead letters already applied.
		opts.Completions = &replaytest.MemoryCompletions{Store: s.store.MemoryStore, Scope: consumerName, Now: s.clock.Now}
		opts.PayloadHash = invoicing.PayloadHash
	}
	engine := replay.New(&queue{Queue: s.sqs.q, s: s, run: rs}, &ledger{Ledger: s.ledger, s: s, run: rs}, opts)
	req.RunID = id
	s.trace.add(now, "replay/"+id, "start", "", fmt.Sprintf("crash=%v reset=%v max=%d filter=%v", crash, req.ResetCount, req.Max, req.Filter.OrderIDs))
	sum, err := engine.Run(ctx, req)
	detail := fmt.Sprintf("replayed=%d parked=%v recovered=%d delayed=%d errors=%d", sum.Total.Replayed, sum.Total.Parked, sum.Total.Recovered, sum.Total.Delayed, sum.Total.Errors)
	if len(sum.Gates) > 0 && sum.Gates[0].Decision == replay.GateClosed {
		detail += " health=closed"
	}
	for _, r := range sum.Routes {
		detail += " stop=" + string(r.StopReason)
		for _, g := range r.Gates {
			if g.Decision == replay.GateClosed || g.Decision == replay.GateLimited {
				detail += " " + g.Name + "=" + string(g.Decision)
			}
		}
	}
	if err != nil {
		detail += " err=" + err.Error()
	}
	s.trace.add(s.clock.Now(), "replay/"+id, "end", "", detail)
	s.stats.Runs++
	return sum
}

// queue is the replay engine's SQS client for one run: the shared model
// with failed calls, the run's crash, slow sends (and a run starting in the
// middle of one), and the bookkeeping of what the run sent and deleted.
type queue struct {
	replay.Queue
	s   *Sim
	run *runState
}

func (q *queue) fault(op string) error {
	if q.run.inv.dead() {
		return errCrashed
	}
	if q.s.dice.chance("replay-sqs-"+op, q.run.id, q.s.cfg.Faults.ReplayQueueError) {
		q.s.trace.add(q.s.clock.Now(), "replay/"+q.run.id, op+" failed", "", "injected")
		return fmt.Errorf("%s: %w", op, errSQS)
	}
	return nil
}

func (q *queue) crashNow(why string) {
	q.run.inv.kill(why)
	q.s.book.Lock()
	defer q.s.book.Unlock()
	q.s.stats.RunCrashes++
	q.s.trace.add(q.s.clock.Now(), "replay/"+q.run.id, "crash", "", why)
}

// ReceiveMessage implements replay.Queue.
func (q *queue) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := q.fault("ReceiveMessage"); err != nil {
		return nil, err
	}
	out, err := q.Queue.ReceiveMessage(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	n := q.run.recvs.Add(1)
	q.s.sqs.received(out.Messages)
	q.run.mu.Lock()
	for _, m := range out.Messages {
		id := aws.ToString(m.MessageId)
		orig := id
		if meta, _, found, err := replay.Read(m.MessageAttributes); err == nil && found && meta.OriginalMessageID != "" {
			orig = meta.OriginalMessageID
		}
		q.run.orig[orig] = id
	}
	q.run.mu.Unlock()
	if len(out.Messages) > 0 {
		q.s.trace.add(q.s.clock.Now(), "replay/"+q.run.id, "receive", q.s.ids(out.Messages), "")
	}
	if q.run.crash.Op == "after-receive" && int(n) == q.run.crash.At {
		q.crashNow("after a receive")
	}
	return out, nil
}

// SendMessageBatch implements replay.Queue.
func (q *queue) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if err := q.fault("SendMessageBatch"); err != nil {
		return nil, err
	}
	q.run.mu.Lock()
	q.run.sends++
	sends := q.run.sends
	f := q.run.overlap
	q.run.overlap = nil
	q.run.mu.Unlock()
	if f != nil {
		if err := f(ctx); err != nil {
			return nil, fmt.Errorf("SendMessageBatch: %w", err)
		}
	}
	now := q.s.clock.Now()
	dest := aws.ToString(in.QueueUrl)
	type sent struct {
		meta replay.Metadata
		body string
		dlq  string
	}
	byEntry := map[string]sent{}
	for _, e := range in.Entries {
		meta, _, _, _ := replay.Read(e.MessageAttributes)
		dlqID, held := q.run.holding(q.s.leases, meta.OriginalMessageID, now)
		byEntry[aws.ToString(e.Id)] = sent{meta: meta, body: aws.ToString(e.MessageBody), dlq: dlqID}
		_, stood := q.s.leases.get(dlqID)
		rescue := dest == q.s.sqs.parking && dlqID == "" && !stood // parked without the ledger: the run holds its visibility only
		if !held && !rescue {
			q.s.violate("lease-lost", q.s.subject(dlqID, q.s.sqs.pubOf(dlqID)),
				fmt.Sprintf("run %s sends it (count %d) without holding its INTENT lease: %s", q.run.id, meta.ReplayCount, q.s.describeLease(dlqID)))
		}
	}
	out, err := q.Queue.SendMessageBatch(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	q.s.book.Lock()
	for _, ok := range out.Successful {
		e := byEntry[aws.ToString(ok.Id)]
		id := aws.ToString(ok.MessageId)
		dedup := q.s.sqs.pubOf(id) >= 0 // FIFO: SQS answered with the id of an earlier send
		n := q.s.sqs.descend(id, e.meta.OriginalMessageID, e.body, "replay")
		if dest == q.s.sqs.parking {
			q.s.parked(q.run, n, e.dlq, id, e.meta)
			continue
		}
		q.s.replayed(q.run, n, id, e.meta, dedup)
	}
	q.s.book.Unlock()
	if q.run.crash.Op == "after-send" && sends == q.run.crash.At {
		q.crashNow("between the send and the SENT mark")
	}
	return out, nil
}

// DeleteMessageBatch implements replay.Queue.
func (q *queue) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	q.run.mu.Lock()
	q.run.deletes++
	deletes := q.run.deletes
	q.run.mu.Unlock()
	if q.run.crash.Op == "before-delete" && deletes == q.run.crash.At {
		q.crashNow("between the SENT mark and the delete")
	}
	if err := q.fault("DeleteMessageBatch"); err != nil {
		return nil, err
	}
	out, err := q.Queue.DeleteMessageBatch(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	q.s.book.Lock()
	defer q.s.book.Unlock()
	receipts := map[string]string{}
	for _, e := range in.Entries {
		receipts[aws.ToString(e.Id)] = aws.ToString(e.ReceiptHandle)
	}
	for _, ok := range out.Successful {
		id := q.s.sqs.deleted(receipts[aws.ToString(ok.Id)], "")
		n := q.s.sqs.pubOf(id)
		if n >= 0 {
			q.s.removed[n] = true
		}
		q.s.trace.add(q.s.clock.Now(), "replay/"+q.run.id, "delete", q.s.subject(id, n), "")
	}
	return out, nil
}

// ChangeMessageVisibility implements replay.Queue.
func (q *queue) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	if err := q.fault("ChangeMessageVisibility"); err != nil {
		return nil, err
	}
	return q.Queue.ChangeMessageVisibility(ctx, in, opts...)
}

// ChangeMessageVisibilityBatch implements replay.Queue.
func (q *queue) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if err := q.fault("ChangeMessageVisibilityBatch"); err != nil {
		return nil, err
	}
	return q.Queue.ChangeMessageVisibilityBatch(ctx, in, opts...)
}

// GetQueueAttributes implements replay.Queue.
func (q *queue) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if err := q.fault("GetQueueAttributes"); err != nil {
		return nil, err
	}
	return q.Queue.GetQueueAttributes(ctx, in, opts...)
}

// replayed records a replay send of publication n.
func (s *Sim) replayed(run *runState, n int, id string, meta replay.Metadata, dedup bool) {
	s.stats.Replays++
	if dedup {
		s.stats.ReplaysDeduplicated++
	}
	if n >= 0 && run.reset && !dedup {
		s.resetSends[n]++
	}
	if n >= 0 {
		counts := s.replayCounts[n]
		if counts == nil {
			counts = map[string]int{}
			s.replayCounts[n] = counts
		}
		key := fmt.Sprintf("%d/%s", meta.ReplayCount, meta.ResetAt.Format(time.RFC3339Nano))
		counts[key]++
		if counts[key] > 1 && !dedup {
			s.stats.DuplicateReplays++
			s.dupReplays[n]++
		}
	}
	s.trace.add(s.clock.Now(), "replay/"+run.id, "replayed", s.subject(id, n), fmt.Sprintf("count %d dedup=%v", meta.ReplayCount, dedup))
}

// parked records a park of publication n and checks that it was due.
func (s *Sim) parked(run *runState, n int, dlqID, id string, meta replay.Metadata) {
	s.stats.Parked[meta.Reason]++
	s.trace.add(s.clock.Now(), "replay/"+run.id, "parked", s.subject(id, n), meta.Reason)
	if n < 0 {
		return
	}
	p := s.pubs[n]
	if ids := run.filter.OrderIDs; len(ids) > 0 && !slices.Contains(ids, p.OrderID) {
		s.stats.FilteredParks++
		s.violate("filter-ignored", s.subject(dlqID, n), fmt.Sprintf("run %s, filtered to orders %v, parked it (%s)", run.id, ids, meta.Reason))
	}
	if p.Hash != "" && s.acked[p.OrderID] == p.Hash {
		s.violate("parked-completed", s.subject(dlqID, n),
			fmt.Sprintf("parked (%s) although its order was already completed with the same payload", meta.Reason))
	}
	if meta.Reason != replay.ReasonReplayExhausted || run.reset {
		return
	}
	own := 0
	for key := range s.replayCounts[n] {
		var c int
		fmt.Sscanf(key, "%d/", &c)
		own = max(own, c)
	}
	if max := s.cfg.Replay.Options.MaxReplays; own < max {
		s.violate("budget-not-own", s.subject(dlqID, n),
			fmt.Sprintf("parked as replay-exhausted after %d replays of its own (max %d)", own, max))
	}
	if f := s.failures[n]; f.replayed > 0 && f.replayed == f.outage {
		s.violate("parked-for-outage", s.subject(dlqID, n),
			fmt.Sprintf("parked as replay-exhausted although all %d of its replays failed in a tax-service outage", f.replayed))
	}
}

// orderOf returns the orderId of a body, for traces.
func orderOf(body string) string {
	if o, err := order.Parse([]byte(body), 0); err == nil {
		return o.OrderID
	}
	return replay.OrderID(body)
}
