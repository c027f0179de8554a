package posting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/settings"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/payment"
)

// Handler posts one record; its Handle is a batch.Handler.
type Handler struct {
	Receiver *idempotency.Receiver
	Ledger   ledger.Ledger
	MaxBytes int // the largest body accepted; payment.DefaultMaxBytes when 0
}

// Handle validates msg and appends its payment to the ledger once. It
// returns nil when the payment is in the ledger (now or before), a
// *payment.InvalidError when the message will never be valid (a conflicting
// duplicate included), and any other error when a later delivery may
// succeed (a frozen account, the table unavailable).
func (h *Handler) Handle(ctx context.Context, msg events.SQSMessage) error {
	group := ""
	if settings.IsFIFO(msg.EventSourceARN) {
		group = msg.Attributes["MessageGroupId"]
	}
	p, err := payment.Parse([]byte(msg.Body), group, h.MaxBytes)
	if err != nil {
		return err
	}
	batch.Annotate(ctx, slog.String("paymentId", p.PaymentID), slog.String("accountId", p.AccountID))
	post := ledger.Posting{PaymentID: p.PaymentID, AccountID: p.AccountID, AmountMinor: p.AmountMinor, Currency: p.Currency, CapturedAt: p.CapturedAt}
	out, err := h.Receiver.DoResolving(ctx, p.PaymentID, p.PayloadHash, resolver{h.Ledger}, func(ctx context.Context) (string, error) {
		e, err := h.Ledger.Append(ctx, post)
		if err != nil {
			return "", fmt.Errorf("post payment %s: %w", p.PaymentID, err)
		}
		return e.Ref(), nil
	})
	switch {
	case errors.Is(err, idempotency.ErrConflict):
		return &payment.InvalidError{Reason: payment.ReasonConflictingDuplicate,
			Detail: fmt.Sprintf("payment %s was posted before with another content", p.PaymentID)}
	case err != nil:
		return fmt.Errorf("post payment %s: %w", p.PaymentID, err)
	}
	batch.Annotate(ctx, slog.String("entry", out.Result), slog.Bool("duplicate", out.Duplicate))
	emf.CountReceipt(ctx, emf.Receipt{Duplicate: out.Duplicate, Unrecorded: out.Unrecorded, InDoubt: out.InDoubt}) // the lane's metrics (see emf.Wrap)
	return nil
}

// resolver answers the idempotent receiver's doubt from the ledger itself:
// a payment is applied when the ledger holds its entry.
type resolver struct{ l ledger.Ledger }

func (r resolver) Lookup(ctx context.Context, paymentID string) (string, bool, error) {
	e, found, err := r.l.Lookup(ctx, paymentID)
	if err != nil || !found {
		return "", false, err
	}
	return e.Ref(), true, nil
}
