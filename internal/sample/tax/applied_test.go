package tax_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/sample/tax"
)

// step is what the fake service does with one attempt: answer a status
// (with a body), hang until the client gives up, or reset the connection.
type step struct {
	status int
	body   string
	hang   bool
	reset  bool
}

// stepped serves steps in order, repeating the last one.
func stepped(t *testing.T, steps ...step) string {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s := steps[min(int(hits.Add(1)), len(steps))-1]
		switch {
		case s.hang:
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		case s.reset:
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
		default:
			w.WriteHeader(s.status)
			_, _ = io.WriteString(w, s.body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Every error of IssueInvoice says, through a NotApplied() bool method found
// with errors.As, whether the service certainly did not apply the call: it
// is true only when every attempt was answered with a status that says so,
// or never left. A lost answer anywhere in the attempts makes the whole call
// ambiguous, whatever the last attempt got.
func TestIssueInvoiceErrorSaysWhetherApplied(t *testing.T) {
	answers := func(steps ...step) func(t *testing.T) string {
		return func(t *testing.T) string { return stepped(t, steps...) }
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	noID := sampleRequest()
	noID.OrderID = ""
	tests := []struct {
		name           string
		server         func(t *testing.T) string
		ctx            context.Context // nil: background
		req            *tax.InvoiceRequest
		wantNotApplied bool
	}{
		{"503 on every attempt", answers(step{status: 503}), nil, nil, true},
		{"500 then 429 then 503", answers(step{status: 500}, step{status: 429}, step{status: 503}), nil, nil, true},
		{"422 rejected", answers(step{status: 422, body: `{"message":"blocked"}`}), nil, nil, true},
		{"400 bad request", answers(step{status: 400}), nil, nil, true},
		{"408 request timeout", answers(step{status: 408}), nil, nil, true},
		{"connection refused: never sent", closedURL, nil, nil, true},
		{"context done before the call", answers(step{status: 201, body: `{"invoiceNumber":"INV-1"}`}), cancelled, nil, true},
		{"invalid order id: never sent", answers(step{status: 201, body: `{"invoiceNumber":"INV-1"}`}), nil, &noID, true},
		{"connection reset after the request", answers(step{reset: true}), nil, nil, false},
		{"timed out", answers(step{hang: true}), nil, nil, false},
		{"timed out, then 503", answers(step{hang: true}, step{status: 503}), nil, nil, false},
		{"reset, then 422", answers(step{reset: true}, step{status: 422}), nil, nil, false},
		{"502 from a gateway", answers(step{status: 502}), nil, nil, false},
		{"504 from a gateway", answers(step{status: 504}), nil, nil, false},
		{"409 the key in flight", answers(step{status: 409}), nil, nil, false},
		{"202 accepted", answers(step{status: 202}), nil, nil, false},
		{"201 without an invoice number", answers(step{status: 201, body: `{}`}), nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newClient(t, tt.server(t), tax.Options{MaxAttempts: 3, AttemptTimeout: 50 * time.Millisecond})
			ctx, req := tt.ctx, sampleRequest()
			if ctx == nil {
				ctx = context.Background()
			}
			if tt.req != nil {
				req = *tt.req
			}
			_, err := c.IssueInvoice(ctx, req)
			if err == nil {
				t.Fatal("IssueInvoice succeeded, want an error")
			}
			var na interface{ NotApplied() bool }
			if !errors.As(err, &na) {
				t.Fatalf("error %q has no NotApplied method", err)
			}
			if got := na.NotApplied(); got != tt.wantNotApplied {
				t.Fatalf("NotApplied() = %v, want %v (error %q)", got, tt.wantNotApplied, err)
			}
		})
	}
}

// A rejection alone says the call was not applied.
func TestRejectedErrorIsNotApplied(t *testing.T) {
	var na interface{ NotApplied() bool } = &tax.RejectedError{Status: 422}
	if !na.NotApplied() {
		t.Fatal("a 422 answer must say not applied")
	}
}
