package tax_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/homingdlq/homing/internal/sample/tax"
)

func TestLookupInvoice(t *testing.T) {
	tests := []struct {
		name        string
		replies     []reply
		wantApplied bool
		wantNumber  string
		wantErr     bool
		wantHits    int32
	}{
		{"applied", []reply{{status: 200, body: `{"invoiceNumber":"INV-7"}`}}, true, "INV-7", false, 1},
		{"never applied", []reply{{status: 404, body: `{"message":"unknown key"}`}}, false, "", false, 1},
		{"retried like an issue", []reply{{status: 503}, {status: 429}, {status: 200, body: `{"invoiceNumber":"INV-7"}`}}, true, "INV-7", false, 3},
		{"down: an error, never not-applied", []reply{{status: 503}}, false, "", true, tax.DefaultMaxAttempts},
		{"other status not retried", []reply{{status: 400}}, false, "", true, 1},
		{"200 without a number", []reply{{status: 200, body: `{}`}}, false, "", true, tax.DefaultMaxAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := scripted(t, tt.replies...)
			c, _ := newClient(t, srv.URL, tax.Options{})
			inv, applied, err := c.LookupInvoice(context.Background(), "ORD-1")
			if (err != nil) != tt.wantErr || applied != tt.wantApplied || inv.Number != tt.wantNumber {
				t.Fatalf("inv=%+v applied=%v err=%v", inv, applied, err)
			}
			if hits.Load() != tt.wantHits {
				t.Fatalf("%d requests, want %d", hits.Load(), tt.wantHits)
			}
			var rejected *tax.RejectedError
			if errors.As(err, &rejected) {
				t.Fatal("a lookup never rejects an order")
			}
		})
	}
}

// Item 12: the 422 detail is bounded whether it comes from the service's JSON
// message or from the raw text, so our metadata stays small.
func TestRejectedDetailIsBounded(t *testing.T) {
	long := strings.Repeat("é", 4000)
	for name, body := range map[string]string{"json message": `{"message":"` + long + `"}`, "raw text": long} {
		t.Run(name, func(t *testing.T) {
			srv, _ := scripted(t, reply{status: 422, body: body})
			c, _ := newClient(t, srv.URL, tax.Options{})
			_, err := c.IssueInvoice(context.Background(), sampleRequest())
			var rejected *tax.RejectedError
			if !errors.As(err, &rejected) {
				t.Fatalf("err = %v", err)
			}
			if n := len(rejected.Detail); n > tax.MaxDetailBytes+3 || !utf8.ValidString(rejected.Detail) {
				t.Fatalf("detail is %d bytes (valid UTF-8: %v), want at most %d", n, utf8.ValidString(rejected.Detail), tax.MaxDetailBytes+3)
			}
		})
	}
}
