package invoicing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/internal/sample/tax"
)

// Invoicer issues the invoice of an order; *tax.Client is one. A
// *tax.RejectedError means the order will never be invoiced as it is. An
// error says whether the service certainly did not apply the call with a
// NotApplied() bool method (the idempotent receiver's behaviour, see
// idempotency.Receiver); without it, or when it says false, the call may
// have been applied and its answer lost, and Lookup is asked before the
// order's claim is given back.
type Invoicer interface {
	IssueInvoice(ctx context.Context, req tax.InvoiceRequest) (tax.Invoice, error)
}

// InvoiceLookup finds the invoice the service issued for an Idempotency-Key
// (the orderId); *tax.Client is one. applied is false when the key was never
// applied; an error means it cannot tell (never "not applied").
type InvoiceLookup interface {
	LookupInvoice(ctx context.Context, key string) (inv tax.Invoice, applied bool, err error)
}

var (
	_ Invoicer      = (*tax.Client)(nil)
	_ InvoiceLookup = (*tax.Client)(nil)
)

// Handler handles order.created records. Set Receiver and Invoicer; it is
// safe for concurrent use when its Receiver, Invoicer and Lookup are.
type Handler struct {
	Receiver *idempotency.Receiver
	Invoicer Invoicer
	// Lookup resolves an in-doubt takeover (an earlier delivery died after
	// calling the service, before recording the invoice): it is asked before
	// calling again. It resolves a call whose answer was lost (an ambiguous
	// error): found, the order is invoiced; unknown, the claim is kept and
	// the failure is transient. It also decides an expired claim of another
	// payload: never invoiced, this payload is invoiced; invoiced, this one
	// is a conflicting duplicate. Optional: nil calls the service again for
	// the same payload (a lost answer releases the claim), and only a
	// service that honours the Idempotency-Key keeps that from issuing a
	// second invoice; another payload's expired claim then stays a transient
	// failure until that payload completes it.
	Lookup   InvoiceLookup
	MaxBytes int // payload limit; <= 0 means order.DefaultMaxBytes
	// OnOutcome, when set, is called with the receiver's outcome of every
	// order invoiced (now or before), with the ctx of Handle; for metrics
	// (emf.CountReceipt). It is called concurrently.
	OnOutcome func(ctx context.Context, out idempotency.Outcome)
	// Shape, when set, gives the order.created body of a record whose
	// producer writes another shape (the simulation's lanes); the payload
	// hash is then Hash's, over the record's own body: the lane's route
	// hashes that body with the same part expression.
	Shape func(body string) string
	Hash  func(body []byte) (string, error)
}

// Handle is a batch.Handler. It returns nil when the order is invoiced (now or
// before), an *order.InvalidError when it never will be, and any other error
// when it may be later.
func (h *Handler) Handle(ctx context.Context, msg events.SQSMessage) error {
	body := msg.Body
	if h.Shape != nil {
		body = h.Shape(body)
	}
	o, err := order.Parse([]byte(body), h.MaxBytes)
	if err != nil {
		return err
	}
	batch.Annotate(ctx, slog.String("orderId", o.OrderID))
	hash, err := payloadHash(body)
	if h.Hash != nil && err == nil {
		if hash, err = h.Hash([]byte(msg.Body)); err != nil {
			err = order.Invalid(order.ReasonMalformedJSON, fmt.Sprintf("not hashed: %v", err))
		}
	}
	if err != nil {
		return err
	}
	out, err := h.Receiver.DoResolving(ctx, o.OrderID, hash, h.resolver(), func(ctx context.Context) (string, error) {
		inv, err := h.Invoicer.IssueInvoice(ctx, Request(o))
		if err != nil {
			return "", err
		}
		return inv.Number, nil
	})
	var rejected *tax.RejectedError
	switch {
	case errors.Is(err, idempotency.ErrConflict):
		return order.Invalid(order.ReasonConflictingDuplicate,
			fmt.Sprintf("orderId %s was invoiced before with a different payload", o.OrderID))
	case errors.As(err, &rejected):
		return order.Invalid(order.ReasonRejectedByTaxService, rejected.Detail)
	case err != nil:
		return fmt.Errorf("invoice %s: %w", o.OrderID, err)
	}
	attrs := []slog.Attr{slog.String("invoiceNumber", out.Result), slog.Bool("duplicate", out.Duplicate)}
	if out.InDoubt {
		attrs = append(attrs, slog.Bool("inDoubt", true), slog.String("resolution", string(out.Resolution)))
	}
	if out.Unrecorded {
		// Acknowledged anyway: a redelivery would issue a second invoice.
		attrs = append(attrs, slog.Bool("unrecorded", true))
	}
	batch.Annotate(ctx, attrs...)
	if h.OnOutcome != nil {
		h.OnOutcome(ctx, out)
	}
	return nil
}

// payloadHash is the payload hash of a body that Parse accepted. A body
// that does not hash is not I-JSON (RFC 7493: duplicate member names, text
// that is not valid UTF-8, a number out of range), which the JSON decoder
// of Parse lets through: its meaning is not one, so it is invalid as
// malformed JSON.
func payloadHash(body string) (string, error) {
	h, err := orderHash()
	if err != nil {
		return "", fmt.Errorf("payload hash %q: %w", HashPart, err)
	}
	sum, err := h.Sum([]byte(body))
	if err != nil {
		return "", order.Invalid(order.ReasonMalformedJSON, fmt.Sprintf("not I-JSON, so not hashed: %v", err))
	}
	return sum, nil
}

// resolver adapts Lookup to the receiver's port; nil without a Lookup.
func (h *Handler) resolver() idempotency.Resolver {
	if h.Lookup == nil {
		return nil
	}
	return idempotency.ResolverFunc(func(ctx context.Context, key string) (string, bool, error) {
		inv, applied, err := h.Lookup.LookupInvoice(ctx, key)
		return inv.Number, applied, err
	})
}

// Request is the tax service request for a validated order.
func Request(o order.Order) tax.InvoiceRequest {
	items := make([]tax.Item, len(o.Items))
	for i, it := range o.Items {
		items[i] = tax.Item{SKU: it.SKU, Quantity: it.Quantity, UnitPrice: it.UnitPrice.String()}
	}
	return tax.InvoiceRequest{
		OrderID:  o.OrderID,
		TaxID:    o.Customer.TaxID,
		Currency: o.Currency,
		Total:    o.Total.String(),
		Items:    items,
	}
}
