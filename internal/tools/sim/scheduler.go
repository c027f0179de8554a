package sim

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/payload"
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

// schedule is EventBridge's rule: at each tick of the rate it draws the
// tick's fate (Faults.Ticks: on time, late, missed, or in a pause), and it
// starts the runs that are due, in the order of their start times (a late
// run may start after a later tick's). Ticks the clock jumped past fire
// once.
func (s *Sim) schedule(now time.Time) {
	if !now.Before(s.tick) {
		s.drawTick(s.tick)
		s.tick = s.tick.Add(s.cfg.Replay.Schedule)
		if !s.tick.After(now) {
			s.tick = now.Add(s.cfg.Replay.Schedule)
		}
	}
	for len(s.due) > 0 && !s.due[0].After(s.clock.Now()) {
		at := s.due[0]
		s.due = s.due[1:]
		if s.paused(at) {
			s.trace.add(s.clock.Now(), "eventbridge", "tick paused", "", "the schedule was disabled after the tick was drawn")
			continue
		}
		s.scheduledRun()
	}
}

// drawTick decides the fate of the tick at nominal.
func (s *Sim) drawTick(nominal time.Time) {
	s.ticks++
	key := strconv.Itoa(s.ticks)
	t := s.cfg.Faults.Ticks
	switch {
	case s.paused(nominal):
		s.trace.add(nominal, "eventbridge", "tick paused", "", "")
		return
	case s.dice.chance("tick-missed", key, t.Missed):
		s.trace.add(nominal, "eventbridge", "tick missed", "", "")
		return
	}
	at := nominal
	if s.dice.chance("tick-late", key, t.Late) {
		late := time.Duration(s.dice.at("tick-late-by", key, 0) * float64(t.LateBy)).Round(time.Second)
		at = at.Add(late)
		s.trace.add(nominal, "eventbridge", "tick late", "", "its run starts "+late.String()+" late")
	}
	i := slices.IndexFunc(s.due, func(t time.Time) bool { return t.After(at) })
	if i < 0 {
		i = len(s.due)
	}
	s.due = slices.Insert(s.due, i, at)
}

// paused reports whether the schedule is disabled at t.
func (s *Sim) paused(t time.Time) bool {
	off := t.Sub(s.start)
	return slices.ContainsFunc(s.pauses, func(w Window) bool { return off >= w.From && off < w.To })
}

// pauseAfterProbe disables the schedule for Faults.Ticks.PauseAfterProbe
// once, when sum, a run's summary, probed the lane's breaker.
func (s *Sim) pauseAfterProbe(sum replay.Summary) {
	d := s.cfg.Faults.Ticks.PauseAfterProbe
	if d <= 0 || s.probePaused {
		return
	}
	if !slices.ContainsFunc(sum.Routes, func(r replay.RouteSummary) bool { return r.Route == s.sqs.route().Name && r.Probe }) {
		return
	}
	s.probePaused = true
	from := s.clock.Now().Sub(s.start)
	s.pauses = append(s.pauses, Window{From: from, To: from + d})
	s.trace.add(s.clock.Now(), "eventbridge", "schedule paused", "", "for "+d.String()+", after run "+sum.RunID+" probed the breaker")
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

func (l *leases) mark(r record.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.State == record.Intent {
		l.holder[r.MessageID] = lease{run: r.RunID, until: r.LeaseUntil}
		return
	}
	if r.State != record.Seen {
		delete(l.holder, r.MessageID)
	}
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
	rs := &runState{id: id, inv: inv, crash: crash, overlap: overlap, reset: req.ResetCount, filter: req.Filter,
		received: map[string]receivedMessage{}, byBody: map[string][]string{}, intended: map[string]bool{}, unintended: map[string]bool{}, sent: map[string]bool{}, deleted: map[string]bool{}, deleteFailed: map[string]bool{}}
	opts := s.cfg.Replay.Options
	opts.Now = s.clock.Now
	opts.Sleep = s.clock.Sleep
	opts.Logger = slog.New(&traceHandler{s: s, actor: "replay/" + id})
	opts.Metrics = nil
	opts.Health = nil
	if s.cfg.Replay.Health {
		opts.Health = s.tax.Health
	}
	opts.Completions = nil
	if s.cfg.Replay.Canary {
		// As the replay function is wired (functions/replay): the canary,
		// the breaker, and the removal of dead letters already applied, on
		// the route whose consumer writes completion records.
		opts.Completions = &replaytest.MemoryCompletions{Store: s.store.MemoryStore, Scope: consumerName, Now: s.clock.Now}
	}
	engine := replay.New(&queue{Queue: s.sqs.q, s: s, run: rs}, &ledger{Ledger: s.ledger, s: s, run: rs}, opts)
	req.RunID = id
	rec := RunRecord{ID: id, Kind: kind, Filter: req.Filter, DryRun: req.DryRun, Reset: req.ResetCount, Start: now, DLQ: -1}
	covered := slices.ContainsFunc(req.Routes, func(r replay.Route) bool { return r.DLQURL == s.sqs.dlq })
	if covered {
		rec.DLQ = s.cov.start(s, id)
	}
	s.trace.add(now, "replay/"+id, "start", "", fmt.Sprintf("crash=%v reset=%v dry=%v max=%d filter=%v", crash, req.ResetCount, req.DryRun, req.Max, req.Filter.Keys))
	sum, err := engine.Run(ctx, req)
	rs.mu.Lock()
	rs.evidence = err == nil && !inv.dead() && len(rs.replayedPubs) >= 2
	rs.mu.Unlock()
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
	s.pauseAfterProbe(sum)
	s.stats.Runs++
	if covered {
		s.cov.end(s, id, sum)
	}
	rec.Summary = sum
	rs.mu.Lock()
	rec.Replayed = slices.Clone(rs.replayedPubs)
	rs.mu.Unlock()
	s.runRecords = append(s.runRecords, rec)
	return sum
}

// RunRecord is one replay run as the simulation saw it.
type RunRecord struct {
	ID     string // sched-0001, operator-0002, ...
	Kind   string // sched, operator, operator-reset, or a scenario's
	Filter replay.Filter
	DryRun bool
	Reset  bool
	Start  time.Time
	// DLQ is the number of messages in the DLQ (visible or not) when the
	// run started; -1 for a run that does not read the DLQ.
	DLQ      int
	Summary  replay.Summary
	Replayed []int // the publications the run replayed to the source queue
}

// queue is the replay engine's SQS client for one run: the shared model
// with failed calls, the run's crash, slow sends (and a run starting in the
// middle of one), and the bookkeeping of what the run sent and deleted.
type queue struct {
	replay.Queue
	s   *Sim
	run *runState
}

// fault fails a call of op on queueURL now and then. The roll is counted
// per run, operation and queue: the engine reads the source queue's
// attributes beside the DLQ's, and which of the two asks first must not
// decide which one fails, or a seed would not replay.
func (q *queue) fault(ctx context.Context, op, queueURL string) error {
	if q.run.inv.dead() {
		return errCrashed
	}
	if err := q.s.expired(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if q.s.dice.chance("replay-sqs-"+op, q.run.id+" "+queueURL, q.s.cfg.Faults.ReplayQueueError) {
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
	if err := q.fault(ctx, "ReceiveMessage", aws.ToString(in.QueueUrl)); err != nil {
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
		body := aws.ToString(m.Body)
		got := receivedMessage{body: body, orig: id, sentAt: sentAt(m)}
		if meta, ok := q.s.ours(m.MessageAttributes, body, aws.ToString(in.QueueUrl)); ok {
			got.orig, got.count, got.refunds, got.meta, got.sealed = meta.OriginalMessageID, meta.ReplayCount, meta.Refunds, meta, true
		}
		if _, again := q.run.received[id]; !again {
			q.run.byBody[body] = append(q.run.byBody[body], id)
		}
		q.run.received[id] = got
	}
	q.run.mu.Unlock()
	if aws.ToString(in.QueueUrl) == q.s.sqs.dlq {
		q.s.cov.hide(out.Messages, q.s.clock.Now().Add(time.Duration(in.VisibilityTimeout)*time.Second))
	}
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
	if err := q.fault(ctx, "SendMessageBatch", aws.ToString(in.QueueUrl)); err != nil {
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
		dlq  string // the message of the queue the run reads that the entry carries
	}
	byEntry := map[string]sent{}
	taken := map[string]bool{}
	for _, e := range in.Entries {
		meta, _, _, _ := replay.Read(e.MessageAttributes)
		body := aws.ToString(e.MessageBody)
		sealed := q.s.sealed(meta, body, dest)
		q.run.mu.Lock()
		dlqID := q.run.source(q.s.leases, body, meta, sealed, dest == q.s.sqs.parking, now, taken)
		taken[dlqID] = true
		intended := q.run.intended[dlqID]
		q.run.mu.Unlock()
		byEntry[aws.ToString(e.Id)] = sent{meta: meta, body: body, dlq: dlqID}
		h, stood := q.s.leases.get(dlqID)
		held := stood && h.run == q.run.id && now.Before(h.until)
		// Parked without the ledger (the rescue): the run holds the
		// message's visibility only, and no other run's lease stands.
		rescue := dest == q.s.sqs.parking && !intended && !(stood && now.Before(h.until))
		if dest != q.s.sqs.parking {
			q.s.replayedCompleted(q.run, dlqID)
		}
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
		n := q.s.sqs.descend(id, e.dlq, e.body, "replay")
		q.s.sentTwice(q.run, e.dlq, n, dest)
		q.run.mu.Lock()
		q.run.sent[e.dlq] = true
		if dest != q.s.sqs.parking && n >= 0 && !dedup {
			q.run.replayedPubs = append(q.run.replayedPubs, n)
		}
		q.run.mu.Unlock()
		for _, src := range in.Entries {
			if aws.ToString(src.Id) == aws.ToString(ok.Id) {
				what := copyReplayed
				if dest == q.s.sqs.parking {
					what = copyParked
				}
				q.s.lastSent[what] = sentAttribute{attr: src.MessageAttributes[envelope.ReplayAttributeName], what: "copy of " + id}
			}
		}
		if !dedup {
			q.s.lineage(q.run, n, e.dlq, id, dest, e.meta)
		}
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

// ours returns the metadata of a message of body read from the queue at
// reads when it is the engine's: its seal verifies for the queue it came
// through (the source queue for a replay, reads for a parked message), as
// the engine tells its own (replay/seal.go).
func (s *Sim) ours(attrs map[string]types.MessageAttributeValue, body, reads string) (replay.Metadata, bool) {
	meta, _, found, err := replay.Read(attrs)
	if err != nil || !found {
		return replay.Metadata{}, false
	}
	via := s.sqs.source
	if meta.Reason != "" {
		via = reads
	}
	return meta, s.sealed(meta, body, via)
}

// sealed reports whether meta carries the engine's seal for a message of
// body sent to the queue at url.
func (s *Sim) sealed(meta replay.Metadata, body, url string) bool {
	return meta.Seal != "" && meta.Sealed(s.sealKey, body, url).Seal == meta.Seal
}

// sentAt is a message's SentTimestamp; zero when absent.
func sentAt(m types.Message) time.Time {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
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
	if err := q.fault(ctx, "DeleteMessageBatch", aws.ToString(in.QueueUrl)); err != nil {
		if !q.run.inv.dead() {
			q.run.mu.Lock()
			for _, e := range in.Entries {
				q.run.deleteFailed[q.s.sqs.idOf(aws.ToString(e.ReceiptHandle))] = true
			}
			q.run.mu.Unlock()
		}
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
		q.s.resettle(q.run, id)
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
	if err := q.fault(ctx, "ChangeMessageVisibility", aws.ToString(in.QueueUrl)); err != nil {
		return nil, err
	}
	out, err := q.Queue.ChangeMessageVisibility(ctx, in, opts...)
	if err == nil && aws.ToString(in.QueueUrl) == q.s.sqs.dlq {
		q.s.cov.hideID(q.s.sqs.idOf(aws.ToString(in.ReceiptHandle)), q.s.clock.Now().Add(time.Duration(in.VisibilityTimeout)*time.Second))
	}
	return out, err
}

// ChangeMessageVisibilityBatch implements replay.Queue.
func (q *queue) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if err := q.fault(ctx, "ChangeMessageVisibilityBatch", aws.ToString(in.QueueUrl)); err != nil {
		return nil, err
	}
	out, err := q.Queue.ChangeMessageVisibilityBatch(ctx, in, opts...)
	if err == nil && aws.ToString(in.QueueUrl) == q.s.sqs.dlq {
		now := q.s.clock.Now()
		for _, ok := range out.Successful {
			for _, e := range in.Entries {
				if aws.ToString(e.Id) == aws.ToString(ok.Id) {
					q.s.cov.hideID(q.s.sqs.idOf(aws.ToString(e.ReceiptHandle)), now.Add(time.Duration(e.VisibilityTimeout)*time.Second))
				}
			}
		}
	}
	return out, err
}

// GetQueueAttributes implements replay.Queue.
func (q *queue) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if err := q.fault(ctx, "GetQueueAttributes", aws.ToString(in.QueueUrl)); err != nil {
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
		s.replayRuns[n] = append(s.replayRuns[n], run)
		counts := s.replayCounts[n]
		if counts == nil {
			counts = map[string]int{}
			s.replayCounts[n] = counts
		}
		key := fmt.Sprintf("%d/%d/%s", meta.ReplayCount, meta.Refunds, meta.ResetAt.Format(time.RFC3339Nano))
		counts[key]++
		if counts[key] > 1 && !dedup {
			s.stats.DuplicateReplays++
			s.dupReplays[n]++
		}
	}
	s.trace.add(s.clock.Now(), "replay/"+run.id, "replayed", s.subject(id, n), fmt.Sprintf("count %d refunds %d dedup=%v", meta.ReplayCount, meta.Refunds, dedup))
}

// lineage records the replays behind message id, which run sent to dest
// carrying dlqID: one more than dlqID's for a replay (one for a replay
// that resets the count), as many for a park. It is what the bounds
// invariant counts and what "its own replays" are: the sends the
// simulation saw, not the counts in the metadata. It holds s.book.
func (s *Sim) lineage(run *runState, n int, dlqID, id, dest string, meta replay.Metadata) {
	g := s.sqs.replaysOf(dlqID)
	switch {
	case dest == s.sqs.parking:
	case run.reset:
		g = 1
	default:
		g++
	}
	s.sqs.setReplays(id, g)
	if dest == s.sqs.parking {
		return
	}
	s.stats.MostReplays = max(s.stats.MostReplays, g)
	if bound := 2 * s.cfg.Replay.Options.MaxReplays; g > bound {
		s.violate("replayed-too-often", s.subject(dlqID, n), fmt.Sprintf(
			"run %s sends replay number %d of its lineage since its publication (or its count's reset): more than 2 x MaxReplays = %d (its metadata says count %d, refunds %d)",
			run.id, g, bound, meta.ReplayCount, meta.Refunds))
	}
}

// sentTwice checks that no two runs send the same message of the queue
// they read: the second send is allowed only when the first run crashed,
// or its delete of the message failed by an injected fault (the next run
// then finds its INTENT expired, or its SENT record, and sends again or
// removes it: the duplicate the idempotent consumer absorbs). It holds
// s.book.
func (s *Sim) sentTwice(run *runState, dlqID string, n int, dest string) {
	if dlqID == "" {
		return
	}
	for _, prev := range s.sends[dlqID] {
		if prev.run == run {
			continue
		}
		prev.run.mu.Lock()
		failed := prev.run.deleteFailed[dlqID]
		prev.run.mu.Unlock()
		if prev.run.inv.dead() || failed {
			continue
		}
		s.violate("sent-by-two-runs", s.subject(dlqID, n), fmt.Sprintf(
			"run %s sent it to %s at %s and neither crashed nor failed to delete it; run %s sends it again, to %s (%s)",
			prev.run.id, queueName(prev.dest), fmtOffset(prev.at.Sub(s.start)), run.id, queueName(dest), s.describeLease(dlqID)))
	}
	s.sends[dlqID] = append(s.sends[dlqID], sendRecord{run: run, at: s.clock.Now(), dest: dest})
}

// resettle notes that run deleted message id from the queue it reads: if
// it sent a copy of id (same body) that it does not delete, and not id, its
// send carried id. It holds s.book.
func (s *Sim) resettle(run *runState, id string) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.deleted[id] = true
	if run.sent[id] {
		return
	}
	for _, other := range run.byBody[run.received[id].body] {
		if other == id || !run.sent[other] || run.deleted[other] {
			continue
		}
		run.sent[other] = false
		run.sent[id] = true
		for i, rec := range s.sends[other] {
			if rec.run == run {
				s.sends[other] = slices.Delete(s.sends[other], i, i+1)
				s.sends[id] = append(s.sends[id], rec)
				break
			}
		}
		return
	}
}

// sendRecord is one send of a message of the queue a run reads.
type sendRecord struct {
	run  *runState
	at   time.Time
	dest string
}

func queueName(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// parked records a park of publication n and checks that it was due.
func (s *Sim) parked(run *runState, n int, dlqID, id string, meta replay.Metadata) {
	s.stats.Parked[meta.Reason]++
	s.trace.add(s.clock.Now(), "replay/"+run.id, "parked", s.subject(id, n), meta.Reason)
	if n < 0 {
		return
	}
	p := s.pubs[n]
	if ids := run.filter.Keys; len(ids) > 0 && !slices.Contains(ids, p.OrderID) {
		s.stats.FilteredParks++
		s.violate("filter-ignored", s.subject(dlqID, n), fmt.Sprintf("run %s, filtered to orders %v, parked it (%s)", run.id, ids, meta.Reason))
	}
	// A removal as already applied needs the run's INTENT record (then its
	// RESOLVED one): when the INTENT mark of this message failed in this
	// run, the engine parks it as planned, without the ledger.
	run.mu.Lock()
	ledgerFailed := run.unintended[dlqID] && !run.intended[dlqID]
	run.mu.Unlock()
	// Only where the consumer writes the records the removal reads.
	if s.removes() && p.Hash != "" && s.acked[p.OrderID] == p.Hash && !ledgerFailed {
		s.violate("parked-completed", s.subject(dlqID, n),
			fmt.Sprintf("parked (%s) although its order was already completed with the same payload", meta.Reason))
	}
	if meta.Reason != replay.ReasonReplayExhausted || run.reset {
		return
	}
	// Its own replays: those of its lineage since its publication (or the
	// reset of its count), as the simulation saw them sent, whatever the
	// metadata it carried said.
	own := s.sqs.replaysOf(dlqID)
	maxReplays := s.cfg.Replay.Options.MaxReplays
	if own < maxReplays {
		s.violate("budget-not-own", s.subject(dlqID, n),
			fmt.Sprintf("parked as replay-exhausted after %d replays of its own (max %d; its metadata says count %d)", own, maxReplays, meta.ReplayCount))
	}
	// All its replays failed in an outage: the breaker should have given
	// them back (when the lane has one: it needs the consumer's
	// completions and a lane whose consumer writes them), unless it had
	// all of them given back already (a message's replays, refunds
	// included, are bounded by 2 x MaxReplays), or no run that replayed it
	// gave the breaker evidence to judge (a trickle of one dead letter a
	// run, or runs that crashed: replay's minEvidence, a documented limit).
	if f := s.failures[n]; s.removes() && f.replayed > 0 && f.replayed == f.outage && own < 2*maxReplays && s.judgeable(n) {
		s.violate("parked-for-outage", s.subject(dlqID, n),
			fmt.Sprintf("parked as replay-exhausted after %d replays of its own although all %d of its failed replays failed in a tax-service outage", own, f.replayed))
	}
}

// judgeable reports whether a run that replayed publication n left the
// breaker evidence to judge it by (runState.evidence). It holds s.book.
func (s *Sim) judgeable(n int) bool {
	return slices.ContainsFunc(s.replayRuns[n], func(r *runState) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.evidence
	})
}

// removes reports whether the engine can remove dead letters already
// applied (and keep its breaker on the consumer's completions): it reads
// the consumer's completions, and the lane's consumer writes them.
func (s *Sim) removes() bool { return s.cfg.Replay.Canary && s.cfg.Lane.records() }

// routeHash is the lane's route's payload hash, compiled.
func (s *Sim) routeHash() payload.Hash {
	h, err := payload.NewHash(s.sqs.route().PayloadHash)
	if err != nil {
		panic(fmt.Sprintf("the route's payload hash %q: %v", s.sqs.route().PayloadHash, err))
	}
	return h
}

// replayedCompleted checks a replay of dlqID, a message run received from
// the queue it reads: when its key was completed by the consumer with the
// payload it carries (the consumer's own hash of it, not the route's), the
// engine had to remove it as already applied instead, unless it could not:
// the lane has no records, its INTENT mark failed in this run (the removal
// needs the ledger), or the consumer's hash is not comparable with the
// route's (another part expression, another version: a RefKey lane's
// consumer hashes the sample's shape with the sample's part; the replay
// goes back and the consumer absorbs it). A key of any length counts (a
// LongKey lane's). The consumer does not run while a run does, so the
// records the run read are those read here.
func (s *Sim) replayedCompleted(run *runState, dlqID string) {
	n := s.sqs.pubOf(dlqID)
	if !s.removes() || n < 0 {
		return
	}
	run.mu.Lock()
	intended := run.intended[dlqID]
	run.mu.Unlock()
	p := s.pubs[n]
	if !intended || p.Hash == "" || s.completedWith(p.OrderID) != p.Hash {
		return
	}
	if same, comparable := s.routeHash().Same(p.Hash, []byte(p.Body)); !same || !comparable {
		return
	}
	s.violate("replayed-completed", s.subject(dlqID, n), fmt.Sprintf(
		"run %s replays it although its key was completed with the same payload: the removal as already applied (route key %q, payload hash %q) did not happen",
		run.id, s.sqs.route().Key, s.sqs.route().PayloadHash))
}
