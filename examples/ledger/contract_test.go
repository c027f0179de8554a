package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/homingdlq/homing/examples/ledger"
)

// gaps are what an implementation under test declares it cannot do, each
// with its reason; the zero value declares none.
type gaps struct {
	// concurrentTransactions: concurrent TransactWriteItems are not
	// isolated, so the concurrent appends case cannot hold there.
	concurrentTransactions string
}

// runContract holds an implementation to the Ledger contract. Each subtest
// uses accounts and payments of its own (prefixed by run), so one table can
// serve every run.
func runContract(t *testing.T, l ledger.Ledger, run string, declared gaps) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	posting := func(account string, n int) ledger.Posting {
		return ledger.Posting{PaymentID: fmt.Sprintf("%s-%s-PAY-%d", run, account, n), AccountID: run + "-" + account,
			AmountMinor: int64(100 * n), Currency: "EUR", CapturedAt: at.Add(time.Duration(n) * time.Second)}
	}
	t.Run("append_in_sequence", func(t *testing.T) {
		for n := 1; n <= 3; n++ {
			e, err := l.Append(ctx, posting("seq", n))
			if err != nil || e.Seq != int64(n) || e.Posting != posting("seq", n) {
				t.Fatalf("Append #%d = %+v, %v", n, e, err)
			}
		}
		got, err := l.Entries(ctx, run+"-seq")
		if err != nil || len(got) != 3 {
			t.Fatalf("Entries = %+v, %v", got, err)
		}
		for i, e := range got {
			if e.Seq != int64(i+1) || e.Posting != posting("seq", i+1) {
				t.Errorf("entry %d = %+v", i, e)
			}
		}
	})
	t.Run("append_again_adds_nothing", func(t *testing.T) {
		first, err := l.Append(ctx, posting("again", 1))
		if err != nil {
			t.Fatal(err)
		}
		other := posting("again", 1)
		other.AmountMinor = 1 // another content under the same payment id
		for _, p := range []ledger.Posting{posting("again", 1), other} {
			if e, err := l.Append(ctx, p); err != nil || e != first {
				t.Fatalf("Append again = %+v, %v; want %+v", e, err, first)
			}
		}
		if got, _ := l.Entries(ctx, run+"-again"); len(got) != 1 {
			t.Fatalf("Entries = %+v, want one", got)
		}
	})
	t.Run("lookup", func(t *testing.T) {
		if _, found, err := l.Lookup(ctx, posting("lookup", 1).PaymentID); err != nil || found {
			t.Fatalf("Lookup before = %v, %v", found, err)
		}
		e, err := l.Append(ctx, posting("lookup", 1))
		if err != nil {
			t.Fatal(err)
		}
		if got, found, err := l.Lookup(ctx, posting("lookup", 1).PaymentID); err != nil || !found || got != e {
			t.Fatalf("Lookup = %+v, %v, %v; want %+v", got, found, err, e)
		}
		if e.Ref() != run+"-lookup/1" {
			t.Errorf("Ref() = %q", e.Ref())
		}
	})
	t.Run("frozen_account_writes_nothing", func(t *testing.T) {
		if err := l.Freeze(ctx, run+"-frozen", true); err != nil {
			t.Fatal(err)
		}
		_, err := l.Append(ctx, posting("frozen", 1))
		var na interface{ NotApplied() bool }
		if !errors.Is(err, ledger.ErrFrozen) || !errors.As(err, &na) || !na.NotApplied() {
			t.Fatalf("Append to a frozen account = %v, want ErrFrozen, not applied", err)
		}
		if _, found, _ := l.Lookup(ctx, posting("frozen", 1).PaymentID); found {
			t.Fatal("a payment to a frozen account was applied")
		}
		if err := l.Freeze(ctx, run+"-frozen", false); err != nil {
			t.Fatal(err)
		}
		if e, err := l.Append(ctx, posting("frozen", 1)); err != nil || e.Seq != 1 {
			t.Fatalf("Append after the thaw = %+v, %v", e, err)
		}
	})
	t.Run("concurrent_appends_never_skip_or_repeat", func(t *testing.T) {
		if why := declared.concurrentTransactions; why != "" {
			t.Skip("declared gap: " + why)
		}
		const n = 8
		var wg sync.WaitGroup
		for i := 1; i <= n; i++ {
			wg.Go(func() {
				for {
					_, err := l.Append(ctx, posting("race", i))
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
		got, err := l.Entries(ctx, run+"-race")
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
	})
}

func TestMemoryContract(t *testing.T) {
	runContract(t, &ledger.Memory{}, "mem", gaps{})
}
