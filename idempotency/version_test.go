package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/payload"
)

// Payload hashes of one order under two contracts: the unversioned hash an
// earlier build wrote, the versioned one of this build (payload.Hash), and
// others for the cases that compare.
const (
	legacy      = "3f1c0e7a9b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e"
	legacyOther = "0b9a8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b"
	jcs1        = "jcs1:5b1e7c0d2a4f6e8b9c1d3e5f7a9b0c2d4e6f8a1b3c5d7e9f0a2b4c6d8e1f3a5b"
	jcs1Other   = "jcs1:e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3"
	jcs2        = "jcs2:aa"
)

// A record's payload hash and the caller's compare only within one version:
// across versions (an upgrade: an unversioned record, a jcs1 delivery; a
// rollback; a later version) the record keeps its meaning until it expires
// (a COMPLETED record is a duplicate absorbed, a live lock is in progress,
// an expired lock is taken over in doubt as one of the same payload), and
// never becomes a conflict. Within one version a different hash is a
// conflict, as before.
func TestReceiverComparesHashesWithinAVersion(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	const (
		completed = "completed"
		live      = "live lock"
		expired   = "expired lock"
	)
	tests := []struct {
		name           string
		state          string // the record of ORD-1 before the call
		recorded       string
		incoming       string
		resolver       *fakeResolver // nil: none configured
		wantErr        error         // nil: succeeds
		wantResult     string
		wantDuplicate  bool
		wantResolution idempotency.Resolution
		wantCalls      int32
		wantHash       string // the record's payload hash after the call
	}{
		{"completed unversioned, jcs1 arrives: duplicate", completed, legacy, jcs1, nil, nil, "INV-1", true, "", 0, legacy},
		{"completed jcs1, unversioned arrives (rollback): duplicate", completed, jcs1, legacy, nil, nil, "INV-1", true, "", 0, jcs1},
		{"completed jcs1, jcs2 arrives: duplicate", completed, jcs1, jcs2, nil, nil, "INV-1", true, "", 0, jcs1},
		{"completed jcs1, same jcs1: duplicate", completed, jcs1, jcs1, nil, nil, "INV-1", true, "", 0, jcs1},
		{"completed jcs1, another jcs1: conflict", completed, jcs1, jcs1Other, nil, idempotency.ErrConflict, "", false, "", 0, jcs1},
		{"completed unversioned, another unversioned: conflict", completed, legacy, legacyOther, nil, idempotency.ErrConflict, "", false, "", 0, legacy},
		{"live lock unversioned, jcs1 arrives: in progress", live, legacy, jcs1, &fakeResolver{applied: true, result: "INV-1"}, idempotency.ErrInProgress, "", false, "", 0, legacy},
		{"expired lock unversioned, jcs1 arrives, applied: recorded, no conflict", expired, legacy, jcs1, &fakeResolver{applied: true, result: "INV-1"}, nil, "INV-1", false, idempotency.ResolvedApplied, 0, jcs1},
		{"expired lock unversioned, jcs1 arrives, never applied: runs", expired, legacy, jcs1, &fakeResolver{}, nil, "INV-2", false, idempotency.ResolvedNotApplied, 1, jcs1},
		{"expired lock unversioned, jcs1 arrives, no resolver: runs in doubt", expired, legacy, jcs1, nil, nil, "INV-2", false, idempotency.Unresolved, 1, jcs1},
		{"expired lock jcs1, another jcs1, applied: conflict", expired, jcs1, jcs1Other, &fakeResolver{applied: true, result: "INV-1"}, idempotency.ErrConflict, "", false, "", 0, jcs1},
		{"expired lock jcs1, another jcs1, no resolver: in progress", expired, jcs1, jcs1Other, nil, idempotency.ErrInProgress, "", false, "", 0, jcs1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := idempotency.NewMemoryStore()
			c := &clock{start}
			r := receiver(store, c)
			before := idempotency.Lease{Key: idempotency.Key("invoice", "ORD-1"), PayloadHash: tt.recorded, Token: "before",
				Now: start, Until: start.Add(time.Minute), ExpiresAt: start.Add(idempotency.DefaultLifetime)}
			if _, claimed, err := store.Claim(ctx, before); err != nil || !claimed {
				t.Fatalf("claim: claimed=%v err=%v", claimed, err)
			}
			switch tt.state {
			case completed:
				if err := store.Complete(ctx, before, "INV-1"); err != nil {
					t.Fatal(err)
				}
				c.t = start.Add(14 * 24 * time.Hour) // replayed from the DLQ two weeks later
			case live:
				c.t = start.Add(30 * time.Second)
			case expired:
				c.t = start.Add(2 * time.Minute)
			}
			var resolver idempotency.Resolver
			if tt.resolver != nil {
				resolver = tt.resolver
			}
			var calls atomic.Int32
			out, err := r.DoResolving(ctx, "ORD-1", tt.incoming, resolver, issue(&calls, "INV-2", nil))
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			case !errors.Is(tt.wantErr, idempotency.ErrConflict) && errors.Is(err, idempotency.ErrConflict):
				t.Fatalf("err = %v: a false conflict", err)
			}
			if out.Result != tt.wantResult || out.Duplicate != tt.wantDuplicate || out.Resolution != tt.wantResolution {
				t.Fatalf("out = %+v, want result %q, duplicate %v, resolution %q", out, tt.wantResult, tt.wantDuplicate, tt.wantResolution)
			}
			if n := calls.Load(); n != tt.wantCalls {
				t.Fatalf("effect ran %d times, want %d", n, tt.wantCalls)
			}
			rec, _ := store.Get("invoice#ORD-1")
			if rec.PayloadHash != tt.wantHash {
				t.Fatalf("record's payload hash = %q, want %q", rec.PayloadHash, tt.wantHash)
			}
			if tt.wantErr == nil && (rec.Status != idempotency.Completed || rec.Result != out.Result) {
				t.Fatalf("record = %+v, want COMPLETED with %q", rec, out.Result)
			}
		})
	}
}

// TestReceiverAcrossAChangeOfTheHashedPart: a lane changes its hashed part
// (PAYLOAD_HASH_EXPRESSION) while an order is in flight. The record written
// under the old part is of another version than the hash under the new one
// (payload.Hash writes the part's identity into the version), so it keeps
// its meaning and never becomes a conflict (issue 30, item 5); under one
// part, another payload still conflicts.
func TestReceiverAcrossAChangeOfTheHashedPart(t *testing.T) {
	body := []byte(`{"orderId":"ORD-1","total":"99.80","trace":"t-1"}`)
	other := []byte(`{"orderId":"ORD-1","total":"99.90","trace":"t-1"}`)
	const oldPart, newPart = "{orderId: orderId, total: total}", "{orderId: orderId, total: total, trace: trace}"
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name          string
		recordPart    string
		complete      bool // COMPLETED; else an IN_PROGRESS lock that has expired
		part          string
		body          []byte
		wantErr       error
		wantDuplicate bool
		wantCalls     int32
	}{
		{"completed under the old part, same order under the new: duplicate", oldPart, true, newPart, body, nil, true, 0},
		{"completed under the whole body, same order under a part: duplicate", "", true, oldPart, body, nil, true, 0},
		{"completed under a part, same order under the whole body: duplicate", oldPart, true, "", body, nil, true, 0},
		{"expired lock under the old part, same order under the new: taken over", oldPart, false, newPart, body, nil, false, 1},
		{"completed under one part, another payload under it: conflict", newPart, true, newPart, other, idempotency.ErrConflict, false, 0},
		{"completed under one part, same order under it: duplicate", newPart, true, newPart, body, nil, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := idempotency.NewMemoryStore()
			c := &clock{start}
			before := idempotency.Lease{Key: idempotency.Key("invoice", "ORD-1"), PayloadHash: hashOf(t, tt.recordPart, body), Token: "before",
				Now: start, Until: start.Add(time.Minute), ExpiresAt: start.Add(idempotency.DefaultLifetime)}
			if _, claimed, err := store.Claim(ctx, before); err != nil || !claimed {
				t.Fatalf("claim: claimed=%v err=%v", claimed, err)
			}
			if tt.complete {
				if err := store.Complete(ctx, before, "INV-1"); err != nil {
					t.Fatal(err)
				}
			}
			c.t = start.Add(2 * time.Minute)
			var calls atomic.Int32
			out, err := receiver(store, c).Do(ctx, "ORD-1", hashOf(t, tt.part, tt.body), issue(&calls, "INV-2", nil))
			if !errors.Is(err, tt.wantErr) || tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if out.Duplicate != tt.wantDuplicate || calls.Load() != tt.wantCalls {
				t.Fatalf("out = %+v, effect ran %d times; want duplicate %v, %d runs", out, calls.Load(), tt.wantDuplicate, tt.wantCalls)
			}
		})
	}
}

// hashOf is payload.Hash of part over body.
func hashOf(t *testing.T, part string, body []byte) string {
	t.Helper()
	h, err := payload.NewHash(part)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := h.Sum(body)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
