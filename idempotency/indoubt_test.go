package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
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
	ctx, cancel := context.WithDeadline(context.Background(), c.t.Add(time.Minute))
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
	ctx, cancel := context.WithDeadline(context.Background(), c.t.Add(time.Minute))
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
				// The doubt must survive: a released claim would let the next
				// delivery claim afresh and call again.
				if !held || rec.Status != idempotency.InProgress || !errors.Is(err, idempotency.ErrInProgress) {
					t.Fatalf("record = %+v (held %v), err = %v: want the claim kept after a failed lookup, and a transient error", rec, held, err)
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

// A takeover of an expired claim of another payload is in doubt too: the
// resolver decides whether the claim was void (the new payload takes the key
// over), applied (its result is recorded under its own payload, and the new
// payload is a conflicting duplicate), or cannot tell (a transient failure,
// never a conflict: the new payload may well be the one to invoice).
func TestReceiverTakeoverOfAnotherPayload(t *testing.T) {
	lookupFailed := errors.New("tax service: 503")
	tests := []struct {
		name           string
		resolver       *fakeResolver // nil: none configured
		wantErr        error
		notErr         error
		wantCalls      int32
		wantResolution idempotency.Resolution
		want           idempotency.Record // the record after the call: status, payload hash, result
	}{
		{"void claim: taken over", &fakeResolver{}, nil, nil, 1, idempotency.ResolvedNotApplied,
			idempotency.Record{Status: idempotency.Completed, PayloadHash: "h2", Result: "INV-other"}},
		{"applied: conflict", &fakeResolver{result: "INV-first", applied: true}, idempotency.ErrConflict, nil, 0, "",
			idempotency.Record{Status: idempotency.Completed, PayloadHash: "h1", Result: "INV-first"}},
		{"lookup fails: in progress", &fakeResolver{err: lookupFailed}, lookupFailed, idempotency.ErrConflict, 0, "",
			idempotency.Record{Status: idempotency.InProgress, PayloadHash: "h1"}},
		{"no resolver: in progress", nil, idempotency.ErrInProgress, idempotency.ErrConflict, 0, "",
			idempotency.Record{Status: idempotency.InProgress, PayloadHash: "h1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := idempotency.NewMemoryStore()
			expiry := abandoned(t, store)
			var resolver idempotency.Resolver
			if tt.resolver != nil {
				resolver = tt.resolver
			}
			var calls atomic.Int32
			out, err := receiver(store, &clock{expiry.Add(time.Second)}).DoResolving(context.Background(), "ORD-1", "h2", resolver, issue(&calls, "INV-other", nil))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr != nil && tt.notErr != nil && errors.Is(err, tt.notErr)) {
				t.Fatalf("err = %v, want %v and not %v", err, tt.wantErr, tt.notErr)
			}
			if tt.wantErr != nil && !errors.Is(err, idempotency.ErrConflict) && !errors.Is(err, idempotency.ErrInProgress) {
				t.Fatalf("err = %v, want it transient (ErrInProgress)", err)
			}
			if err == nil && (!out.InDoubt || out.Resolution != tt.wantResolution || out.Result != "INV-other") {
				t.Fatalf("out = %+v, want INV-other, in doubt, resolution %q", out, tt.wantResolution)
			}
			if calls.Load() != tt.wantCalls {
				t.Fatalf("the other payload ran its effect %d times, want %d", calls.Load(), tt.wantCalls)
			}
			if tt.resolver != nil && (len(tt.resolver.keys) != 1 || tt.resolver.keys[0] != "ORD-1") {
				t.Fatalf("looked up %v, want [ORD-1]", tt.resolver.keys)
			}
			rec, _ := store.Get("invoice#ORD-1")
			if rec.Status != tt.want.Status || rec.PayloadHash != tt.want.PayloadHash || rec.Result != tt.want.Result {
				t.Fatalf("record = %+v, want %s %s %q", rec, tt.want.Status, tt.want.PayloadHash, tt.want.Result)
			}
		})
	}
}

// The path the simulation found (seeds 10 and 18): a conflicting duplicate
// (h2) claims the key first, its call never reaches the service and its
// release is throttled; the original payload (h1) arrives after the lock
// expired. It is invoiced, once, and the duplicate is then the conflict.
func TestReceiverOriginalPayloadTakesOverAVoidClaimOfADuplicate(t *testing.T) {
	c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	store := &failingRelease{MemoryStore: idempotency.NewMemoryStore()}
	r := receiver(store, c)
	res := &fakeResolver{} // the service never applied ORD-1
	var calls atomic.Int32
	ctx, cancel := context.WithDeadline(context.Background(), c.t.Add(30*time.Second))
	defer cancel()
	unreachable := errors.New("tax service unreachable")
	if _, err := r.DoResolving(ctx, "ORD-1", "h2", res, issue(&calls, "", unreachable)); !errors.Is(err, unreachable) {
		t.Fatalf("duplicate: err = %v", err)
	}
	c.t = c.t.Add(time.Minute)
	out, err := r.DoResolving(context.Background(), "ORD-1", "h1", res, issue(&calls, "INV-1", nil))
	if err != nil || out.Result != "INV-1" || !out.InDoubt || out.Resolution != idempotency.ResolvedNotApplied {
		t.Fatalf("original: out=%+v err=%v, want it invoiced after resolving the void claim", out, err)
	}
	res.applied, res.result = true, "INV-1"
	if _, err := r.DoResolving(context.Background(), "ORD-1", "h2", res, issue(&calls, "INV-2", nil)); !errors.Is(err, idempotency.ErrConflict) {
		t.Fatalf("duplicate again: err = %v, want ErrConflict", err)
	}
	if calls.Load() != 2 { // the duplicate's failed call, the original's
		t.Fatalf("effect ran %d times, want 2", calls.Load())
	}
}

// failingRelease cannot delete, like a throttled table.
type failingRelease struct{ *idempotency.MemoryStore }

func (failingRelease) Release(context.Context, idempotency.Lease) error {
	return errors.New("ProvisionedThroughputExceeded")
}

// The time left for the completion retries is read on the receiver's clock,
// as the deadline is: a receiver whose clock is far from the real one (a
// simulation, a test) neither gives up at once nor retries past its deadline.
func TestReceiverRetriesTheCompletionOnItsOwnClock(t *testing.T) {
	tests := []struct {
		name      string
		start     time.Time
		left      time.Duration // until ctx's deadline, on the receiver's clock
		failures  int           // failed completions before one succeeds; -1: all
		wantCalls int           // completion attempts; 0: not checked
		wantSpent time.Duration // at most this long on the receiver's clock
	}{
		{"clock in the past: retries within the deadline", time.Date(2001, 1, 1, 10, 0, 0, 0, time.UTC), time.Minute, 4, 5, idempotency.DefaultCompleteBudget},
		{"clock in the future: stops at the deadline", time.Date(2030, 11, 30, 8, 0, 0, 0, time.UTC), time.Second, -1, 0, time.Second - 250*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{tt.start}
			store := &failingComplete{MemoryStore: idempotency.NewMemoryStore(), failures: tt.failures}
			r := &idempotency.Receiver{Store: store, Scope: "invoice", Now: c.now, Sleep: sleeper(c)}
			ctx, cancel := context.WithDeadline(context.Background(), tt.start.Add(tt.left))
			defer cancel()
			var calls atomic.Int32
			out, err := r.Do(ctx, "ORD-1", "h1", issue(&calls, "INV-1", nil))
			if err != nil || out.Result != "INV-1" {
				t.Fatalf("out=%+v err=%v", out, err)
			}
			if tt.wantCalls > 0 && (store.calls != tt.wantCalls || out.Unrecorded) {
				t.Fatalf("%d completion attempts (unrecorded %v), want %d and the record completed", store.calls, out.Unrecorded, tt.wantCalls)
			}
			if tt.failures < 0 && store.calls < 3 {
				t.Fatalf("%d completion attempts, want retries until the deadline", store.calls)
			}
			if spent := c.t.Sub(tt.start); spent > tt.wantSpent {
				t.Fatalf("retried for %s on the receiver's clock, want at most %s", spent, tt.wantSpent)
			}
		})
	}
}
