package sim

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/settings"
)

// consumerName scopes the idempotency keys, as CONSUMER_NAME does by
// default.
var consumerName = settings.ConsumerName.Default

// Consumer are the settings of the consumer function and its event source
// mapping.
type Consumer struct {
	Timeout   time.Duration // the function's timeout
	BatchSize int           // records per invocation
	MaxBytes  int           // MAX_PAYLOAD_BYTES; 0: the default
}

// newProcessor wires the consumer as functions/consumer does (newProcessor
// there), on the simulation's adapters, with Concurrency 1; the lane's
// shape and records decide the handler (see Lane.handler).
func (s *Sim) newProcessor() *batch.Processor {
	logger := slog.New(&traceHandler{s: s, actor: "consumer"})
	tokens := 0
	receiver := &idempotency.Receiver{
		Store:    s.store,
		Scope:    consumerName,
		Lifetime: settings.DefaultRecordLifetime,
		Now:      s.clock.Now,
		NewToken: func() string { tokens++; return fmt.Sprintf("tok-%d", tokens) },
		Sleep:    s.clock.Sleep,
		OnError: func(err error, key string) {
			logger.Warn("idempotency", slog.String("orderId", key), slog.String("error", err.Error()))
		},
		OnUnrecorded: func(key, result string, err error) {
			s.stats.Unrecorded++
			logger.Error("invoice issued but its idempotency record not completed",
				slog.String("event", idempotency.EventUnrecorded), slog.String("orderId", key),
				slog.String("invoiceNumber", result), slog.String("error", err.Error()))
		},
	}
	h := &invoicing.Handler{Receiver: receiver, Invoicer: s.tax, Lookup: s.tax, MaxBytes: s.cfg.Consumer.MaxBytes}
	opts := batch.Options{Concurrency: 1, Logger: logger, Now: s.clock.Now}
	if s.cfg.Lane.Groups != "" {
		// As functions/consumer wires GROUP_ORDER (see keeper).
		opts.Groups = s.keeper()
	}
	return batch.New(s.cfg.Lane.handler(h, s.tax),
		batch.NewInvalidQueue(invalidSender{s: s}, s.sqs.invalid, consumerName, s.clock.Now), opts)
}

// poll is one poll of the event source mapping: receive a batch, invoke the
// consumer, delete what succeeded. It returns the records received.
func (s *Sim) poll() int {
	s.invocations++
	return s.deliver(fmt.Sprintf("consumer-%d", s.invocations))
}

// deliver receives a batch from the source queue and runs it in the
// invocation named id, as the mapping does; it returns the records
// received.
func (s *Sim) deliver(id string) int {
	out, err := s.sqs.q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(s.sqs.source), MaxNumberOfMessages: int32(s.cfg.Consumer.BatchSize),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if s.cfg.Lane.Groups != "" {
		s.checkBackstop()
	}
	if err != nil || len(out.Messages) == 0 {
		return 0
	}
	s.sqs.received(out.Messages)
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
	for i, m := range out.Messages {
		ev.Records[i] = s.sqs.toEvent(m)
		s.sqs.hide(ev.Records[i].MessageId, "", s.clock.Now().Add(s.cfg.Queues.Visibility))
	}
	if s.cfg.Lane.Groups != "" {
		s.checkAttributes(ev.Records)
	}
	inv := newConsumerInvocation(id, s.clock.Now().Add(s.cfg.Consumer.Timeout), ev.Records, map[string]bool{})
	s.trace.add(s.clock.Now(), "esm", "invoke "+inv.id, s.ids(out.Messages), "")
	resp := s.invoke(inv, ev)
	if s.dice.chance("esm-double-invoke", inv.id, s.cfg.Faults.DoubleInvoke) {
		// The same batch again, as a retried invocation does; the mapping
		// acts on the later answer.
		s.stats.DoubleInvokes++
		again := newConsumerInvocation(inv.id+"-again", s.clock.Now().Add(s.cfg.Consumer.Timeout), ev.Records, inv.invalid)
		s.trace.add(s.clock.Now(), "esm", "invoke again "+again.id, s.ids(out.Messages), "")
		if r2 := s.invoke(again, ev); !again.dead() {
			resp, inv = r2, again
		}
	}
	if inv.dead() || s.clock.Now().After(inv.deadline) {
		s.stats.Abandoned++
		s.trace.add(s.clock.Now(), "esm", "abandoned "+inv.id, "", inv.reason())
		return len(out.Messages)
	}
	s.deleteRecords(inv, s.acknowledged(inv, ev.Records, resp))
	return len(out.Messages)
}

// acknowledged books what inv acknowledged of records (all but resp's
// failures) and returns the records the mapping deletes: not those whose
// delete fails by a fault (SQS refuses a stale receipt handle itself).
func (s *Sim) acknowledged(inv *invocation, records []events.SQSMessage, resp events.SQSEventResponse) []events.SQSMessage {
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var done []events.SQSMessage
	for _, r := range records {
		if failed[r.MessageId] {
			continue
		}
		n := s.sqs.pubOf(r.MessageId)
		// Acknowledged as applied: not routed to the invalid queue, not
		// parked (its copy in the parking queue is applied when its group
		// is released).
		if !inv.invalid[r.MessageId] && inv.outcomes[r.MessageId] == string(batch.Succeeded) && n >= 0 {
			s.applied(n)
		}
		if s.dice.chance("esm-delete", r.MessageId, s.cfg.Faults.ESMDeleteErrors) {
			s.trace.add(s.clock.Now(), "esm", "delete failed", s.subject(r.MessageId, n), "injected")
			continue
		}
		done = append(done, r)
	}
	return done
}

// applied records that the consumer applied publication n and acknowledged
// it: its order's first acknowledged payload, for parked-completed.
func (s *Sim) applied(n int) {
	p := s.pubs[n]
	s.ackedPubs[n] = true
	if p.Hash != "" {
		if _, ok := s.acked[p.OrderID]; !ok {
			s.acked[p.OrderID] = p.Hash
		}
	}
}

// invoke runs the consumer on ev within inv.
func (s *Sim) invoke(inv *invocation, ev events.SQSEvent) events.SQSEventResponse {
	ctx := context.WithValue(withSimDeadline(context.Background(), inv.deadline), invocationKey{}, inv)
	resp, _ := s.proc.Process(ctx, ev)
	return resp
}

// copyDuringCall is the Service's duringCall hook: now and then, SQS hands a
// copy of the record being invoiced to a second consumer (at-least-once
// delivery), which runs while the first waits for the tax answer.
func (s *Sim) copyDuringCall(ctx context.Context, orderID string) {
	inv := invocationOf(ctx)
	if inv == nil || s.copying || !s.dice.chance("sqs-copy", orderID, s.cfg.Faults.ConcurrentCopy) {
		return
	}
	i := slices.IndexFunc(inv.records, func(r events.SQSMessage) bool { return s.cfg.Lane.orderOf(r.Body) == orderID })
	if i < 0 {
		return
	}
	rec := inv.records[i]
	s.copying = true
	defer func() { s.copying = false }()
	s.stats.ConcurrentCopies++
	if s.sqs.fifo {
		s.copyBatch(inv)
		return
	}
	twin := newConsumerInvocation(inv.id+"-copy", s.clock.Now().Add(s.cfg.Consumer.Timeout), []events.SQSMessage{rec}, map[string]bool{})
	s.trace.add(s.clock.Now(), "esm", "copy to "+twin.id, s.subject(rec.MessageId, s.sqs.pubOf(rec.MessageId)), "")
	resp := s.invoke(twin, events.SQSEvent{Records: []events.SQSMessage{rec}})
	if len(resp.BatchItemFailures) == 0 && !twin.dead() {
		n := s.sqs.pubOf(rec.MessageId)
		if !twin.invalid[rec.MessageId] && twin.outcomes[rec.MessageId] == string(batch.Succeeded) && n >= 0 {
			s.ackedPubs[n] = true
		}
	}
}

// copyBatch is a FIFO batch delivered again while its invocation inv still
// runs: the visibility timeout of its records ran out (the function ran past
// it), and SQS hands them, in order, to a second consumer, whose receive
// makes inv's receipt handles stale (its visibility changes and deletes of
// them then fail). A record whose visibility the consumer changed (a head's
// backoff) stays hidden, and its group with it.
func (s *Sim) copyBatch(inv *invocation) {
	ctx := context.Background()
	now := s.clock.Now()
	for _, r := range inv.records {
		if s.sqs.changedSince(r.ReceiptHandle) {
			continue
		}
		_, err := s.sqs.q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(s.sqs.source), ReceiptHandle: aws.String(r.ReceiptHandle)})
		if err == nil {
			s.sqs.hide(r.MessageId, "", now)
		}
	}
	s.groups.count(func(st *GroupStats) { st.Copies++ })
	s.trace.add(now, "esm", "visibility ran out", inv.id, "a second consumer receives the batch")
	s.deliver(inv.id + "-copy")
}

// traceHandler is a slog.Handler that turns the log lines of the code under
// test into trace events, and feeds the simulation's bookkeeping.
type traceHandler struct {
	s     *Sim
	actor string
	attrs []slog.Attr
}

// Enabled implements slog.Handler: the per-message lines (Info and above,
// and Debug for the replay engine's decisions) are kept.
func (h *traceHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	var id, orderID, outcome, reason, errText, queue string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "queue":
			queue = a.Value.String()
		case "messageId":
			id = a.Value.String()
		case "orderId":
			orderID = a.Value.String()
		case "outcome":
			outcome = a.Value.String()
		case "reason":
			reason = a.Value.String()
		case "error":
			errText = a.Value.String()
		}
		return true
	})
	if r.Message == "replay run" || r.Message == "replay gate" && reason == "" {
		return nil
	}
	if r.Message == "record" && h.actor == "consumer" {
		h.s.record(ctx, id, outcome, errText)
	}
	if r.Message == "replay message" && queue == h.s.sqs.dlq {
		h.s.cov.examined(id, outcome)
	}
	op := r.Message
	if outcome != "" {
		op = outcome
	}
	detail := strings.TrimSpace(reason + " " + errText)
	subject := orderID
	if id != "" {
		subject = h.s.subject(id, h.s.sqs.pubOf(id))
	}
	h.s.trace.add(h.s.clock.Now(), h.actor, op, subject, detail)
	return nil
}

// WithAttrs implements slog.Handler.
func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &traceHandler{s: h.s, actor: h.actor, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

// WithGroup implements slog.Handler.
func (h *traceHandler) WithGroup(string) slog.Handler { return h }

// record keeps what the consumer did with a record: its outcome in the
// invocation, and, for a delivery of a replayed message, whether it failed
// and whether the tax service was down then.
func (s *Sim) record(ctx context.Context, id, outcome, errText string) {
	if inv := invocationOf(ctx); inv != nil && inv.outcomes != nil {
		inv.outcomes[id] = outcome
	}
	n := s.sqs.pubOf(id)
	if n < 0 || outcome != string(batch.Failed) || s.sqs.sender(id) != "replay" {
		return
	}
	f := s.failures[n]
	f.replayed++
	if p := s.tax.phase(); p != nil && p.Mode == "down" && strings.Contains(errText, errUnavailable.Error()) {
		f.outage++
	}
	s.failures[n] = f
}

// deleteRecords deletes processed records of inv from the source queue, as
// the mapping does.
func (s *Sim) deleteRecords(inv *invocation, recs []events.SQSMessage) {
	for start := 0; start < len(recs); start += 10 {
		chunk := recs[start:min(start+10, len(recs))]
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.sqs.source)}
		for i, r := range chunk {
			in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("d", i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
		}
		out, err := s.sqs.q.DeleteMessageBatch(context.Background(), in)
		if err != nil {
			s.trace.add(s.clock.Now(), "esm", "delete failed", "", err.Error())
			continue
		}
		for _, ok := range out.Successful {
			var i int
			fmt.Sscanf(aws.ToString(ok.Id), "d%d", &i)
			s.sqs.deleted(chunk[i].ReceiptHandle, chunk[i].MessageId)
		}
		for _, f := range out.Failed {
			var i int
			fmt.Sscanf(aws.ToString(f.Id), "d%d", &i)
			s.trace.add(s.clock.Now(), "esm", "delete failed", chunk[i].MessageId, aws.ToString(f.Code))
		}
	}
}
