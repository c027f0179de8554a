package taxstub_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/sample/tax"
	"github.com/homingdlq/homing/internal/sample/taxstub"
)

// The stub and the real client agree on the wire contract.
func TestStubWithTheRealClient(t *testing.T) {
	srv := httptest.NewServer(taxstub.New())
	defer srv.Close()
	c, err := tax.New(srv.URL, nil, tax.Options{MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := tax.InvoiceRequest{OrderID: "ORD-1", TaxID: "123.456.789-09", Currency: "BRL", Total: "99.80",
		Items: []tax.Item{{SKU: "SKU-1", Quantity: 2, UnitPrice: "49.90"}}}

	inv, err := c.IssueInvoice(ctx, req)
	if err != nil || inv.Number != "INV-000001" {
		t.Fatalf("issue: %+v, %v", inv, err)
	}
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("healthy: %v", err)
	}

	rej := req
	rej.OrderID = "ORD-2-REJECT"
	var rejected *tax.RejectedError
	if _, err := c.IssueInvoice(ctx, rej); !errors.As(err, &rejected) || !strings.Contains(rejected.Detail, "ORD-2-REJECT") {
		t.Fatalf("reject: %v", err)
	}

	admin(t, srv.URL, "POST", "/admin/mode", `{"mode":"down"}`, http.StatusOK)
	if _, err := c.IssueInvoice(ctx, req); err == nil || errors.As(err, &rejected) {
		t.Fatalf("down: err = %v, want a transient error", err)
	}
	if err := c.Healthy(ctx); err == nil {
		t.Fatal("healthy while down")
	}
	admin(t, srv.URL, "POST", "/admin/mode", `{"mode":"flaky","errorRate":1}`, http.StatusOK)
	if _, err := c.IssueInvoice(ctx, req); err == nil {
		t.Fatal("flaky with errorRate 1 served a call")
	}
	admin(t, srv.URL, "POST", "/admin/mode", `{"mode":"sideways"}`, http.StatusBadRequest)
	admin(t, srv.URL, "POST", "/admin/mode", `{"mode":"up"}`, http.StatusOK)
	if _, err := c.IssueInvoice(ctx, req); err != nil {
		t.Fatal(err)
	}

	var invoices map[string]int
	if err := json.Unmarshal([]byte(admin(t, srv.URL, "GET", "/admin/invoices", "", http.StatusOK)), &invoices); err != nil {
		t.Fatal(err)
	}
	// Not deduplicated by Idempotency-Key: two calls, two invoices.
	if len(invoices) != 1 || invoices["ORD-1"] != 2 {
		t.Fatalf("invoices = %v", invoices)
	}
	admin(t, srv.URL, "POST", "/admin/reset", "", http.StatusOK)
	if got := admin(t, srv.URL, "GET", "/admin/invoices", "", http.StatusOK); strings.TrimSpace(got) != "{}" {
		t.Fatalf("after reset: %s", got)
	}
}

func admin(t *testing.T, base, method, path, body string, want int) string {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d (%s)", method, path, resp.StatusCode, want, b)
	}
	return string(b)
}
