package taxstub_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/sample/tax"
	"github.com/homingdlq/homing/internal/sample/taxstub"
)

// Item 15: a lookup by Idempotency-Key, and an opt-in mode that deduplicates
// by it; the default keeps counting every call.
func TestLookupAndDedupe(t *testing.T) {
	tests := []struct {
		name         string
		dedupe       bool
		wantInvoices int
		wantSame     bool
	}{
		{"counting by default", false, 2, false},
		{"deduplicating", true, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stub := taxstub.New()
			srv := httptest.NewServer(stub)
			defer srv.Close()
			if err := stub.SetMode(taxstub.Mode{Mode: "up", Dedupe: tt.dedupe}); err != nil {
				t.Fatal(err)
			}
			c, err := tax.New(srv.URL, nil, tax.Options{MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			id := "ORD-1/a#b" // the grammar allows '/' and '#': the path escapes them
			if _, applied, err := c.LookupInvoice(ctx, id); err != nil || applied {
				t.Fatalf("before any call: applied=%v err=%v", applied, err)
			}
			req := tax.InvoiceRequest{OrderID: id, TaxID: "123.456.789-09", Currency: "BRL", Total: "1.00",
				Items: []tax.Item{{SKU: "S", Quantity: 1, UnitPrice: "1.00"}}}
			first, err := c.IssueInvoice(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			second, err := c.IssueInvoice(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if (first == second) != tt.wantSame {
				t.Fatalf("invoices %s and %s: want same=%v", first.Number, second.Number, tt.wantSame)
			}
			if n := stub.Invoices()[id]; n != tt.wantInvoices {
				t.Fatalf("%d invoices issued, want %d", n, tt.wantInvoices)
			}
			if n := stub.Calls()[id]; n != 2 {
				t.Fatalf("%d calls counted, want 2", n)
			}
			got, applied, err := c.LookupInvoice(ctx, id)
			if err != nil || !applied || got != second {
				t.Fatalf("lookup: %+v applied=%v err=%v, want %+v", got, applied, err, second)
			}
		})
	}
}

func TestLookupWhileDown(t *testing.T) {
	stub := taxstub.New()
	srv := httptest.NewServer(stub)
	defer srv.Close()
	admin(t, srv.URL, "POST", "/admin/mode", `{"mode":"down","dedupe":true}`, http.StatusOK)
	c, err := tax.New(srv.URL, nil, tax.Options{MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.LookupInvoice(context.Background(), "ORD-1"); err == nil {
		t.Fatal("a lookup while down must fail, not say never applied")
	}
}
