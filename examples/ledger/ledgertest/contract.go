package ledgertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/homingdlq/homing/examples/ledger"
)

// capturedStart is the capture time of t's first payment.
var capturedStart = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// account is t's own account id (its name).
func account(t *testing.T) string { return t.Name() }

// posting is payment n of t's account: n euros, captured n seconds after
// capturedStart. The same n gives the same posting.
func posting(t *testing.T, n int) ledger.Posting {
	return ledger.Posting{
		PaymentID:   fmt.Sprintf("%s/PAY-%d", account(t), n),
		AccountID:   account(t),
		AmountMinor: int64(100 * n),
		Currency:    "EUR",
		CapturedAt:  capturedStart.Add(time.Duration(n) * time.Second),
	}
}

// TestAppendsNumberEntriesInSequence: appends to an account return entries
// numbered 1, 2, 3 holding their postings, and Entries returns them in that
// order.
func TestAppendsNumberEntriesInSequence(t *testing.T, h Harness) {
	l := h.NewLedger(t)
	for n := 1; n <= 3; n++ {
		e, err := l.Append(t.Context(), posting(t, n))
		if err != nil || e.Seq != int64(n) || e.Posting != posting(t, n) {
			t.Fatalf("Append #%d = %+v, %v", n, e, err)
		}
	}
	got, err := l.Entries(t.Context(), account(t))
	if err != nil || len(got) != 3 {
		t.Fatalf("Entries = %+v, %v", got, err)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || e.Posting != posting(t, i+1) {
			t.Errorf("entry %d = %+v", i, e)
		}
	}
}

// TestAppendAgainAddsNothing: appending a payment id already in the ledger,
// with its content or another, returns the entry it has and adds none.
func TestAppendAgainAddsNothing(t *testing.T, h Harness) {
	l := h.NewLedger(t)
	first, err := l.Append(t.Context(), posting(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	other := posting(t, 1)
	other.AmountMinor = 1 // another content under the same payment id
	for _, p := range []ledger.Posting{posting(t, 1), other} {
		if e, err := l.Append(t.Context(), p); err != nil || e != first {
			t.Fatalf("Append again = %+v, %v; want %+v", e, err, first)
		}
	}
	if got, err := l.Entries(t.Context(), account(t)); err != nil || len(got) != 1 {
		t.Fatalf("Entries = %+v, %v; want one", got, err)
	}
}

// TestLookupFindsTheAppendedEntry: Lookup finds no payment before its
// append and the appended entry after it, whose Ref is "<account>/<seq>".
func TestLookupFindsTheAppendedEntry(t *testing.T, h Harness) {
	l := h.NewLedger(t)
	p := posting(t, 1)
	if _, found, err := l.Lookup(t.Context(), p.PaymentID); err != nil || found {
		t.Fatalf("Lookup before = %v, %v", found, err)
	}
	e, err := l.Append(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got, found, err := l.Lookup(t.Context(), p.PaymentID); err != nil || !found || got != e {
		t.Fatalf("Lookup = %+v, %v, %v; want %+v", got, found, err, e)
	}
	if want := account(t) + "/1"; e.Ref() != want {
		t.Errorf("Ref() = %q, want %q", e.Ref(), want)
	}
}

// TestFrozenAccountWritesNothing: an append to a frozen account fails with
// ErrFrozen, in an error whose NotApplied reports true, and applies
// nothing; after the thaw the same payment appends as the account's first
// entry.
func TestFrozenAccountWritesNothing(t *testing.T, h Harness) {
	l := h.NewLedger(t)
	p := posting(t, 1)
	if err := l.Freeze(t.Context(), account(t), true); err != nil {
		t.Fatal(err)
	}
	_, err := l.Append(t.Context(), p)
	var na interface{ NotApplied() bool }
	if !errors.Is(err, ledger.ErrFrozen) || !errors.As(err, &na) || !na.NotApplied() {
		t.Fatalf("Append to a frozen account = %v, want ErrFrozen, not applied", err)
	}
	if _, found, err := l.Lookup(t.Context(), p.PaymentID); err != nil || found {
		t.Fatalf("Lookup after the refused append = found %v, %v: a payment to a frozen account was applied", found, err)
	}
	if err := l.Freeze(t.Context(), account(t), false); err != nil {
		t.Fatal(err)
	}
	if e, err := l.Append(t.Context(), p); err != nil || e.Seq != 1 {
		t.Fatalf("Append after the thaw = %+v, %v", e, err)
	}
}

// TestConcurrentAppendsNeverSkipOrRepeat: appends of eight payments racing
// on one account, each retried while it fails with ErrContended, leave
// eight entries numbered 1 to 8, each of another payment. It needs
// [Features.ConcurrentTransactions].
func TestConcurrentAppendsNeverSkipOrRepeat(t *testing.T, h Harness) {
	needs(t, h.Features.ConcurrentTransactions, "ConcurrentTransactions")
	l := h.NewLedger(t)
	const n = 8
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			for {
				_, err := l.Append(t.Context(), posting(t, i))
				if !errors.Is(err, ledger.ErrContended) {
					if err != nil {
						t.Error(err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := l.Entries(t.Context(), account(t))
	if err != nil || len(got) != n {
		t.Fatalf("Entries = %d, %v; want %d", len(got), err, n)
	}
	seen := map[string]bool{}
	for i, e := range got {
		if e.Seq != int64(i+1) || seen[e.PaymentID] {
			t.Errorf("entry %d = %+v (seen before: %t)", i, e, seen[e.PaymentID])
		}
		seen[e.PaymentID] = true
	}
}
