package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/idempotency/idempotencytest"
)

func TestMemoryStoreContract(t *testing.T) {
	idempotencytest.Run(t, idempotencytest.Harness{
		NewStore: func(*testing.T) idempotency.Store { return idempotency.NewMemoryStore() },
		Features: idempotencytest.Features{ConcurrentClaims: true},
	})
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func receiver(s idempotency.Store, c *clock) *idempotency.Receiver {
	return &idempotency.Receiver{Store: s, Scope: "invoice", Now: c.now}
}

func issue(n *atomic.Int32, result string, err error) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		n.Add(1)
		return result, err
	}
}

func TestReceiverOutcomes(t *testing.T) {
	ctx := context.Background()
	c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	store := idempotency.NewMemoryStore()
	r := receiver(store, c)
	var calls atomic.Int32

	out, err := r.Do(ctx, "ORD-1", "h1", issue(&calls, "INV-1", nil))
	if err != nil || out != (idempotency.Outcome{Result: "INV-1"}) {
		t.Fatalf("first delivery: out=%+v err=%v", out, err)
	}
	rec, _ := store.Get("invoice#ORD-1")
	if rec.Status != idempotency.Completed || rec.Result != "INV-1" || rec.PayloadHash != "h1" {
		t.Fatalf("record = %+v", rec)
	}
	if want := c.t.Add(idempotency.DefaultLifetime); !rec.ExpiresAt.Equal(want) {
		t.Fatalf("expires %v, want %v", rec.ExpiresAt, want)
	}

	c.t = c.t.Add(14 * 24 * time.Hour) // replayed from the DLQ two weeks later
	out, err = r.Do(ctx, "ORD-1", "h1", issue(&calls, "INV-2", nil))
	if err != nil || out != (idempotency.Outcome{Result: "INV-1", Duplicate: true}) {
		t.Fatalf("duplicate: out=%+v err=%v", out, err)
	}

	_, err = r.Do(ctx, "ORD-1", "h2", issue(&calls, "INV-3", nil))
	if !errors.Is(err, idempotency.ErrConflict) {
		t.Fatalf("conflict: err = %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("effect ran %d times, want 1", n)
	}
}

func TestReceiverLockedByALiveInvocation(t *testing.T) {
	c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	store := idempotency.NewMemoryStore()
	r := receiver(store, c)
	ctx, cancel := context.WithDeadline(context.Background(), c.t.Add(30*time.Second))
	defer cancel()
	var calls atomic.Int32
	_, err := r.Do(ctx, "ORD-1", "h1", func(ctx context.Context) (string, error) {
		// While the first invocation runs, a duplicate arrives elsewhere.
		_, err := r.Do(ctx, "ORD-1", "h1", issue(&calls, "INV-dup", nil))
		if !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("concurrent duplicate: err = %v, want ErrInProgress", err)
		}
		return "INV-1", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Fatal("the duplicate ran its effect")
	}
	if rec, _ := store.Get("invoice#ORD-1"); rec.Status != idempotency.Completed {
		t.Fatalf("record = %+v", rec)
	}
}

func TestReceiverLockExpiresAtTheDeadline(t *testing.T) {
	c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	store := idempotency.NewMemoryStore()
	deadline := c.t.Add(30 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var calls atomic.Int32
	_, _ = receiver(store, c).Do(ctx, "ORD-1", "h1", func(context.Context) (string, error) {
		rec, _ := store.Get("invoice#ORD-1")
		if !rec.LockExpiresAt.Equal(deadline) {
			t.Errorf("lock expires %v, want the invocation deadline %v", rec.LockExpiresAt, deadline)
		}
		// A duplicate before the deadline waits.
		if _, err := receiver(store, &clock{deadline.Add(-time.Millisecond)}).Do(context.Background(), "ORD-1", "h1", issue(&calls, "INV-early", nil)); !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("before the deadline: err = %v, want ErrInProgress", err)
		}
		// The holder dies here, without releasing: a duplicate at the
		// deadline takes over.
		out, err := receiver(store, &clock{deadline}).Do(context.Background(), "ORD-1", "h1", issue(&calls, "INV-1", nil))
		if err != nil || out.Result != "INV-1" {
			t.Errorf("at the deadline: out=%+v err=%v", out, err)
		}
		return "", errors.New("invocation timed out")
	})
	if calls.Load() != 1 {
		t.Fatalf("effect ran %d times after the takeover, want 1", calls.Load())
	}
	// The dead holder's release must not remove the new owner's record.
	if rec, _ := store.Get("invoice#ORD-1"); rec.Status != idempotency.Completed || rec.Result != "INV-1" {
		t.Fatalf("record = %+v", rec)
	}
}

func TestReceiverReleasesOnFailure(t *testing.T) {
	c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	store := idempotency.NewMemoryStore()
	r := receiver(store, c)
	cause := errors.New("tax service: 503")
	var calls atomic.Int32
	if _, err := r.Do(context.Background(), "ORD-1", "h1", issue(&calls, "", cause)); !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the effect's error", err)
	}
	if _, ok := store.Get("invoice#ORD-1"); ok {
		t.Fatal("claim not released after a failure")
	}
	out, err := r.Do(context.Background(), "ORD-1", "h1", issue(&calls, "INV-1", nil))
	if err != nil || out.Result != "INV-1" || calls.Load() != 2 {
		t.Fatalf("retry: out=%+v err=%v calls=%d", out, err, calls.Load())
	}
}

func TestReceiverScopesKeys(t *testing.T) {
	store := idempotency.NewMemoryStore()
	var calls atomic.Int32
	for _, scope := range []string{"invoice", "shipping"} {
		r := &idempotency.Receiver{Store: store, Scope: scope}
		if out, err := r.Do(context.Background(), "ORD-1", "h1", issue(&calls, scope, nil)); err != nil || out.Duplicate {
			t.Fatalf("%s: out=%+v err=%v", scope, out, err)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("effects ran %d times, want once per consumer", calls.Load())
	}
}

// flakyComplete fails the first Complete, like a throttled write, and fails
// every call on a done context, like the DynamoDB store.
type flakyComplete struct {
	*idempotency.MemoryStore
	failures int
}

func (f *flakyComplete) Complete(ctx context.Context, l idempotency.Lease, result string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.failures > 0 {
		f.failures--
		return errors.New("ProvisionedThroughputExceeded")
	}
	return f.MemoryStore.Complete(ctx, l, result)
}

// The invoice was issued: its record is completed even when the invocation
// is cancelled during the effect, and one failed write is retried.
func TestReceiverCompletesAfterTheEffectWhateverTheContext(t *testing.T) {
	store := &flakyComplete{MemoryStore: idempotency.NewMemoryStore(), failures: 1}
	r := &idempotency.Receiver{Store: store, Scope: "invoice"}
	ctx, cancel := context.WithCancel(context.Background())
	out, err := r.Do(ctx, "ORD-1", "h1", func(context.Context) (string, error) {
		cancel() // the deadline strikes right after the tax service answered
		return "INV-1", nil
	})
	if err != nil || out.Result != "INV-1" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if rec, _ := store.Get("invoice#ORD-1"); rec.Status != idempotency.Completed {
		t.Fatalf("record = %+v, want COMPLETED", rec)
	}
}
