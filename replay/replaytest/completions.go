package replaytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/suite"
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

// CompletionsScope is the consumer scope the completions contract writes
// its records under.
const CompletionsScope = "consumer"

// CompletionsHarness is what the completions contract needs of a
// replay.Completions implementation.
type CompletionsHarness struct {
	// NewPair returns a store and the Completions that reads its scope
	// [CompletionsScope]. The tests write their records through the idempotent
	// receiver, under keys of their own (from t.Name()), so the pairs of
	// one harness may share a table.
	NewPair func(t *testing.T) (idempotency.Store, replay.Completions)
}

// completionsRule is one rule of the completions contract, a test function
// of its own; completionsRules lists them all.
type completionsRule func(t *testing.T, h CompletionsHarness)

// completionsRules returns the contract every replay.Completions passes,
// one test per rule, in the order [RunCompletions] runs them.
func completionsRules() []completionsRule {
	return []completionsRule{
		testOnlyCompletedKeysAreCompleted,
		testCompletedAnswersMoreKeysThanOneBatch,
		testCompletedOfNoKeysIsEmpty,
	}
}

// RunCompletions runs every test of completionsRules against h as a
// subtest named after its function.
func RunCompletions(t *testing.T, h CompletionsHarness) {
	t.Helper()
	suite.Run(t, h, completionsRules())
}

// completeKey completes id in scope through the idempotent receiver, with
// payload hash "hash-"+id.
func completeKey(t *testing.T, store idempotency.Store, scope, id string) {
	t.Helper()
	r := &idempotency.Receiver{Store: store, Scope: scope}
	if _, err := r.Do(t.Context(), id, "hash-"+id, func(context.Context) (string, error) { return "INV-" + id, nil }); err != nil {
		t.Fatal(err)
	}
}

// wantCompleted checks that got holds exactly want's keys, each with its
// payload hash.
func wantCompleted(t *testing.T, got, want map[string]string, asked int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d completed of %d, want %d: %v", len(got), asked, len(want), got)
	}
	for id, w := range want {
		if v, ok := got[id]; !ok || v != w {
			t.Errorf("%s: hash %q (completed %v), want %q", id, v, ok, w)
		}
	}
}

// testOnlyCompletedKeysAreCompleted: Completed answers a COMPLETED key of
// scope CompletionsScope with its payload hash, once however often it is asked,
// and leaves out a key in progress, an absent key and a key completed in
// another scope.
func testOnlyCompletedKeysAreCompleted(t *testing.T, h CompletionsHarness) {
	store, c := h.NewPair(t)
	done := suite.Key(t, "done")
	running := suite.Key(t, "running")
	otherScope := suite.Key(t, "other-scope")
	completeKey(t, store, CompletionsScope, done)
	completeKey(t, store, "other", otherScope)
	now := time.Now()
	lease := idempotency.Lease{Key: idempotency.Key(CompletionsScope, running), PayloadHash: "h", Token: "t", Now: now, Until: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	if _, claimed, err := store.Claim(t.Context(), lease); err != nil || !claimed {
		t.Fatalf("claim: claimed=%v err=%v", claimed, err)
	}
	ask := []string{done, running, suite.Key(t, "absent"), otherScope, done}
	got, err := c.Completed(t.Context(), ask)
	if err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, got, map[string]string{done: "hash-" + done}, len(ask))
}

// testCompletedAnswersMoreKeysThanOneBatch: asked for 120 completed keys,
// more than one BatchGetItem reads, with an absent key and a repeated one
// among them, Completed answers each completed key with its payload hash.
func testCompletedAnswersMoreKeysThanOneBatch(t *testing.T, h CompletionsHarness) {
	store, c := h.NewPair(t)
	many := make([]string, 120)
	want := map[string]string{}
	for i := range many {
		many[i] = suite.Key(t, fmt.Sprintf("%03d", i))
		completeKey(t, store, CompletionsScope, many[i])
		want[many[i]] = "hash-" + many[i]
	}
	ask := append([]string{suite.Key(t, "absent"), many[0]}, many...)
	got, err := c.Completed(t.Context(), ask)
	if err != nil {
		t.Fatal(err)
	}
	wantCompleted(t, got, want, len(ask))
}

// testCompletedOfNoKeysIsEmpty: Completed of no keys answers none.
func testCompletedOfNoKeysIsEmpty(t *testing.T, h CompletionsHarness) {
	_, c := h.NewPair(t)
	if got, err := c.Completed(t.Context(), nil); err != nil || len(got) != 0 {
		t.Fatalf("no keys: %v, %v", got, err)
	}
}
