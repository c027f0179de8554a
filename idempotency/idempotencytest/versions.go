package idempotencytest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/settings"
)

// Payload hashes of one record under two contracts: an earlier build's
// unversioned hash, this build's versioned one ("jcs1:"), and a later
// version.
const (
	legacyHash = "3f1c0e7a9b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e"
	jcs1Hash   = "jcs1:5b1e7c0d2a4f6e8b9c1d3e5f7a9b0c2d4e6f8a1b3c5d7e9f0a2b4c6d8e1f3a5b"
	jcs1Other  = "jcs1:e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3"
	jcs2Hash   = "jcs2:aa"
)

// testHashVersionsCompareWithinAVersion: an idempotency.Receiver on the
// store compares payload hashes within one version only. Across versions a
// record keeps its meaning (a COMPLETED one is a duplicate, a live lock is
// in progress, an expired lock is taken over in doubt as one of the same
// payload), never a conflict; within one version another hash is a
// conflict. Each case ends with the record's payload hash as stored.
func testHashVersionsCompareWithinAVersion(t *testing.T, h Harness) {
	const (
		completed = "completed"
		live      = "live lock"
		expired   = "expired lock"
	)
	applied := idempotency.ResolverFunc(func(context.Context, string) (string, bool, error) { return "INV-1", true, nil })
	never := idempotency.ResolverFunc(func(context.Context, string) (string, bool, error) { return "", false, nil })
	s := h.NewStore(t)
	for _, c := range []struct {
		name, state, recorded, incoming string
		resolver                        idempotency.Resolver
		wantErr                         error // nil: succeeds
		wantResult                      string
		wantHash                        string // the record's payload hash after the call
	}{
		{"completed unversioned, jcs1 arrives: duplicate", completed, legacyHash, jcs1Hash, nil, nil, "INV-1", legacyHash},
		{"completed jcs1, jcs2 arrives: duplicate", completed, jcs1Hash, jcs2Hash, nil, nil, "INV-1", jcs1Hash},
		{"completed jcs1, another jcs1: conflict", completed, jcs1Hash, jcs1Other, nil, idempotency.ErrConflict, "", jcs1Hash},
		{"live lock unversioned, jcs1 arrives: in progress", live, legacyHash, jcs1Hash, applied, idempotency.ErrInProgress, "", legacyHash},
		{"expired lock unversioned, jcs1 arrives, applied: recorded", expired, legacyHash, jcs1Hash, applied, nil, "INV-1", jcs1Hash},
		{"expired lock unversioned, jcs1 arrives, never applied: runs", expired, legacyHash, jcs1Hash, never, nil, "INV-2", jcs1Hash},
		{"expired lock jcs1, another jcs1, applied: conflict", expired, jcs1Hash, jcs1Other, applied, idempotency.ErrConflict, "", jcs1Hash},
		{"expired lock jcs1, another jcs1, no resolver: in progress", expired, jcs1Hash, jcs1Other, nil, idempotency.ErrInProgress, "", jcs1Hash},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "versions-" + t.Name()
			before := idempotency.Lease{Key: idempotency.Key("contract", id), PayloadHash: c.recorded, Token: "before",
				Now: t0, Until: t0.Add(time.Minute), ExpiresAt: t0.Add(settings.DefaultRecordLifetime)}
			mustClaim(t, s, before)
			now := t0.Add(30 * time.Second) // live
			switch c.state {
			case completed:
				if err := s.Complete(t.Context(), before, "INV-1"); err != nil {
					t.Fatal(err)
				}
				now = t0.Add(14 * 24 * time.Hour) // replayed from the DLQ two weeks later
			case expired:
				now = t0.Add(2 * time.Minute)
			}
			tokens := 0
			r := &idempotency.Receiver{Store: s, Scope: "contract", Now: func() time.Time { return now },
				NewToken: func() string { tokens++; return fmt.Sprintf("call-%d", tokens) }}
			runs := 0
			out, err := r.DoResolving(t.Context(), id, c.incoming, c.resolver, func(context.Context) (string, error) {
				runs++
				return "INV-2", nil
			})
			switch {
			case c.wantErr == nil && err != nil:
				t.Fatalf("err = %v, want none", err)
			case c.wantErr != nil && !errors.Is(err, c.wantErr):
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if out.Result != c.wantResult || runs != map[bool]int{true: 1, false: 0}[c.wantResult == "INV-2"] {
				t.Fatalf("out = %+v after %d runs of the effect, want result %q", out, runs, c.wantResult)
			}
			probe := idempotency.Lease{Key: before.Key, PayloadHash: "probe:x", Token: "probe",
				Now: now, Until: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
			cur, claimed, err := s.Claim(t.Context(), probe)
			if err != nil || claimed {
				t.Fatalf("probe claimed=%v err=%v: the record should stand", claimed, err)
			}
			if cur.PayloadHash != c.wantHash || c.wantErr == nil && (cur.Status != idempotency.Completed || cur.Result != c.wantResult) {
				t.Fatalf("record = %+v, want payload hash %q", cur, c.wantHash)
			}
		})
	}
}
