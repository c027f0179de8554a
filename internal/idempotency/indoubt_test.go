package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/idempotency"
)

// failingComplete fails the first failures Completes (every one when
// failures < 0), like a throttled or unreachable table.
type failingComplete struct {
	*idempotency.MemoryStore
	failures int
	calls    int
}

func (f *failingComplete) Complete(ctx context.Context, l idempotency.Lease, result string) error {
	f.calls++
	if f.failures != 0 {
		f.failures--
		return errors.New("ProvisionedThroughputExceeded")
	}
	return f.MemoryStore.Complete(ctx, l, result)
}

// sleeper advances the fake clock instead of waiting.
func sleeper(c *clock) func(context.Context, time.Duration) error {
	return func(_ context.Context, d time.Duration) error {
		c.t = c.t.Add(d)
		return nil
	}
}

// Item 9: after the effect, the completion is retried with backoff within the
// invocation deadline, not just twice.
func TestReceiverRetriesTheCompletionWithinTheDeadline(t *testing.T) {
	c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	store := &failingComplete{MemoryStore: idempotency.NewMemoryStore(), failures: 4}
	r := &idempotency.Receiver{Store: store, Scope: "invoice", Now: c.now, Sleep: sleeper(c)}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancel()
	var calls atomic.Int32
	out, err := r.Do(ctx, "ORD-1", "h1", issue(&calls, "INV-1", nil))
	if err != nil || out.Result != "INV-1" || out.Unrecorded {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if rec, _ := store.Get("invoice#ORD-1"); rec.Status != idempotency.Completed || rec.Result != "INV-1" {
		t.Fatalf("record = %+v, want COMPLETED", rec)
	}
	if store.calls != 5 {
		t.Fatalf("%d completion attempts, want 5", store.calls)
	}
}

// Item 9: when the completion cannot be recorded at all, the record is
// acknowledged (no error: a redelivery would redo the effect), flagged and
// reported, within the time left.
func TestReceiverAcknowledgesAnUnrecordedCompletion(t *testing.T) {
	c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	store := &failingComplete{MemoryStore: idempotency.NewMemoryStore(), failures: -1}
	var reported []string
	r := &idempotency.Receiver{Store: store, Scope: "invoice", Now: c.now, Sleep: sleeper(c),
		OnUnrecorded: func(key, result string, err error) {
			if err == nil {
				t.Error("OnUnrecorded without the cause")
			}
			reported = append(reported, key+"="+result)
		}}
	start := c.t
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancel()
	var calls atomic.Int32
	out, err := r.Do(ctx, "ORD-1", "h1", issue(&calls, "INV-1", nil))
	if err != nil {
		t.Fatalf("err = %v, want the record acknowledged", err)
	}
	if !out.Unrecorded || out.Result != "INV-1" {
		t.Fatalf("out = %+v, want Unrecorded with the result", out)
	}
	if len(reported) != 1 || reported[0] != "ORD-1=INV-1" {
		t.Fatalf("reported %v", reported)
	}
	if store.calls < 3 {
		t.Fatalf("%d completion attempts, want retries", store.calls)
	}
	if spent := c.t.Sub(start); spent > idempotency.DefaultCompleteBudget {
		t.Fatalf("retried for %s, more than the budget %s", spent, idempotency.DefaultCompleteBudget)
	}
}

type fakeResolver struct {
	result  string
	applied bool
	err     error
	keys    []string
}

func (f *fakeResolver) Lookup(_ context.Context, key string) (string, bool, error) {
	f.keys = append(f.keys, key)
	return f.result, f.applied, f.err
}

// Item 9: a takeover of an expired IN_PROGRESS claim is in doubt; the
// resolver is asked before the effect runs again.
func TestReceiverResolvesAnInDoubtTakeover(t *testing.T) {
	lookupFailed := errors.New("tax service: 503")
	tests := []struct {
		name           string
		resolver       *fakeResolver // nil: none configured
		wantErr        error
		wantResult     string
		wantCalls      int32
		wantResolution idempotency.Resolution
	}{
		{"applied", &fakeResolver{result: "INV-first", applied: true}, nil, "INV-first", 0, idempotency.ResolvedApplied},
		{"not applied", &fakeResolver{}, nil, "INV-second", 1, idempotency.ResolvedNotApplied},
		{"lookup fails", &fakeResolver{err: lookupFailed}, lookupFailed, "", 0, ""},
		{"no resolver", nil, nil, "INV-second", 1, idempotency.Unresolved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := idempotency.NewMemoryStore()
			r := receiver(store, &clock{abandoned(t, store)})
			var resolver idempotency.Resolver
			if tt.resolver != nil {
				resolver = tt.resolver
			}
			var calls atomic.Int32
			out, err := r.DoResolving(context.Background(), "ORD-1", "h1", resolver, issue(&calls, "INV-second", nil))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if out.Result != tt.wantResult || out.Resolution != tt.wantResolution || (err == nil && !out.InDoubt) {
				t.Fatalf("out = %+v, want result %q, in doubt, resolution %q", out, tt.wantResult, tt.wantResolution)
			}
			if calls.Load() != tt.wantCalls {
				t.Fatalf("effect ran %d times after the takeover, want %d", calls.Load(), tt.wantCalls)
			}
			if tt.resolver != nil && (len(tt.resolver.keys) != 1 || tt.resolver.keys[0] != "ORD-1") {
				t.Fatalf("looked up %v, want [ORD-1]", tt.resolver.keys)
			}
			rec, held := store.Get("invoice#ORD-1")
			if tt.wantErr != nil {
				if held {
					t.Fatalf("record = %+v, want the claim released after a failed lookup", rec)
				}
			} else if rec.Status != idempotency.Completed || rec.Result != tt.wantResult {
				t.Fatalf("record = %+v, want COMPLETED with %q", rec, tt.wantResult)
			}
		})
	}
}

// abandoned leaves in store the IN_PROGRESS claim of ORD-1 (payload h1) of a
// holder that issued the invoice and died before completing; its lock
// expires at the time returned.
func abandoned(t *testing.T, store idempotency.Store) time.Time {
	t.Helper()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	l := idempotency.Lease{Key: idempotency.Key("invoice", "ORD-1"), PayloadHash: "h1", Token: "dead",
		Now: now, Until: now.Add(30 * time.Second), ExpiresAt: now.Add(idempotency.DefaultLifetime)}
	if _, claimed, err := store.Claim(context.Background(), l); err != nil || !claimed {
		t.Fatalf("claim: claimed=%v err=%v", claimed, err)
	}
	return l.Until
}

// An ordinary first delivery is not in doubt and asks no one.
func TestReceiverFirstDeliveryIsNotInDoubt(t *testing.T) {
	res := &fakeResolver{applied: true, result: "INV-x"}
	r := &idempotency.Receiver{Store: idempotency.NewMemoryStore(), Scope: "invoice"}
	var calls atomic.Int32
	out, err := r.DoResolving(context.Background(), "ORD-1", "h1", res, issue(&calls, "INV-1", nil))
	if err != nil || out.InDoubt || out.Resolution != "" || out.Result != "INV-1" || len(res.keys) != 0 {
		t.Fatalf("out=%+v err=%v lookups=%v", out, err, res.keys)
	}
}

// Item 10: a takeover compares the payload hash like any other claim.
func TestReceiverTakeoverWithAnotherPayloadIsAConflict(t *testing.T) {
	store := idempotency.NewMemoryStore()
	expiry := abandoned(t, store)
	var calls atomic.Int32
	_, err := receiver(store, &clock{expiry.Add(time.Second)}).Do(context.Background(), "ORD-1", "h2", issue(&calls, "INV-other", nil))
	if !errors.Is(err, idempotency.ErrConflict) {
		t.Errorf("takeover with another payload: err = %v, want ErrConflict", err)
	}
	if calls.Load() != 0 {
		t.Fatal("the other payload ran its effect")
	}
	if rec, _ := store.Get("invoice#ORD-1"); rec.PayloadHash != "h1" || rec.Token != "dead" {
		t.Fatalf("record = %+v, want the first payload's claim", rec)
	}
}
