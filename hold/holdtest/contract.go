package holdtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/internal/suite"
)

// t0 is the time the tests start at. The tests' times are whole
// milliseconds apart, so a store may keep them to the millisecond.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// TestBeginHoldsTheGroup: Begin of a free group makes a Held hold behind
// the head, with its body and the parked reason, since now (the state,
// times and version given are not Begin's to write), and Holds returns it
// as Begin did.
func TestBeginHoldsTheGroup(t *testing.T, h Harness) {
	s := h.NewStore(t)
	body := `{"id":"h-1","note":"` + strings.Repeat("é", 300) + `"}`
	got, err := s.Begin(t.Context(), hold.Hold{Group: "g", Head: "m-1", HeadBody: body, State: hold.Draining,
		Parked: "invalid: bad-json", Since: t0.Add(time.Hour), Version: 42}, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := hold.Hold{Group: "g", Head: "m-1", HeadBody: body, State: hold.Held, Parked: "invalid: bad-json", Since: t0, Updated: t0, Version: got.Version}
	mustBeHold(t, "Begin", got, want)
	mustBeHold(t, "the stored hold", mustHold(t, s, "g"), got)
}

// TestBeginReturnsTheStandingHold: Begin of a held group changes nothing
// and returns the standing hold.
func TestBeginReturnsTheStandingHold(t *testing.T, h Harness) {
	s := h.NewStore(t)
	first := mustBegin(t, s, "g", "m-1", t0)
	again, err := s.Begin(t.Context(), hold.Hold{Group: "g", Head: "m-2", HeadBody: "other", Parked: "parked: budget"}, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mustBeHold(t, "the second Begin", again, first)
	mustBeHold(t, "the stored hold", mustHold(t, s, "g"), first)
}

// TestConcurrentBeginsMakeOneHold: of eight Begins racing for one group,
// one makes the hold and every one returns it. It needs
// [Features].ConcurrentWrites.
func TestConcurrentBeginsMakeOneHold(t *testing.T, h Harness) {
	suite.Needs(t, h.Features.ConcurrentWrites, "ConcurrentWrites")
	s := h.NewStore(t)
	const n = 8
	got := make([]hold.Hold, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			if got[i], err = s.Begin(t.Context(), hold.Hold{Group: "g", Head: fmt.Sprintf("m-%d", i)}, t0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	stored := mustHold(t, s, "g")
	for i, g := range got {
		mustBeHold(t, fmt.Sprintf("Begin %d", i), g, stored)
	}
}

// TestHoldsReturnsOnlyHeldGroups: Holds of 150 groups (more than one
// DynamoDB batch), one named twice and one never seen, returns the holds of
// the held ones and no other; Holds of none returns none.
func TestHoldsReturnsOnlyHeldGroups(t *testing.T, h Harness) {
	s := h.NewStore(t)
	var groups []string
	want := map[string]hold.Hold{}
	for i := range 150 {
		g := fmt.Sprintf("g-%03d", i)
		groups = append(groups, g)
		if i%3 == 0 {
			want[g] = mustBegin(t, s, g, "head-"+g, t0)
		}
	}
	got, err := s.Holds(t.Context(), append(groups, "g-000", "never"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("Holds returned %d holds, want %d", len(got), len(want))
	}
	for g, w := range want {
		mustBeHold(t, "Holds["+g+"]", got[g], w)
	}
	if none, err := s.Holds(t.Context(), nil); err != nil || len(none) != 0 {
		t.Fatalf("Holds(nil) = %v, %v; want none", none, err)
	}
}

// TestAppendNeedsAHold: Append to a group without a hold, never held or
// ended, fails with ErrNotHeld and stores nothing.
func TestAppendNeedsAHold(t *testing.T, h Harness) {
	s := h.NewStore(t)
	if _, err := s.Append(t.Context(), "g", message("1", "a"), t0); !errors.Is(err, hold.ErrNotHeld) {
		t.Fatalf("Append to a group never held: err = %v, want ErrNotHeld", err)
	}
	mustEnd(t, s, mustBegin(t, s, "g", "m-1", t0))
	if _, err := s.Append(t.Context(), "g", message("2", "b"), t0); !errors.Is(err, hold.ErrNotHeld) {
		t.Fatalf("Append to an ended hold: err = %v, want ErrNotHeld", err)
	}
	if n := mustCount(t, s, "g"); n != 0 {
		t.Fatalf("Count = %d after refused appends, want 0", n)
	}
}

// TestAppendKeepsSeqOrder: the held records come back in Seq order, the
// source's order, whatever order they were appended in.
func TestAppendKeepsSeqOrder(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustBegin(t, s, "g", "m-0", t0)
	for i, n := range []string{"18", "3", "100000000000000000000", "9", "27"} {
		mustAppend(t, s, "g", message(n, "body-"+n), t0.Add(time.Duration(i)*time.Millisecond))
	}
	want := []string{"body-3", "body-9", "body-18", "body-27", "body-100000000000000000000"}
	if got := bodies(mustNext(t, s, "g", 10)); !slices.Equal(got, want) {
		t.Fatalf("Next = %v, want %v", got, want)
	}
}

// TestAppendOfAStoredSeqChangesNothing: a second Append of a Seq is not an
// error and changes nothing: the first record stays, and the hold and its
// version are as the first Append left them.
func TestAppendOfAStoredSeqChangesNothing(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustBegin(t, s, "g", "m-0", t0)
	first := mustAppend(t, s, "g", message("5", "first"), t0.Add(time.Second))
	again, err := s.Append(t.Context(), "g", message("5", "second"), t0.Add(2*time.Second))
	if err != nil {
		t.Fatalf("second Append of a Seq: %v", err)
	}
	mustBeHold(t, "the second Append", again, first)
	mustBeHold(t, "the stored hold", mustHold(t, s, "g"), first)
	if got := bodies(mustNext(t, s, "g", 10)); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("held = %v, want the first record alone", got)
	}
}

// TestAppendChangesTheVersion: every Append that stores a record writes
// the hold: a new version and Updated, the rest as it was.
func TestAppendChangesTheVersion(t *testing.T, h Harness) {
	s := h.NewStore(t)
	begun := mustBegin(t, s, "g", "m-0", t0)
	seen := []int64{begun.Version}
	last := begun
	for i := range 2 {
		at := t0.Add(time.Duration(i+1) * time.Second)
		got := mustAppend(t, s, "g", message(fmt.Sprint(i+1), "b"), at)
		want := begun
		want.Updated = at
		want.Version = got.Version
		mustBeHold(t, fmt.Sprintf("Append %d", i+1), got, want)
		if slices.Contains(seen, got.Version) {
			t.Fatalf("Append %d left the version at %d, seen before (%v)", i+1, got.Version, seen)
		}
		seen = append(seen, got.Version)
		last = got
	}
	mustBeHold(t, "the stored hold", mustHold(t, s, "g"), last)
}

// TestNextReturnsAtMostN: Next returns the first n held records (none for
// n = 0, all when fewer are held) and removes none.
func TestNextReturnsAtMostN(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustBegin(t, s, "g", "m-0", t0)
	all := []string{"b1", "b2", "b3", "b4", "b5"}
	for i, b := range all {
		mustAppend(t, s, "g", message(fmt.Sprint(i+1), b), t0)
	}
	for _, tc := range []struct {
		n    int
		want []string
	}{{0, nil}, {2, all[:2]}, {5, all}, {100, all}} {
		if got := bodies(mustNext(t, s, "g", tc.n)); !slices.Equal(got, tc.want) {
			t.Errorf("Next(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if got := mustNext(t, s, "other", 10); len(got) != 0 {
		t.Errorf("Next of a group without records = %v", got)
	}
	if n := mustCount(t, s, "g"); n != len(all) {
		t.Fatalf("Count = %d after Next, want %d: Next removed records", n, len(all))
	}
}

// TestCountCountsTheHeldRecords: Count is the number of distinct records
// held in the group, whatever other groups hold.
func TestCountCountsTheHeldRecords(t *testing.T, h Harness) {
	s := h.NewStore(t)
	if n := mustCount(t, s, "g"); n != 0 {
		t.Fatalf("Count of a group never held = %d", n)
	}
	mustBegin(t, s, "g", "m-0", t0)
	mustBegin(t, s, "other", "m-9", t0)
	mustAppend(t, s, "other", message("1", "x"), t0)
	for _, n := range []string{"1", "2", "3", "2"} {
		mustAppend(t, s, "g", message(n, "b"+n), t0)
	}
	if n := mustCount(t, s, "g"); n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
	mustRemove(t, s, "g", message("2", "").Seq)
	if n := mustCount(t, s, "g"); n != 2 {
		t.Fatalf("Count = %d after a Remove, want 2", n)
	}
}

// TestRemoveForgetsAndIsIdempotent: Remove forgets one held record; removing
// it again, one never held, or one of a group without a hold is not an
// error.
func TestRemoveForgetsAndIsIdempotent(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustBegin(t, s, "g", "m-0", t0)
	for _, n := range []string{"1", "2", "3"} {
		mustAppend(t, s, "g", message(n, "b"+n), t0)
	}
	two := message("2", "").Seq
	mustRemove(t, s, "g", two)
	mustRemove(t, s, "g", two)
	mustRemove(t, s, "g", message("7", "").Seq)
	mustRemove(t, s, "free", two)
	if got := bodies(mustNext(t, s, "g", 10)); !slices.Equal(got, []string{"b1", "b3"}) {
		t.Fatalf("held = %v, want [b1 b3]", got)
	}
}
