package idempotencytest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
)

// Gap is a documented behaviour of the backend that an implementation under
// test is known not to have (an emulator's gap). A contract suite skips the
// subtests that depend on a declared gap, saying so, instead of failing on
// the emulator or silently passing.
type Gap string

// The gaps the suites know.
const (
	// UnserialisedConditionalWrites: concurrent conditional writes to one
	// item are not serialised, so two can both pass their condition
	// (moto's server evaluates the condition and writes without a lock;
	// DynamoDB serialises them). The concurrency subtests need them.
	UnserialisedConditionalWrites Gap = "concurrent conditional writes to one item are not serialised"
)

// Skip skips t when gaps holds g.
func Skip(t *testing.T, gaps []Gap, g Gap) {
	t.Helper()
	if slices.Contains(gaps, g) {
		t.Skipf("declared gap of this implementation: %s", g)
	}
}

// Run runs the contract against stores made by newStore, one named subtest
// per rule (go test -run 'Contract/takeover_returns_the_expired_lock'). Each subtest gets a
// fresh store (or fresh keys: keys are unique per subtest and run). gaps
// declares what the implementation is known to lack; the subtests that need
// it are skipped.
func Run(t *testing.T, newStore func(t *testing.T) idempotency.Store, gaps ...Gap) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var seq int
	var mu sync.Mutex
	lease := func(t *testing.T, token string, now time.Time) idempotency.Lease {
		mu.Lock()
		defer mu.Unlock()
		return idempotency.Lease{
			Key:         fmt.Sprintf("contract#%s-%d", t.Name(), seq),
			PayloadHash: "hash-a",
			Token:       token,
			Now:         now,
			Until:       now.Add(time.Minute),
			ExpiresAt:   now.Add(idempotency.DefaultLifetime),
		}
	}
	ctx := context.Background()
	next := func() { mu.Lock(); seq++; mu.Unlock() }

	t.Run("first claim wins", func(t *testing.T) {
		next()
		s := newStore(t)
		if _, claimed, err := s.Claim(ctx, lease(t, "a", t0)); err != nil || !claimed {
			t.Fatalf("claimed=%v err=%v", claimed, err)
		}
	})

	t.Run("live lock is not claimable", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		b := lease(t, "b", t0.Add(30*time.Second))
		cur, claimed, err := s.Claim(ctx, b)
		if err != nil || claimed {
			t.Fatalf("claimed=%v err=%v, want the live lock to stand", claimed, err)
		}
		if cur.Status != idempotency.InProgress || cur.Token != "a" || !cur.LockExpiresAt.Equal(a.Until) || cur.PayloadHash != "hash-a" {
			t.Fatalf("current = %+v", cur)
		}
	})

	t.Run("expired lock is claimable", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		b := lease(t, "b", a.Until)
		mustClaim(t, s, b)
		if err := s.Complete(ctx, a, "INV-late"); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("stale holder completed: err = %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, a); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("stale holder released: err = %v, want ErrLeaseLost", err)
		}
	})

	t.Run("takeover returns the expired lock", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		b := lease(t, "b", a.Until)
		prev, claimed, err := s.Claim(ctx, b)
		if err != nil || !claimed {
			t.Fatalf("claimed=%v err=%v", claimed, err)
		}
		if prev.Status != idempotency.InProgress || prev.Token != "a" || prev.PayloadHash != "hash-a" || !prev.LockExpiresAt.Equal(a.Until) {
			t.Fatalf("previous = %+v, want a's expired lock (the takeover is in doubt)", prev)
		}
	})

	t.Run("fresh claim returns no record", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		if prev, claimed, err := s.Claim(ctx, a); err != nil || !claimed || prev != (idempotency.Record{}) {
			t.Fatalf("absent key: previous=%+v claimed=%v err=%v", prev, claimed, err)
		}
		// A lock whose record expired is not in doubt any more.
		b := lease(t, "b", a.ExpiresAt)
		if prev, claimed, err := s.Claim(ctx, b); err != nil || !claimed || prev != (idempotency.Record{}) {
			t.Fatalf("expired record: previous=%+v claimed=%v err=%v", prev, claimed, err)
		}
	})

	t.Run("takeover of another payload is refused", func(t *testing.T) {
		// Without Supersedes: an expired lock of another payload is in
		// doubt until the receiver has asked the downstream.
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		b := lease(t, "b", a.Until.Add(time.Second))
		b.PayloadHash = "hash-b"
		cur, claimed, err := s.Claim(ctx, b)
		if err != nil || claimed {
			t.Fatalf("claimed=%v err=%v, want the expired lock of another payload to stand", claimed, err)
		}
		if cur.Token != "a" || cur.PayloadHash != "hash-a" {
			t.Fatalf("current = %+v", cur)
		}
		if err := s.Complete(ctx, a, "INV-1"); err != nil {
			t.Fatalf("the first holder lost its claim to another payload: %v", err)
		}
	})

	t.Run("takeover of another payload after a void claim", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		b := lease(t, "b", a.Until.Add(time.Second))
		b.PayloadHash = "hash-b"
		b.Supersedes = "a" // the resolver said a never applied the key
		prev, claimed, err := s.Claim(ctx, b)
		if err != nil || !claimed {
			t.Fatalf("claimed=%v err=%v, want the void claim taken over", claimed, err)
		}
		if prev.Status != idempotency.InProgress || prev.Token != "a" || prev.PayloadHash != "hash-a" {
			t.Fatalf("previous = %+v, want a's expired lock", prev)
		}
		if err := s.Complete(ctx, a, "INV-late"); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("void holder completed: err = %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, b, "INV-b"); err != nil {
			t.Fatal(err)
		}
		// The key now belongs to b's payload.
		again := lease(t, "b2", b.Now.Add(time.Hour))
		again.PayloadHash = "hash-b"
		mustFindCompleted(t, s, again, "hash-b", "INV-b")
	})

	t.Run("void claim must be the expired lock seen", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		for _, tt := range []struct {
			name       string
			now        time.Time
			supersedes string
		}{
			{"another token", a.Until.Add(time.Second), "x"},
			{"a live lock", a.Until.Add(-time.Second), "a"},
		} {
			b := lease(t, "b-"+tt.name, tt.now)
			b.PayloadHash = "hash-b"
			b.Supersedes = tt.supersedes
			if cur, claimed, err := s.Claim(ctx, b); err != nil || claimed || cur.Token != "a" {
				t.Fatalf("%s: current=%+v claimed=%v err=%v, want a's lock to stand", tt.name, cur, claimed, err)
			}
		}
		if err := s.Complete(ctx, a, "INV-a"); err != nil {
			t.Fatal(err)
		}
		// A completed record keeps the token of its claim: it is no lock.
		b := lease(t, "b", a.Until.Add(time.Second))
		b.PayloadHash = "hash-b"
		b.Supersedes = "a"
		mustFindCompleted(t, s, b, "hash-a", "INV-a")
	})

	t.Run("expired claim found applied is completed by its token", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		// Another payload's receiver completes a's expired claim with the
		// result the resolver found, under a's payload hash.
		settle := a
		settle.Now = a.Until.Add(time.Second)
		settle.ExpiresAt = settle.Now.Add(idempotency.DefaultLifetime)
		if err := s.Complete(ctx, settle, "INV-a"); err != nil {
			t.Fatal(err)
		}
		mustFindCompleted(t, s, lease(t, "a2", settle.Now.Add(time.Hour)), "hash-a", "INV-a")
	})

	t.Run("completed record returns its result", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		if err := s.Complete(ctx, a, "INV-1"); err != nil {
			t.Fatal(err)
		}
		b := lease(t, "b", t0.Add(14*24*time.Hour)) // a replay two weeks later
		b.PayloadHash = "hash-b"
		cur, claimed, err := s.Claim(ctx, b)
		if err != nil || claimed {
			t.Fatalf("claimed=%v err=%v", claimed, err)
		}
		if cur.Status != idempotency.Completed || cur.Result != "INV-1" || cur.PayloadHash != "hash-a" || !cur.ExpiresAt.Equal(a.ExpiresAt) {
			t.Fatalf("current = %+v", cur)
		}
	})

	t.Run("expired record is claimable", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		if err := s.Complete(ctx, a, "INV-1"); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, s, lease(t, "b", a.ExpiresAt))
	})

	t.Run("release frees the key", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		if err := s.Release(ctx, a); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, s, lease(t, "b", t0.Add(time.Second)))
	})

	t.Run("only the holder completes or releases", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		mustClaim(t, s, a)
		other := a
		other.Token = "intruder"
		if err := s.Complete(ctx, other, "INV-x"); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete: err = %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, other); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Release: err = %v, want ErrLeaseLost", err)
		}
		if err := s.Complete(ctx, a, "INV-1"); err != nil {
			t.Fatal(err)
		}
		// A completion retried after its answer was lost is done, and
		// changes nothing.
		if err := s.Complete(ctx, a, "INV-2"); err != nil {
			t.Fatalf("second Complete by the holder: err = %v, want nil", err)
		}
		if cur, claimed, err := s.Claim(ctx, lease(t, "b", t0)); err != nil || claimed || cur.Result != "INV-1" {
			t.Fatalf("after a second Complete: %+v, claimed=%v, err=%v; want the first result", cur, claimed, err)
		}
		if err := s.Release(ctx, a); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Release after Complete: err = %v, want ErrLeaseLost", err)
		}
	})

	t.Run("absent key cannot be completed or released", func(t *testing.T) {
		next()
		s := newStore(t)
		a := lease(t, "a", t0)
		if err := s.Complete(ctx, a, "INV-1"); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete: err = %v", err)
		}
		if err := s.Release(ctx, a); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Release: err = %v", err)
		}
	})

	t.Run("concurrent claimers: exactly one wins", func(t *testing.T) {
		Skip(t, gaps, UnserialisedConditionalWrites)
		next()
		s := newStore(t)
		const n = 8
		base := lease(t, "", t0)
		var wg sync.WaitGroup
		var won sync.Map
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				l := base
				l.Token = fmt.Sprintf("claimer-%d", i)
				_, claimed, err := s.Claim(ctx, l)
				if err != nil {
					errs <- err
					return
				}
				if claimed {
					won.Store(l.Token, true)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		winners := 0
		won.Range(func(_, _ any) bool { winners++; return true })
		if winners != 1 {
			t.Fatalf("%d claimers won, want exactly 1", winners)
		}
	})
}

func mustClaim(t *testing.T, s idempotency.Store, l idempotency.Lease) {
	t.Helper()
	if _, claimed, err := s.Claim(context.Background(), l); err != nil || !claimed {
		t.Fatalf("claim %s by %s: claimed=%v err=%v", l.Key, l.Token, claimed, err)
	}
}

// mustFindCompleted claims with l and wants the standing COMPLETED record of
// payloadHash with result.
func mustFindCompleted(t *testing.T, s idempotency.Store, l idempotency.Lease, payloadHash, result string) {
	t.Helper()
	cur, claimed, err := s.Claim(context.Background(), l)
	if err != nil || claimed || cur.Status != idempotency.Completed || cur.PayloadHash != payloadHash || cur.Result != result {
		t.Fatalf("claim %s by %s: current=%+v claimed=%v err=%v, want the completed record of %s with %s", l.Key, l.Token, cur, claimed, err, payloadHash, result)
	}
}
