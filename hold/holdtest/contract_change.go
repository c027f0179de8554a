package holdtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/homingdlq/homing/hold"
)

// TestUpdateIsConditionalOnTheVersion: Update writes Head, State and Parked
// (an empty Parked too) at the version it was given and returns the hold
// as written, with a new version; at any other version it fails with
// ErrConflict and writes nothing. Group and Since stay as they were.
func TestUpdateIsConditionalOnTheVersion(t *testing.T, h Harness) {
	s := h.NewStore(t)
	begun := mustBegin(t, s, "g", "m-1", t0)
	appended := mustAppend(t, s, "g", message("1", "b"), t0.Add(time.Second))
	stale := begun
	stale.State = hold.Draining
	if _, err := s.Update(t.Context(), stale, t0.Add(2*time.Second)); !errors.Is(err, hold.ErrConflict) {
		t.Fatalf("Update at the version before an Append: err = %v, want ErrConflict", err)
	}
	mustBeHold(t, "the hold after a refused Update", mustHold(t, s, "g"), appended)

	u := appended
	u.Head = "m-2"
	u.HeadBody = `{"id":"h-2"}`
	u.State = hold.Draining
	u.Parked = "parked: budget"
	u.Since = t0.Add(time.Hour) // not the Update's to write
	at := t0.Add(3 * time.Second)
	got := mustUpdate(t, s, u, at)
	want := hold.Hold{Group: "g", Head: "m-2", HeadBody: `{"id":"h-2"}`, State: hold.Draining, Parked: "parked: budget", Since: t0, Updated: at, Version: got.Version}
	mustBeHold(t, "Update", got, want)
	if got.Version == appended.Version {
		t.Fatalf("Update kept the version %d", got.Version)
	}
	mustBeHold(t, "the stored hold", mustHold(t, s, "g"), got)
	if _, err := s.Update(t.Context(), u, at); !errors.Is(err, hold.ErrConflict) {
		t.Fatalf("Update at a version already written over: err = %v, want ErrConflict", err)
	}
	back := got
	back.State = hold.Held
	back.Parked = ""
	if again := mustUpdate(t, s, back, at.Add(time.Second)); again.Parked != "" || again.State != hold.Held {
		t.Fatalf("Update clearing Parked = %+v", again)
	}
	if n := mustCount(t, s, "g"); n != 1 {
		t.Fatalf("Count = %d after Updates, want 1", n)
	}
}

// TestUpdateOfAMissingHoldIsNotHeld: Update of a group never held, or of a
// hold ended, fails with ErrNotHeld and makes no hold.
func TestUpdateOfAMissingHoldIsNotHeld(t *testing.T, h Harness) {
	s := h.NewStore(t)
	never := hold.Hold{Group: "never", Head: "m-1", State: hold.Draining, Since: t0, Updated: t0, Version: 1}
	if _, err := s.Update(t.Context(), never, t0); !errors.Is(err, hold.ErrNotHeld) {
		t.Fatalf("Update of a group never held: err = %v, want ErrNotHeld", err)
	}
	ended := mustBegin(t, s, "g", "m-1", t0)
	mustEnd(t, s, ended)
	ended.State = hold.Draining
	if _, err := s.Update(t.Context(), ended, t0); !errors.Is(err, hold.ErrNotHeld) {
		t.Fatalf("Update of an ended hold: err = %v, want ErrNotHeld", err)
	}
	if got, err := s.Holds(t.Context(), []string{"never", "g"}); err != nil || len(got) != 0 {
		t.Fatalf("Holds = %v, %v after refused Updates, want none", got, err)
	}
}

// TestEndDeletesTheHold: End at the hold's version deletes it; ending it
// again, or a group never held, is not an error; the group can be held
// again.
func TestEndDeletesTheHold(t *testing.T, h Harness) {
	s := h.NewStore(t)
	begun := mustBegin(t, s, "g", "m-1", t0)
	mustEnd(t, s, begun)
	if got, err := s.Holds(t.Context(), []string{"g"}); err != nil || len(got) != 0 {
		t.Fatalf("Holds = %v, %v after End, want none", got, err)
	}
	if got := mustList(t, s); len(got) != 0 {
		t.Fatalf("List = %v after End, want none", got)
	}
	mustEnd(t, s, begun)
	mustEnd(t, s, hold.Hold{Group: "never", Version: 1})
	again := mustBegin(t, s, "g", "m-2", t0.Add(time.Second))
	if again.Head != "m-2" || !again.Since.Equal(t0.Add(time.Second)) {
		t.Fatalf("Begin after End = %+v, want a new hold behind m-2", again)
	}
}

// TestEndAfterAnAppendConflicts: End at a version read before an Append
// (or an Update) fails with ErrConflict and leaves the hold: a consumer that
// found no record held must not end a hold that has one since.
func TestEndAfterAnAppendConflicts(t *testing.T, h Harness) {
	s := h.NewStore(t)
	begun := mustBegin(t, s, "g", "m-1", t0)
	appended := mustAppend(t, s, "g", message("1", "b"), t0)
	if err := s.End(t.Context(), begun); !errors.Is(err, hold.ErrConflict) {
		t.Fatalf("End before the Append's version: err = %v, want ErrConflict", err)
	}
	mustBeHold(t, "the hold after a refused End", mustHold(t, s, "g"), appended)
	draining := appended
	draining.State = hold.Draining
	updated := mustUpdate(t, s, draining, t0)
	if err := s.End(t.Context(), appended); !errors.Is(err, hold.ErrConflict) {
		t.Fatalf("End before the Update's version: err = %v, want ErrConflict", err)
	}
	mustEnd(t, s, updated)
}

// TestAHoldBegunAgainIsNotTheEndedOne: after a group's hold is ended and
// the group held again, no copy of the ended hold can update or end the
// new one, however many writes each saw: a version is never used again in
// a group.
func TestAHoldBegunAgainIsNotTheEndedOne(t *testing.T, h Harness) {
	s := h.NewStore(t)
	old := []hold.Hold{mustBegin(t, s, "g", "m-1", t0)}
	old = append(old, mustAppend(t, s, "g", message("1", "b"), t0))
	draining := old[1]
	draining.State = hold.Draining
	old = append(old, mustUpdate(t, s, draining, t0))
	mustRemove(t, s, "g", message("1", "").Seq)
	mustEnd(t, s, old[2])

	fresh := mustBegin(t, s, "g", "m-2", t0.Add(time.Second))
	for i, n := range []string{"2", "3"} {
		fresh = mustAppend(t, s, "g", message(n, "b"), t0.Add(time.Duration(i+2)*time.Second))
	}
	for i, o := range old {
		if _, err := s.Update(t.Context(), o, t0.Add(time.Minute)); !errors.Is(err, hold.ErrConflict) {
			t.Errorf("Update with copy %d of the ended hold: err = %v, want ErrConflict", i, err)
		}
		if err := s.End(t.Context(), o); !errors.Is(err, hold.ErrConflict) {
			t.Errorf("End with copy %d of the ended hold: err = %v, want ErrConflict", i, err)
		}
	}
	mustBeHold(t, "the new hold", mustHold(t, s, "g"), fresh)
}

// TestListIsOrderedByGroup: List returns every hold, 150 of them (more than
// one page), ordered by group, each as Holds returns it; none on an empty
// store.
func TestListIsOrderedByGroup(t *testing.T, h Harness) {
	s := h.NewStore(t)
	if got := mustList(t, s); len(got) != 0 {
		t.Fatalf("List of an empty store = %v", got)
	}
	const n = 150
	want := make([]hold.Hold, n)
	for i := range n {
		j := i * 7 % n // every group once, out of order
		g := fmt.Sprintf("g-%03d", j)
		h, err := s.Begin(t.Context(), hold.Hold{Group: g, Head: "head-" + g, HeadBody: `{"id":"` + g + `"}`}, t0.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		h.HeadBody = "" // List leaves it out; Holds reads it
		want[j] = h
	}
	got := mustList(t, s)
	if len(got) != n {
		t.Fatalf("List returned %d holds, want %d", len(got), n)
	}
	for i := range want {
		mustBeHold(t, fmt.Sprintf("List[%d]", i), got[i], want[i])
	}
	if hs, err := s.Holds(t.Context(), []string{"g-007"}); err != nil || hs["g-007"].HeadBody != `{"id":"g-007"}` {
		t.Fatalf("Holds after List = %+v, %v: want the head's body", hs, err)
	}
}
