package idempotencytest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/suite"
)

// t0 is the time the tests start at.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// lease is a lease of t's own key (from t.Name()) for token, taken at now
// for a minute, of payload "hash-a".
func lease(t *testing.T, token string, now time.Time) idempotency.Lease {
	return idempotency.Lease{
		Key:         "contract#" + t.Name(),
		PayloadHash: "hash-a",
		Token:       token,
		Now:         now,
		Until:       now.Add(time.Minute),
		ExpiresAt:   now.Add(settings.DefaultRecordLifetime),
	}
}

// testFirstClaimWins: a claim of an absent key wins.
func testFirstClaimWins(t *testing.T, h Harness) {
	s := h.NewStore(t)
	if _, claimed, err := s.Claim(t.Context(), lease(t, "a", t0)); err != nil || !claimed {
		t.Fatalf("claimed=%v err=%v", claimed, err)
	}
}

// testLiveLockIsNotClaimable: a claim of a key whose lock is live loses and
// returns the lock.
func testLiveLockIsNotClaimable(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	b := lease(t, "b", t0.Add(30*time.Second))
	cur, claimed, err := s.Claim(t.Context(), b)
	if err != nil || claimed {
		t.Fatalf("claimed=%v err=%v, want the live lock to stand", claimed, err)
	}
	if cur.Status != idempotency.InProgress || cur.Token != "a" || !cur.LockExpiresAt.Equal(a.Until) || cur.PayloadHash != "hash-a" {
		t.Fatalf("current = %+v", cur)
	}
}

// testExpiredLockIsClaimable: a claim at a lock's expiry takes the key
// over, and the stale holder can neither complete nor release it.
func testExpiredLockIsClaimable(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	b := lease(t, "b", a.Until)
	mustClaim(t, s, b)
	if err := s.Complete(t.Context(), a, "INV-late"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("stale holder completed: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(t.Context(), a); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("stale holder released: err = %v, want ErrLeaseLost", err)
	}
}

// testTakeoverReturnsTheExpiredLock: a takeover returns the expired lock it
// replaced, which is in doubt.
func testTakeoverReturnsTheExpiredLock(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	b := lease(t, "b", a.Until)
	prev, claimed, err := s.Claim(t.Context(), b)
	if err != nil || !claimed {
		t.Fatalf("claimed=%v err=%v", claimed, err)
	}
	if prev.Status != idempotency.InProgress || prev.Token != "a" || prev.PayloadHash != "hash-a" || !prev.LockExpiresAt.Equal(a.Until) {
		t.Fatalf("previous = %+v, want a's expired lock (the takeover is in doubt)", prev)
	}
}

// testFreshClaimReturnsNoRecord: a claim of an absent key, or of one whose
// record expired, returns no previous record.
func testFreshClaimReturnsNoRecord(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	if prev, claimed, err := s.Claim(t.Context(), a); err != nil || !claimed || prev != (idempotency.Record{}) {
		t.Fatalf("absent key: previous=%+v claimed=%v err=%v", prev, claimed, err)
	}
	// A lock whose record expired is not in doubt any more.
	b := lease(t, "b", a.ExpiresAt)
	if prev, claimed, err := s.Claim(t.Context(), b); err != nil || !claimed || prev != (idempotency.Record{}) {
		t.Fatalf("expired record: previous=%+v claimed=%v err=%v", prev, claimed, err)
	}
}

// testTakeoverOfAnotherPayloadIsRefused: without Supersedes, an expired
// lock of another payload stands (it is in doubt until the receiver has
// asked the downstream), and its holder can still complete.
func testTakeoverOfAnotherPayloadIsRefused(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	b := lease(t, "b", a.Until.Add(time.Second))
	b.PayloadHash = "hash-b"
	cur, claimed, err := s.Claim(t.Context(), b)
	if err != nil || claimed {
		t.Fatalf("claimed=%v err=%v, want the expired lock of another payload to stand", claimed, err)
	}
	if cur.Token != "a" || cur.PayloadHash != "hash-a" {
		t.Fatalf("current = %+v", cur)
	}
	if err := s.Complete(t.Context(), a, "INV-1"); err != nil {
		t.Fatalf("the first holder lost its claim to another payload: %v", err)
	}
}

// testTakeoverOfAnotherPayloadAfterAVoidClaim: with Supersedes naming the
// expired lock's token, another payload takes the key over, and the key
// then belongs to it.
func testTakeoverOfAnotherPayloadAfterAVoidClaim(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	b := lease(t, "b", a.Until.Add(time.Second))
	b.PayloadHash = "hash-b"
	b.Supersedes = "a" // the resolver said a never applied the key
	prev, claimed, err := s.Claim(t.Context(), b)
	if err != nil || !claimed {
		t.Fatalf("claimed=%v err=%v, want the void claim taken over", claimed, err)
	}
	if prev.Status != idempotency.InProgress || prev.Token != "a" || prev.PayloadHash != "hash-a" {
		t.Fatalf("previous = %+v, want a's expired lock", prev)
	}
	if err := s.Complete(t.Context(), a, "INV-late"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("void holder completed: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(t.Context(), b, "INV-b"); err != nil {
		t.Fatal(err)
	}
	// The key now belongs to b's payload.
	again := lease(t, "b2", b.Now.Add(time.Hour))
	again.PayloadHash = "hash-b"
	mustFindCompleted(t, s, again, "hash-b", "INV-b")
}

// testVoidClaimMustBeTheExpiredLockSeen: Supersedes takes over only the
// expired lock of the token it names, never a live lock or a completed
// record.
func testVoidClaimMustBeTheExpiredLockSeen(t *testing.T, h Harness) {
	s := h.NewStore(t)
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
		if cur, claimed, err := s.Claim(t.Context(), b); err != nil || claimed || cur.Token != "a" {
			t.Fatalf("%s: current=%+v claimed=%v err=%v, want a's lock to stand", tt.name, cur, claimed, err)
		}
	}
	if err := s.Complete(t.Context(), a, "INV-a"); err != nil {
		t.Fatal(err)
	}
	// A completed record keeps the token of its claim: it is no lock.
	b := lease(t, "b", a.Until.Add(time.Second))
	b.PayloadHash = "hash-b"
	b.Supersedes = "a"
	mustFindCompleted(t, s, b, "hash-a", "INV-a")
}

// testExpiredClaimFoundAppliedIsCompletedByItsToken: another payload's
// receiver completes an expired claim with the result the resolver found,
// under the claim's token and payload hash.
func testExpiredClaimFoundAppliedIsCompletedByItsToken(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	settle := a
	settle.Now = a.Until.Add(time.Second)
	settle.ExpiresAt = settle.Now.Add(settings.DefaultRecordLifetime)
	if err := s.Complete(t.Context(), settle, "INV-a"); err != nil {
		t.Fatal(err)
	}
	mustFindCompleted(t, s, lease(t, "a2", settle.Now.Add(time.Hour)), "hash-a", "INV-a")
}

// testCompletedRecordReturnsItsResult: a claim of a completed key loses and
// returns the record, its result, payload hash and expiry.
func testCompletedRecordReturnsItsResult(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	if err := s.Complete(t.Context(), a, "INV-1"); err != nil {
		t.Fatal(err)
	}
	b := lease(t, "b", t0.Add(14*24*time.Hour)) // a replay two weeks later
	b.PayloadHash = "hash-b"
	cur, claimed, err := s.Claim(t.Context(), b)
	if err != nil || claimed {
		t.Fatalf("claimed=%v err=%v", claimed, err)
	}
	if cur.Status != idempotency.Completed || cur.Result != "INV-1" || cur.PayloadHash != "hash-a" || !cur.ExpiresAt.Equal(a.ExpiresAt) {
		t.Fatalf("current = %+v", cur)
	}
}

// testExpiredRecordIsClaimable: a completed record is claimable at its
// expiry.
func testExpiredRecordIsClaimable(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	if err := s.Complete(t.Context(), a, "INV-1"); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, lease(t, "b", a.ExpiresAt))
}

// testReleaseFreesTheKey: a released key is claimable at once.
func testReleaseFreesTheKey(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	if err := s.Release(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, lease(t, "b", t0.Add(time.Second)))
}

// testOnlyTheHolderCompletesOrReleases: another token can neither complete
// nor release a lock; the holder's completion retried is done and changes
// nothing, and a completed record cannot be released.
func testOnlyTheHolderCompletesOrReleases(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	mustClaim(t, s, a)
	other := a
	other.Token = "intruder"
	if err := s.Complete(t.Context(), other, "INV-x"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Complete: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(t.Context(), other); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Release: err = %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(t.Context(), a, "INV-1"); err != nil {
		t.Fatal(err)
	}
	// A completion retried after its answer was lost is done, and
	// changes nothing.
	if err := s.Complete(t.Context(), a, "INV-2"); err != nil {
		t.Fatalf("second Complete by the holder: err = %v, want nil", err)
	}
	if cur, claimed, err := s.Claim(t.Context(), lease(t, "b", t0)); err != nil || claimed || cur.Result != "INV-1" {
		t.Fatalf("after a second Complete: %+v, claimed=%v, err=%v; want the first result", cur, claimed, err)
	}
	if err := s.Release(t.Context(), a); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Release after Complete: err = %v, want ErrLeaseLost", err)
	}
}

// testAbsentKeyCannotBeCompletedOrReleased: Complete and Release of a key
// never claimed fail with ErrLeaseLost.
func testAbsentKeyCannotBeCompletedOrReleased(t *testing.T, h Harness) {
	s := h.NewStore(t)
	a := lease(t, "a", t0)
	if err := s.Complete(t.Context(), a, "INV-1"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Complete: err = %v", err)
	}
	if err := s.Release(t.Context(), a); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("Release: err = %v", err)
	}
}

// testConcurrentClaimersOneWins: of eight claimers racing for one key,
// exactly one wins. It needs [Features].ConcurrentClaims.
func testConcurrentClaimersOneWins(t *testing.T, h Harness) {
	suite.Needs(t, h.Features.ConcurrentClaims, "ConcurrentClaims")
	s := h.NewStore(t)
	const n = 8
	base := lease(t, "", t0)
	var wg sync.WaitGroup
	var won sync.Map
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			l := base
			l.Token = fmt.Sprintf("claimer-%d", i)
			_, claimed, err := s.Claim(t.Context(), l)
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
}

func mustClaim(t *testing.T, s idempotency.Store, l idempotency.Lease) {
	t.Helper()
	if _, claimed, err := s.Claim(t.Context(), l); err != nil || !claimed {
		t.Fatalf("claim %s by %s: claimed=%v err=%v", l.Key, l.Token, claimed, err)
	}
}

// mustFindCompleted claims with l and wants the standing COMPLETED record of
// payloadHash with result.
func mustFindCompleted(t *testing.T, s idempotency.Store, l idempotency.Lease, payloadHash, result string) {
	t.Helper()
	cur, claimed, err := s.Claim(t.Context(), l)
	if err != nil || claimed || cur.Status != idempotency.Completed || cur.PayloadHash != payloadHash || cur.Result != result {
		t.Fatalf("claim %s by %s: current=%+v claimed=%v err=%v, want the completed record of %s with %s", l.Key, l.Token, cur, claimed, err, payloadHash, result)
	}
}
