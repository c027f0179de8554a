package replaytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/replay"
)

// MemoryCompletions implements replay.Completions on an
// idempotency.MemoryStore: a business key is completed when its record
// (idempotency.Key(Scope, key)) is COMPLETED and has not expired. Now
// defaults to time.Now.
type MemoryCompletions struct {
	Store *idempotency.MemoryStore
	Scope string
	Now   func() time.Time
}

var _ replay.Completions = (*MemoryCompletions)(nil)

// Completed implements replay.Completions.
func (m *MemoryCompletions) Completed(_ context.Context, keys []string) (map[string]string, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	out := make(map[string]string, len(keys))
	for _, id := range keys {
		if r, ok := m.Store.Get(idempotency.Key(m.Scope, id)); ok && r.Status == idempotency.Completed && now().Before(r.ExpiresAt) {
			out[id] = r.PayloadHash
		}
	}
	return out, nil
}

// RunCompletions runs the contract every replay.Completions passes: it
// writes records through the idempotent receiver (scope "invoice") into the
// store newPair returns, and reads them back through the Completions it
// returns, which must read scope "invoice" of that store.
func RunCompletions(t *testing.T, newPair func(t *testing.T) (idempotency.Store, replay.Completions)) {
	ctx := context.Background()
	store, c := newPair(t)
	complete := func(scope, id string) {
		r := &idempotency.Receiver{Store: store, Scope: scope}
		if _, err := r.Do(ctx, id, "hash-"+id, func(context.Context) (string, error) { return "INV-" + id, nil }); err != nil {
			t.Fatal(err)
		}
	}
	complete("invoice", "ORD-done")
	complete("other", "ORD-other-scope")
	now := time.Now()
	lease := idempotency.Lease{Key: "invoice#ORD-running", PayloadHash: "h", Token: "t", Now: now, Until: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	if _, claimed, err := store.Claim(ctx, lease); err != nil || !claimed {
		t.Fatalf("claim: claimed=%v err=%v", claimed, err)
	}
	many := make([]string, 120) // more than one BatchGetItem
	for i := range many {
		many[i] = fmt.Sprintf("ORD-many-%03d", i)
		complete("invoice", many[i])
	}

	ask := append([]string{"ORD-done", "ORD-running", "ORD-absent", "ORD-other-scope", "ORD-done"}, many...)
	got, err := c.Completed(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	// Completed keys with their payload hash; the others are absent.
	want := map[string]string{"ORD-done": "hash-ORD-done"}
	for _, id := range many {
		want[id] = "hash-" + id
	}
	if len(got) != len(want) {
		t.Errorf("%d completed of %d, want %d: %v", len(got), len(ask), len(want), got)
	}
	for id, w := range want {
		if v, ok := got[id]; !ok || v != w {
			t.Errorf("%s: hash %q (completed %v), want %q", id, v, ok, w)
		}
	}
	if got, err := c.Completed(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("no keys: %v, %v", got, err)
	}
}
