package consumer

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/invoicing"
)

// Deps are the adapters the consumer is built from; tests pass fakes.
type Deps struct {
	Sender   batch.Sender            // publishes to the invalid queue; required
	Store    idempotency.Store       // the idempotent receiver's records; required
	Invoicer invoicing.Invoicer      // issues the invoices; required
	Lookup   invoicing.InvoiceLookup // may be nil: in-doubt takeovers call again
	Logger   *slog.Logger            // required
	Metrics  io.Writer               // EMF lines; nil writes none
	Failures batch.FailureLog        // why orders fail; nil records none
	Now      func() time.Time        // default time.Now
	// Sleep waits between the idempotent receiver's attempts to record a
	// completion, on the clock of Now: a test with a manual clock passes
	// one that advances it, or the retries wait on real time while its
	// clock stands still. Default internal/wait.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
}

// New returns the handler of one SQS batch (the Lambda handler of the
// consumer): the batch processor over the invoicing handler, behind the
// idempotent receiver scoped by ConsumerName, counted into one set of EMF
// lines per invocation (package emf: the names the lane's alarms watch).
func New(cfg Config, d Deps) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	receiver := &idempotency.Receiver{
		Store:    d.Store,
		Scope:    cfg.ConsumerName,
		Lifetime: cfg.RecordLifetime,
		Now:      d.Now,
		Sleep:    d.Sleep,
		OnError: func(err error, key string) {
			d.Logger.Warn("idempotency", slog.String("orderId", key), slog.String("error", err.Error()))
		},
		// The invoice was issued but not recorded: the record is acknowledged
		// (a redelivery would invoice again); this line is what counts it.
		OnUnrecorded: func(key, result string, err error) {
			d.Logger.Error("invoice issued but its idempotency record not completed",
				slog.String("event", idempotency.EventUnrecorded), slog.String("orderId", key),
				slog.String("invoiceNumber", result), slog.String("error", err.Error()))
		},
	}
	h := &invoicing.Handler{Receiver: receiver, Invoicer: d.Invoicer, Lookup: d.Lookup, MaxBytes: cfg.MaxPayloadBytes,
		OnOutcome: func(ctx context.Context, out idempotency.Outcome) {
			emf.CountReceipt(ctx, emf.Receipt{Duplicate: out.Duplicate, Unrecorded: out.Unrecorded, InDoubt: out.InDoubt})
		}}
	p := batch.New(h.Handle,
		batch.NewInvalidQueue(d.Sender, cfg.InvalidQueueURL, cfg.ConsumerName, d.Now),
		batch.Options{Concurrency: cfg.Concurrency, DeadlineMargin: cfg.DeadlineMargin, Logger: d.Logger, Now: d.Now,
			OnOutcome: emf.CountOutcome[batch.Outcome], Failures: d.Failures, MaxReceiveCount: cfg.MaxReceiveCount})
	w := d.Metrics
	if w == nil {
		w = io.Discard
	}
	m := emf.NewRecorder(w, cfg.Metrics)
	m.Now = d.Now
	m.OnError = func(err error) { d.Logger.Warn("metrics", slog.String("error", err.Error())) }
	return emf.Wrap(m, p.Process)
}
