package invoicing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/internal/sample/tax"
)

const valid = `{"eventType":"order.created","version":1,"orderId":"ORD-1","createdAt":"2026-11-29T10:00:00Z",
 "customer":{"name":"Ana Souza","taxId":"123.456.789-09","email":"ana@example.com"},
 "items":[{"sku":"SKU-1","quantity":2,"unitPrice":"49.90"}],"total":"99.80","currency":"BRL"}`

type stubTax struct {
	calls int
	last  tax.InvoiceRequest
	err   error
}

func (s *stubTax) IssueInvoice(_ context.Context, req tax.InvoiceRequest) (tax.Invoice, error) {
	s.calls++
	s.last = req
	if s.err != nil {
		return tax.Invoice{}, s.err
	}
	return tax.Invoice{Number: "INV-" + req.OrderID}, nil
}

func handler(store idempotency.Store, inv invoicing.Invoicer) *invoicing.Handler {
	return &invoicing.Handler{Receiver: &idempotency.Receiver{Store: store, Scope: "invoice"}, Invoicer: inv}
}

func msg(body string) events.SQSMessage { return events.SQSMessage{MessageId: "m", Body: body} }

func reasonOf(t *testing.T, err error) order.Reason {
	t.Helper()
	var inv *order.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("err = %v, want an *order.InvalidError", err)
	}
	return inv.Reason
}

func TestHandleIssuesOneInvoice(t *testing.T) {
	store, tx := idempotency.NewMemoryStore(), &stubTax{}
	h := handler(store, tx)
	var outcomes []idempotency.Outcome
	h.OnOutcome = func(_ context.Context, out idempotency.Outcome) { outcomes = append(outcomes, out) }
	for range 3 { // first delivery, a duplicate, a replay
		if err := h.Handle(context.Background(), msg(valid)); err != nil {
			t.Fatal(err)
		}
	}
	if tx.calls != 1 {
		t.Fatalf("tax service called %d times, want 1", tx.calls)
	}
	if len(outcomes) != 3 || outcomes[0].Duplicate || !outcomes[1].Duplicate || !outcomes[2].Duplicate {
		t.Fatalf("outcomes = %+v, want one first delivery and two duplicates", outcomes)
	}
	want := tax.InvoiceRequest{OrderID: "ORD-1", TaxID: "123.456.789-09", Currency: "BRL", Total: "99.80",
		Items: []tax.Item{{SKU: "SKU-1", Quantity: 2, UnitPrice: "49.90"}}}
	if tx.last.OrderID != want.OrderID || tx.last.Total != want.Total || tx.last.TaxID != want.TaxID || len(tx.last.Items) != 1 || tx.last.Items[0] != want.Items[0] {
		t.Fatalf("request = %+v, want %+v", tx.last, want)
	}
	if rec, _ := store.Get("invoice#ORD-1"); rec.Result != "INV-ORD-1" {
		t.Fatalf("stored result = %q", rec.Result)
	}
}

func TestHandleConflictingDuplicate(t *testing.T) {
	store, tx := idempotency.NewMemoryStore(), &stubTax{}
	h := handler(store, tx)
	if err := h.Handle(context.Background(), msg(valid)); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(strings.Replace(valid, `"quantity":2`, `"quantity":3`, 1), `"99.80"`, `"149.70"`, 1)
	if r := reasonOf(t, h.Handle(context.Background(), msg(changed))); r != order.ReasonConflictingDuplicate {
		t.Fatalf("reason = %s", r)
	}
	if tx.calls != 1 {
		t.Fatalf("tax service called %d times", tx.calls)
	}
}

func TestHandleRejectedByTaxService(t *testing.T) {
	store := idempotency.NewMemoryStore()
	h := handler(store, &stubTax{err: &tax.RejectedError{Status: 422, Detail: "blocked tax id"}})
	if r := reasonOf(t, h.Handle(context.Background(), msg(valid))); r != order.ReasonRejectedByTaxService {
		t.Fatalf("reason = %s", r)
	}
	if _, held := store.Get("invoice#ORD-1"); held {
		t.Fatal("a rejected order must not keep its claim: a corrected order would be blocked")
	}
}

func TestHandleTransientFailure(t *testing.T) {
	store, cause := idempotency.NewMemoryStore(), errors.New("status 503 after 4 attempts")
	h := handler(store, &stubTax{err: cause})
	err := h.Handle(context.Background(), msg(valid))
	var inv *order.InvalidError
	if !errors.Is(err, cause) || errors.As(err, &inv) {
		t.Fatalf("err = %v, want the transient cause, not invalid", err)
	}
	if _, held := store.Get("invoice#ORD-1"); held {
		t.Fatal("claim not released")
	}
}

func TestHandleInvalidOrder(t *testing.T) {
	tx := &stubTax{}
	h := handler(idempotency.NewMemoryStore(), tx)
	if r := reasonOf(t, h.Handle(context.Background(), msg(`{"orderId":`))); r != order.ReasonMalformedJSON {
		t.Fatalf("reason = %s", r)
	}
	if tx.calls != 0 {
		t.Fatal("an invalid order reached the tax service")
	}
}
