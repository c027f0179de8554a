package invoicing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/internal/sample/tax"
)

type stubLookup struct {
	inv     tax.Invoice
	applied bool
	err     error
	keys    []string
}

func (s *stubLookup) LookupInvoice(_ context.Context, key string) (tax.Invoice, bool, error) {
	s.keys = append(s.keys, key)
	return s.inv, s.applied, s.err
}

// brokenComplete cannot record completions, like a table that keeps failing.
type brokenComplete struct{ *idempotency.MemoryStore }

func (brokenComplete) Complete(context.Context, idempotency.Lease, string) error {
	return errors.New("ProvisionedThroughputExceeded")
}

// Item 9: the invoice is issued but its completion cannot be recorded: the
// record is acknowledged (a redelivery would issue a second invoice) and
// reported.
func TestHandleAcknowledgesAnUnrecordedInvoice(t *testing.T) {
	tx := &stubTax{}
	var unrecorded []string
	clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	h := &invoicing.Handler{Invoicer: tx, Receiver: &idempotency.Receiver{
		Store: brokenComplete{idempotency.NewMemoryStore()}, Scope: "invoice",
		Now:          func() time.Time { return clock },
		Sleep:        func(_ context.Context, d time.Duration) error { clock = clock.Add(d); return nil },
		OnUnrecorded: func(key, result string, _ error) { unrecorded = append(unrecorded, key+"="+result) },
	}}
	if err := h.Handle(context.Background(), msg(valid)); err != nil {
		t.Fatalf("err = %v, want the record acknowledged", err)
	}
	if tx.calls != 1 || len(unrecorded) != 1 || unrecorded[0] != "ORD-1=INV-ORD-1" {
		t.Fatalf("calls=%d unrecorded=%v", tx.calls, unrecorded)
	}
}

// Item 9: a redelivery that takes over the expired claim of a holder that
// died after the tax answer asks the service by Idempotency-Key first.
func TestHandleResolvesAnInDoubtTakeover(t *testing.T) {
	o, err := order.Parse([]byte(valid), 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		lookup    *stubLookup
		wantCalls int
		wantErr   bool
		wantStore string
		wantHeld  bool // the claim kept in progress (the doubt survives)
	}{
		{"applied: no second call", &stubLookup{inv: tax.Invoice{Number: "INV-first"}, applied: true}, 0, false, "INV-first", false},
		{"never applied: call", &stubLookup{}, 1, false, "INV-ORD-1", false},
		{"lookup fails: transient, the claim kept", &stubLookup{err: errors.New("503 after 4 attempts")}, 0, true, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, tx := idempotency.NewMemoryStore(), &stubTax{}
			now := time.Now()
			hash, ok := invoicing.PayloadHash(valid)
			if !ok {
				t.Fatal("the order does not hash")
			}
			dead := idempotency.Lease{Key: idempotency.Key("invoice", o.OrderID), PayloadHash: hash, Token: "dead",
				Now: now.Add(-time.Minute), Until: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour)}
			if _, claimed, err := store.Claim(context.Background(), dead); err != nil || !claimed {
				t.Fatal(claimed, err)
			}
			h := &invoicing.Handler{Receiver: &idempotency.Receiver{Store: store, Scope: "invoice"}, Invoicer: tx, Lookup: tt.lookup}
			err := h.Handle(context.Background(), msg(valid))
			var inv *order.InvalidError
			if (err != nil) != tt.wantErr || errors.As(err, &inv) {
				t.Fatalf("err = %v, want transient error %v", err, tt.wantErr)
			}
			if tx.calls != tt.wantCalls || len(tt.lookup.keys) != 1 || tt.lookup.keys[0] != "ORD-1" {
				t.Fatalf("tax calls %d (want %d), lookups %v", tx.calls, tt.wantCalls, tt.lookup.keys)
			}
			rec, ok := store.Get(idempotency.Key("invoice", "ORD-1"))
			if tt.wantStore != "" && (rec.Status != idempotency.Completed || rec.Result != tt.wantStore) {
				t.Fatalf("record = %+v, want COMPLETED %s", rec, tt.wantStore)
			}
			if tt.wantHeld && (!ok || rec.Status != idempotency.InProgress) {
				t.Fatalf("record = %+v, want the claim kept in progress", rec)
			}
		})
	}
}

// An expired claim of another payload (a conflicting duplicate that claimed
// the order first and died, or whose release failed) is resolved by the
// lookup before the order is declared a conflicting duplicate.
func TestHandleResolvesAnExpiredClaimOfAnotherPayload(t *testing.T) {
	tests := []struct {
		name       string
		lookup     *stubLookup // nil: none configured
		wantCalls  int
		wantReason order.Reason // "" and wantErr: a transient error
		wantErr    bool
	}{
		{"void: invoiced", &stubLookup{}, 1, "", false},
		{"applied by the other payload: conflicting duplicate", &stubLookup{inv: tax.Invoice{Number: "INV-other"}, applied: true}, 0, order.ReasonConflictingDuplicate, true},
		{"lookup fails: transient", &stubLookup{err: errors.New("503 after 4 attempts")}, 0, "", true},
		{"no lookup: transient", nil, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, tx := idempotency.NewMemoryStore(), &stubTax{}
			now := time.Now()
			another, ok := invoicing.PayloadHash(strings.Replace(valid, `"Ana Souza"`, `"Ana Lima"`, 1))
			if !ok {
				t.Fatal("the other payload does not hash")
			}
			stale := idempotency.Lease{Key: idempotency.Key("invoice", "ORD-1"), PayloadHash: another, Token: "dead",
				Now: now.Add(-time.Minute), Until: now.Add(-time.Second), ExpiresAt: now.Add(time.Hour)}
			if _, claimed, err := store.Claim(context.Background(), stale); err != nil || !claimed {
				t.Fatal(claimed, err)
			}
			h := &invoicing.Handler{Receiver: &idempotency.Receiver{Store: store, Scope: "invoice"}, Invoicer: tx}
			if tt.lookup != nil {
				h.Lookup = tt.lookup
			}
			err := h.Handle(context.Background(), msg(valid))
			checkErr(t, err, tt.wantReason, tt.wantErr)
			if tx.calls != tt.wantCalls {
				t.Fatalf("tax calls %d, want %d", tx.calls, tt.wantCalls)
			}
		})
	}
}

// checkErr fails t unless err is an invalid order with wantReason, or (no
// wantReason) a transient error when wantErr, nil otherwise.
func checkErr(t *testing.T, err error, wantReason order.Reason, wantErr bool) {
	t.Helper()
	var inv *order.InvalidError
	switch {
	case wantReason != "":
		if got := reasonOf(t, err); got != wantReason {
			t.Fatalf("reason = %s, want %s", got, wantReason)
		}
	case (err != nil) != wantErr || errors.As(err, &inv):
		t.Fatalf("err = %v, want a transient error %v", err, wantErr)
	}
}

// failure is an invoice error that says whether the service applied the
// call, as the tax client's errors do (NotApplied).
type failure struct {
	err        error
	notApplied bool
}

func (f failure) Error() string    { return f.err.Error() }
func (f failure) Unwrap() error    { return f.err }
func (f failure) NotApplied() bool { return f.notApplied }

// The service applied the call but its answer was lost (a timeout, a
// connection reset): the invoice is looked up before the claim is given
// back. Found, the order is invoiced and acknowledged; not found, the claim
// is released for a retry; unknown, the claim is kept (the next delivery is
// an in-doubt takeover that asks again) and the failure is transient, even
// when the last answer was a rejection. A failure the service answered is
// released without a lookup.
func TestHandleResolvesALostAnswer(t *testing.T) {
	lost := errors.New("read tax answer: connection reset by peer")
	rejectedAfterATimeout := failure{fmt.Errorf("issue invoice for ORD-1: %w", &tax.RejectedError{Status: 422, Detail: "blocked"}), false}
	tests := []struct {
		name        string
		invoiceErr  error
		lookup      *stubLookup
		wantLookups int
		wantErr     bool
		wantReason  order.Reason       // a rejection routed to the invalid lane
		wantStatus  idempotency.Status // "": released
		wantResult  string
	}{
		{"answered 503: released, no lookup", failure{errors.New("503 after 4 attempts"), true},
			&stubLookup{inv: tax.Invoice{Number: "INV-x"}, applied: true}, 0, true, "", "", ""},
		{"answer lost, invoiced: acknowledged", lost,
			&stubLookup{inv: tax.Invoice{Number: "INV-lost"}, applied: true}, 1, false, "", idempotency.Completed, "INV-lost"},
		{"answer lost, never invoiced: released", lost, &stubLookup{}, 1, true, "", "", ""},
		{"answer lost, lookup fails: kept", lost, &stubLookup{err: errors.New("lookup: 503")}, 1, true, "", idempotency.InProgress, ""},
		{"rejected after a timeout, lookup fails: kept, transient", rejectedAfterATimeout,
			&stubLookup{err: errors.New("lookup: 503")}, 1, true, "", idempotency.InProgress, ""},
		{"rejected after a timeout, never invoiced: rejected", rejectedAfterATimeout,
			&stubLookup{}, 1, true, order.ReasonRejectedByTaxService, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, tx := idempotency.NewMemoryStore(), &stubTax{err: tt.invoiceErr}
			h := handler(store, tx)
			h.Lookup = tt.lookup
			err := h.Handle(context.Background(), msg(valid))
			checkErr(t, err, tt.wantReason, tt.wantErr)
			if tx.calls != 1 || len(tt.lookup.keys) != tt.wantLookups {
				t.Fatalf("tax calls %d, lookups %v (want %d)", tx.calls, tt.lookup.keys, tt.wantLookups)
			}
			rec, ok := store.Get(idempotency.Key("invoice", "ORD-1"))
			switch {
			case tt.wantStatus == "" && ok:
				t.Fatalf("record = %+v, want the claim released", rec)
			case tt.wantStatus != "" && (rec.Status != tt.wantStatus || rec.Result != tt.wantResult):
				t.Fatalf("record = %+v, want %s %q", rec, tt.wantStatus, tt.wantResult)
			}
		})
	}
}
