package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
)

// definite is an effect's error that says whether the effect was applied,
// as the tax client's errors do.
type definite struct {
	err        error
	notApplied bool
}

func (e definite) Error() string    { return e.err.Error() }
func (e definite) Unwrap() error    { return e.err }
func (e definite) NotApplied() bool { return e.notApplied }

// An effect's error is either known not applied (the downstream answered
// with a failure) or ambiguous (a timeout, a connection reset after the
// request was sent: the effect may have happened). Only the first releases
// the claim at once; the second is resolved by the lookup first, and when
// the lookup cannot tell, the claim is kept so that the doubt survives.
func TestReceiverResolvesAnAmbiguousEffectError(t *testing.T) {
	cause := errors.New("read tax answer: connection reset by peer")
	lookupFailed := errors.New("tax service: 503")
	tests := []struct {
		name           string
		effectErr      error
		resolver       *fakeResolver // nil: none configured
		wantErr        []error       // all matched with errors.Is; nil: success
		notErr         error         // must not match: a kept claim is transient, not the effect's error
		wantLookups    int
		wantStatus     idempotency.Status // "": the claim released
		wantResult     string
		wantResolution idempotency.Resolution
	}{
		{name: "not applied: released without a lookup",
			effectErr: definite{cause, true}, resolver: &fakeResolver{result: "INV-1", applied: true},
			wantErr: []error{cause}},
		{name: "ambiguous, found applied: completed with the result found",
			effectErr: cause, resolver: &fakeResolver{result: "INV-1", applied: true},
			wantLookups: 1, wantStatus: idempotency.Completed, wantResult: "INV-1", wantResolution: idempotency.ResolvedApplied},
		{name: "ambiguous, found not applied: released",
			effectErr: cause, resolver: &fakeResolver{},
			wantErr: []error{cause}, wantLookups: 1},
		{name: "ambiguous, lookup fails: the claim is kept",
			effectErr: cause, resolver: &fakeResolver{err: lookupFailed},
			wantErr: []error{lookupFailed, idempotency.ErrInProgress}, wantLookups: 1, wantStatus: idempotency.InProgress},
		{name: "lookup fails after a definite cause under an ambiguous history: kept, not the cause",
			effectErr: definite{definite{cause, true}, false}, resolver: &fakeResolver{err: lookupFailed},
			wantErr: []error{lookupFailed}, notErr: cause, wantLookups: 1, wantStatus: idempotency.InProgress},
		{name: "context deadline: ambiguous",
			effectErr: context.DeadlineExceeded, resolver: &fakeResolver{result: "INV-1", applied: true},
			wantLookups: 1, wantStatus: idempotency.Completed, wantResult: "INV-1", wantResolution: idempotency.ResolvedApplied},
		{name: "ambiguous without a resolver: released",
			effectErr: cause,
			wantErr:   []error{cause}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
			store := idempotency.NewMemoryStore()
			deadline := c.t.Add(30 * time.Second)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			var resolver idempotency.Resolver
			if tt.resolver != nil {
				resolver = tt.resolver
			}
			var calls atomic.Int32
			out, err := receiver(store, c).DoResolving(ctx, "ORD-1", "h1", resolver, issue(&calls, "", tt.effectErr))
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want it to match %v", err, want)
				}
			}
			if tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want success", err)
			}
			if tt.notErr != nil && errors.Is(err, tt.notErr) {
				t.Fatalf("err = %v, must not match %v", err, tt.notErr)
			}
			if err == nil && (out.Result != tt.wantResult || !out.InDoubt || out.Resolution != tt.wantResolution) {
				t.Fatalf("out = %+v, want %q, in doubt, resolution %q", out, tt.wantResult, tt.wantResolution)
			}
			if calls.Load() != 1 {
				t.Fatalf("effect ran %d times, want 1", calls.Load())
			}
			if tt.resolver != nil && len(tt.resolver.keys) != tt.wantLookups {
				t.Fatalf("looked up %v, want %d lookups", tt.resolver.keys, tt.wantLookups)
			}
			rec, held := store.Get("invoice#ORD-1")
			switch {
			case tt.wantStatus == "" && held:
				t.Fatalf("record = %+v, want the claim released", rec)
			case tt.wantStatus == "":
			case rec.Status != tt.wantStatus || rec.Result != tt.wantResult || rec.PayloadHash != "h1":
				t.Fatalf("record = %+v, want %s %q", rec, tt.wantStatus, tt.wantResult)
			case rec.Status == idempotency.InProgress && !rec.LockExpiresAt.Equal(deadline):
				t.Fatalf("lock expires %v, want the invocation deadline %v", rec.LockExpiresAt, deadline)
			}
		})
	}
}

// service is a deduplicating downstream: a repeated key returns the first
// result. Its answers can be lost (the effect applied all the same), and its
// lookup can be down.
type service struct {
	applied    map[string]string
	loseAnswer bool
	lookupDown bool
	calls      int
}

func (s *service) effect(key, result string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		s.calls++
		if s.applied == nil {
			s.applied = map[string]string{}
		}
		if _, ok := s.applied[key]; !ok {
			s.applied[key] = result
		}
		if s.loseAnswer {
			return "", errors.New("read answer: connection reset by peer")
		}
		return s.applied[key], nil
	}
}

func (s *service) Lookup(_ context.Context, key string) (string, bool, error) {
	if s.lookupDown {
		return "", false, errors.New("lookup: 503")
	}
	r, ok := s.applied[key]
	return r, ok, nil
}

// The path the simulation found (seeds 10, 47, 96...): payload h1's call is
// applied but its answer lost, and a conflicting duplicate h2 of the same
// order arrives next. The key belongs to h1, which applied it: h2 is the
// conflict, never completed with h1's invoice, whether the lookup answers at
// once or only after the lock expired.
func TestReceiverLostAnswerThenAConflictingDuplicate(t *testing.T) {
	for _, lookupDown := range []bool{false, true} {
		name := "lookup answers"
		if lookupDown {
			name = "lookup down until the lock expires"
		}
		t.Run(name, func(t *testing.T) {
			c := &clock{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
			store := idempotency.NewMemoryStore()
			r := receiver(store, c)
			svc := &service{loseAnswer: true, lookupDown: lookupDown}
			ctx, cancel := context.WithDeadline(context.Background(), c.t.Add(30*time.Second))
			defer cancel()

			outA, errA := r.DoResolving(ctx, "ORD-1", "h1", svc, svc.effect("ORD-1", "INV-A"))
			if lookupDown != (errA != nil) {
				t.Fatalf("h1: out=%+v err=%v", outA, errA)
			}
			svc.loseAnswer = false
			if _, err := r.DoResolving(context.Background(), "ORD-1", "h2", svc, svc.effect("ORD-1", "INV-B")); !errors.Is(err, idempotency.ErrConflict) && !errors.Is(err, idempotency.ErrInProgress) {
				t.Fatalf("h2 at once: err = %v, want a conflict or in progress", err)
			}
			c.t = c.t.Add(time.Minute) // past h1's lock
			svc.lookupDown = false
			if _, err := r.DoResolving(context.Background(), "ORD-1", "h2", svc, svc.effect("ORD-1", "INV-B")); !errors.Is(err, idempotency.ErrConflict) {
				t.Fatalf("h2 later: err = %v, want ErrConflict", err)
			}
			out, err := r.DoResolving(context.Background(), "ORD-1", "h1", svc, svc.effect("ORD-1", "INV-A"))
			if err != nil || out.Result != "INV-A" {
				t.Fatalf("h1 again: out=%+v err=%v, want INV-A", out, err)
			}
			if rec, _ := store.Get("invoice#ORD-1"); rec.Status != idempotency.Completed || rec.PayloadHash != "h1" || rec.Result != "INV-A" {
				t.Fatalf("record = %+v, want COMPLETED by h1 with INV-A", rec)
			}
			if svc.calls != 1 {
				t.Fatalf("service called %d times, want 1", svc.calls)
			}
		})
	}
}

// The path the simulation found (seeds 35, 65...): an in-doubt takeover of
// the same payload whose lookup fails keeps its claim, so that the next
// delivery is in doubt too and asks again instead of calling again.
func TestReceiverKeepsTheDoubtWhenTheLookupFails(t *testing.T) {
	store := idempotency.NewMemoryStore()
	expiry := abandoned(t, store) // the dead holder issued INV-first
	res := &fakeResolver{err: errors.New("lookup: 503")}
	c := &clock{expiry}
	r := receiver(store, c)
	ctx, cancel := context.WithDeadline(context.Background(), c.t.Add(30*time.Second))
	defer cancel()
	var calls atomic.Int32
	if _, err := r.DoResolving(ctx, "ORD-1", "h1", res, issue(&calls, "INV-second", nil)); !errors.Is(err, res.err) || !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("takeover: err = %v, want the lookup's error, transient", err)
	}
	if rec, _ := store.Get("invoice#ORD-1"); rec.Status != idempotency.InProgress || rec.PayloadHash != "h1" {
		t.Fatalf("record = %+v, want the claim kept", rec)
	}
	c.t = c.t.Add(time.Minute)
	*res = fakeResolver{result: "INV-first", applied: true}
	out, err := r.DoResolving(context.Background(), "ORD-1", "h1", res, issue(&calls, "INV-second", nil))
	if err != nil || out.Result != "INV-first" || !out.InDoubt || out.Resolution != idempotency.ResolvedApplied {
		t.Fatalf("next delivery: out=%+v err=%v, want INV-first resolved in doubt", out, err)
	}
	if calls.Load() != 0 {
		t.Fatalf("effect ran %d times, want 0", calls.Load())
	}
}
