package invoicing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/internal/batch"
	"github.com/homingdlq/homing/internal/idempotency"
	"github.com/homingdlq/homing/internal/order"
	"github.com/homingdlq/homing/internal/tax"
)

// Invoicer issues the invoice of an order; *tax.Client is one. A
// *tax.RejectedError means the order will never be invoiced as it is.
type Invoicer interface {
	IssueInvoice(ctx context.Context, req tax.InvoiceRequest) (tax.Invoice, error)
}

var _ Invoicer = (*tax.Client)(nil)

// Handler handles order.created records. Set every field; it is safe for
// concurrent use when its Receiver and Invoicer are.
type Handler struct {
	Receiver *idempotency.Receiver
	Invoicer Invoicer
	MaxBytes int // payload limit; <= 0 means order.DefaultMaxBytes
}

// Handle is a batch.Handler. It returns nil when the order is invoiced (now or
// before), an *order.InvalidError when it never will be, and any other error
// when it may be later.
func (h *Handler) Handle(ctx context.Context, msg events.SQSMessage) error {
	o, err := order.Parse([]byte(msg.Body), h.MaxBytes)
	if err != nil {
		return err
	}
	batch.Annotate(ctx, slog.String("orderId", o.OrderID))
	out, err := h.Receiver.Do(ctx, o.OrderID, o.Hash(), func(ctx context.Context) (string, error) {
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
	batch.Annotate(ctx, slog.String("invoiceNumber", out.Result), slog.Bool("duplicate", out.Duplicate))
	return nil
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
