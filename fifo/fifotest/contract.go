package fifotest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/fifo"
)

// Tests runs the contract of a [fifo.Store] on the stores newStore
// returns, one subtest per rule (go test -run 'Contract/count_needs_the_round').
// newStore returns an empty store for one test, no park of another test in
// it.
func Tests(t *testing.T, newStore func(t *testing.T) fifo.Store) {
	t.Helper()
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore(t)) })
	}
}

var contract = []struct {
	name string
	test func(t *testing.T, s fifo.Store)
}{
	{"park_stores_the_park", parkStoresThePark},
	{"park_of_a_parked_group_changes_nothing", parkOfAParkedGroupChangesNothing},
	{"parked_returns_only_parked_groups", parkedReturnsOnlyParkedGroups},
	{"count_adds_parked_and_raises_applied", countAddsParkedAndRaisesApplied},
	{"count_counts_a_record_once", countCountsARecordOnce},
	{"count_needs_a_park", countNeedsAPark},
	{"begin_starts_a_round", beginStartsARound},
	{"begin_waits_for_the_round_to_settle", beginWaitsForTheRoundToSettle},
	{"move_counts_a_record_once", moveCountsARecordOnce},
	{"repark_names_a_new_head_and_ends_the_round", reparkNamesANewHeadAndEndsTheRound},
	{"release_removes_the_park_as_seen", releaseRemovesTheParkAsSeen},
	{"release_of_a_changed_park_conflicts", releaseOfAChangedParkConflicts},
	{"a_group_parked_again_starts_afresh", aGroupParkedAgainStartsAfresh},
	{"list_orders_by_group", listOrdersByGroup},
	{"groups_do_not_collide", groupsDoNotCollide},
}

// t0 is the time the tests park at, in a zone other than UTC.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 123_000_000, time.FixedZone("CET", 3600))

func mustPark(t *testing.T, s fifo.Store, group, head string) fifo.Park {
	t.Helper()
	p, err := s.Park(t.Context(), fifo.Park{Group: group, Reason: "invalid: bad-amount", Head: head, Queue: "invalid", Since: t0})
	if err != nil {
		t.Fatalf("Park %q: %v", group, err)
	}
	return p
}

// parkOf returns the stored park of group, failing t when there is none.
func parkOf(t *testing.T, s fifo.Store, group string) fifo.Park {
	t.Helper()
	parks, err := s.Parked(t.Context(), []string{group})
	if err != nil {
		t.Fatalf("Parked %q: %v", group, err)
	}
	p, ok := parks[group]
	if !ok {
		t.Fatalf("%q is not parked", group)
	}
	return p
}

func notParked(t *testing.T, s fifo.Store, group string) {
	t.Helper()
	parks, err := s.Parked(t.Context(), []string{group})
	if err != nil {
		t.Fatalf("Parked %q: %v", group, err)
	}
	if p, ok := parks[group]; ok {
		t.Fatalf("%q is parked: %+v", group, p)
	}
}

func mustCount(t *testing.T, s fifo.Store, group string, c fifo.Count) {
	t.Helper()
	if err := s.Count(t.Context(), group, c); err != nil {
		t.Fatalf("Count %q %+v: %v", group, c, err)
	}
}

func mustBegin(t *testing.T, s fifo.Store, group, round string) {
	t.Helper()
	if err := s.Begin(t.Context(), group, round); err != nil {
		t.Fatalf("Begin %q %q: %v", group, round, err)
	}
}

// mustMove counts records first..last of round moved (parking ids p-N).
func mustMove(t *testing.T, s fifo.Store, group, round string, first, last int) {
	t.Helper()
	for n := first; n <= last; n++ {
		if _, err := s.Move(t.Context(), group, round, fmt.Sprintf("p-%d", n), n); err != nil {
			t.Fatalf("Move %q %q %d: %v", group, round, n, err)
		}
	}
}

// seq is source sequence number n as the consumer counts it.
func seq(n int) string { return fifo.SeqKey(fmt.Sprint(n)) }

// same fails t unless got is want (Since as an instant).
func same(t *testing.T, what string, got, want fifo.Park) {
	t.Helper()
	if !got.Since.Equal(want.Since) {
		t.Errorf("%s: Since = %v, want %v", what, got.Since, want.Since)
	}
	got.Since, want.Since = time.Time{}, time.Time{}
	if got != want {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

// counters fails t unless group's park counts parked, moved and applied
// in round.
func counters(t *testing.T, s fifo.Store, group string, parked, moved, applied int, round string) {
	t.Helper()
	p := parkOf(t, s, group)
	if p.Parked != parked || p.Moved != moved || p.Applied != applied || p.Releasing != round {
		t.Fatalf("park of %q: parked %d moved %d applied %d releasing %q; want %d %d %d %q",
			group, p.Parked, p.Moved, p.Applied, p.Releasing, parked, moved, applied, round)
	}
}

// parkStoresThePark: Park of a group not parked stores its group, reason,
// head, queue and time, with no record counted and no round (whatever the
// caller gave), and returns what it stored.
func parkStoresThePark(t *testing.T, s fifo.Store) {
	in := fifo.Park{Group: "acct-7", Reason: fifo.ReasonExpiring, Head: "m-1", Queue: "parking", Since: t0,
		Parked: 1, Moved: 5, Applied: 4, Releasing: "r-1", Previous: "r-0", Seq: seq(3), LastMoved: "p-5"}
	got, err := s.Park(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := fifo.Park{Group: in.Group, Reason: in.Reason, Head: in.Head, Queue: in.Queue, Since: in.Since}
	same(t, "Park", got, want)
	same(t, "the stored park", parkOf(t, s, "acct-7"), want)
}

// parkOfAParkedGroupChangesNothing: Park of a parked group returns the
// standing park and changes nothing.
func parkOfAParkedGroupChangesNothing(t *testing.T, s fifo.Store) {
	first := mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Seq: seq(1), Parked: 1})
	first.Parked, first.Seq = 1, seq(1)
	again, err := s.Park(t.Context(), fifo.Park{Group: "g", Reason: fifo.ReasonDeliveredTooOften, Head: "m-9", Queue: "parking", Since: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "the second Park", again, first)
	same(t, "the stored park", parkOf(t, s, "g"), first)
}

// parkedReturnsOnlyParkedGroups: Parked of 150 groups (more than one
// DynamoDB batch), one named twice and one never parked, returns the
// parks of the parked ones only; Parked of none returns none.
func parkedReturnsOnlyParkedGroups(t *testing.T, s fifo.Store) {
	var groups []string
	want := map[string]fifo.Park{}
	for i := range 150 {
		g := fmt.Sprintf("g-%03d", i)
		groups = append(groups, g)
		if i%3 == 0 {
			want[g] = mustPark(t, s, g, "head-"+g)
		}
	}
	got, err := s.Parked(t.Context(), append(groups, "g-000", "never"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("Parked returned %d parks, want %d", len(got), len(want))
	}
	for g, w := range want {
		same(t, "Parked["+g+"]", got[g], w)
	}
	if none, err := s.Parked(t.Context(), nil); err != nil || len(none) != 0 {
		t.Fatalf("Parked(nil) = %v, %v; want none", none, err)
	}
}

// countAddsParkedAndRaisesApplied: Count adds its Parked, raises Applied
// to its Index (never lowers it) and keeps the last Seq; a Count without
// Seq counts every time.
func countAddsParkedAndRaisesApplied(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Seq: seq(9), Parked: 1})
	mustCount(t, s, "g", fifo.Count{Seq: seq(10), Parked: 1, Index: 2})
	mustCount(t, s, "g", fifo.Count{Seq: seq(11), Index: 1})
	mustCount(t, s, "g", fifo.Count{Parked: 1})
	mustCount(t, s, "g", fifo.Count{Parked: 1})
	p := parkOf(t, s, "g")
	if p.Parked != 4 || p.Applied != 2 || p.Seq != seq(11) || p.Moved != 0 {
		t.Fatalf("park %+v: want parked 4, applied 2, seq %s, moved 0", p, seq(11))
	}
}

// countCountsARecordOnce: a Count whose Seq is not above the last one
// counted (the same record again, or an older copy) changes nothing and
// is no error.
func countCountsARecordOnce(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Seq: seq(100), Parked: 1, Index: 3})
	mustCount(t, s, "g", fifo.Count{Seq: seq(100), Parked: 1, Index: 3})
	mustCount(t, s, "g", fifo.Count{Seq: seq(99), Parked: 1, Index: 7})
	p := parkOf(t, s, "g")
	if p.Parked != 1 || p.Applied != 3 || p.Seq != seq(100) {
		t.Fatalf("park %+v: want parked 1, applied 3, seq %s", p, seq(100))
	}
}

// countNeedsAPark: Count of a group never parked, or released, fails with
// ErrNotParked and parks nothing.
func countNeedsAPark(t *testing.T, s fifo.Store) {
	if err := s.Count(t.Context(), "never", fifo.Count{Seq: seq(1), Parked: 1}); !errors.Is(err, fifo.ErrNotParked) {
		t.Errorf("Count of a group never parked: err = %v, want ErrNotParked", err)
	}
	p := mustPark(t, s, "g", "m-1")
	if err := s.Release(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if err := s.Count(t.Context(), "g", fifo.Count{Parked: 1, Index: 1}); !errors.Is(err, fifo.ErrNotParked) {
		t.Errorf("Count of a released group: err = %v, want ErrNotParked", err)
	}
	notParked(t, s, "never")
	notParked(t, s, "g")
}

// beginStartsARound: Begin names the round and changes no counter; Begin
// while a round is in progress fails with ErrChanged; Begin of a group not
// parked fails with ErrNotParked and parks nothing.
func beginStartsARound(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 3})
	mustBegin(t, s, "g", "r-1")
	counters(t, s, "g", 3, 0, 0, "r-1")
	if err := s.Begin(t.Context(), "g", "r-2"); !errors.Is(err, fifo.ErrChanged) {
		t.Fatalf("Begin during a round: err = %v, want ErrChanged", err)
	}
	counters(t, s, "g", 3, 0, 0, "r-1")
	if err := s.Begin(t.Context(), "never", "r-1"); !errors.Is(err, fifo.ErrNotParked) {
		t.Fatalf("Begin of a group never parked: err = %v, want ErrNotParked", err)
	}
	notParked(t, s, "never")
}

// beginWaitsForTheRoundToSettle: after a Repark ended a round, Begin fails
// with ErrChanged until Applied reaches Moved; then it forgets Previous
// and sets Applied to Moved (a record settled beyond what was counted
// moved counts for nothing in the new round).
func beginWaitsForTheRoundToSettle(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 3})
	mustBegin(t, s, "g", "r-1")
	mustMove(t, s, "g", "r-1", 1, 2)
	mustCount(t, s, "g", fifo.Count{Seq: seq(1), Index: 1})
	if err := s.Repark(t.Context(), "g", "m-2", fifo.ReasonExpiring, "parking"); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(t.Context(), "g", "r-2"); !errors.Is(err, fifo.ErrChanged) {
		t.Fatalf("Begin with record 2 of 2 unsettled: err = %v, want ErrChanged", err)
	}
	mustCount(t, s, "g", fifo.Count{Seq: seq(2), Parked: 1, Index: 3})
	mustBegin(t, s, "g", "r-2")
	p := parkOf(t, s, "g")
	if p.Releasing != "r-2" || p.Previous != "" || p.Moved != 2 || p.Applied != 2 || p.Parked != 4 {
		t.Fatalf("park %+v: want round r-2, no previous, moved 2, applied 2, parked 4", p)
	}
}

// moveCountsARecordOnce: Move counts record n moved and reports the round
// current; the same id and number again counts nothing; a number that
// does not follow Moved fails with ErrChanged; after a Repark, Move still
// counts and reports the round ended; Move of a group not parked fails
// with ErrNotParked.
func moveCountsARecordOnce(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 3})
	mustBegin(t, s, "g", "r-1")
	for range 2 {
		if cur, err := s.Move(t.Context(), "g", "r-1", "p-1", 1); err != nil || !cur {
			t.Fatalf("Move 1: %t, %v; want current", cur, err)
		}
	}
	if _, err := s.Move(t.Context(), "g", "r-1", "p-2", 3); !errors.Is(err, fifo.ErrChanged) {
		t.Fatalf("Move 3 after 1: err = %v, want ErrChanged", err)
	}
	counters(t, s, "g", 3, 1, 0, "r-1")
	if err := s.Repark(t.Context(), "g", "m-2", fifo.ReasonExpiring, "parking"); err != nil {
		t.Fatal(err)
	}
	if cur, err := s.Move(t.Context(), "g", "r-1", "p-2", 2); err != nil || cur {
		t.Fatalf("Move 2 after a Repark: %t, %v; want counted, round ended", cur, err)
	}
	if p := parkOf(t, s, "g"); p.Moved != 2 || p.LastMoved != "p-2" {
		t.Fatalf("park %+v: want moved 2, last moved p-2", p)
	}
	if _, err := s.Move(t.Context(), "never", "r-1", "p-1", 1); !errors.Is(err, fifo.ErrNotParked) {
		t.Fatalf("Move of a group never parked: err = %v, want ErrNotParked", err)
	}
	notParked(t, s, "never")
}

// reparkNamesANewHeadAndEndsTheRound: Repark names the head, reason and
// queue and ends the round (Previous names it); the time and counters
// stay. A Repark with no round in progress keeps Previous. Repark of a
// group not parked fails with ErrNotParked and parks nothing.
func reparkNamesANewHeadAndEndsTheRound(t *testing.T, s fifo.Store) {
	p := mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 3})
	mustBegin(t, s, "g", "r-1")
	mustMove(t, s, "g", "r-1", 1, 3)
	mustCount(t, s, "g", fifo.Count{Seq: seq(1), Index: 1})
	for _, head := range []string{"m-2", "m-3"} {
		if err := s.Repark(t.Context(), "g", head, fifo.ReasonDeliveredTooOften, "parking"); err != nil {
			t.Fatal(err)
		}
		want := p
		want.Head, want.Reason, want.Queue = head, fifo.ReasonDeliveredTooOften, "parking"
		want.Parked, want.Moved, want.Applied, want.Previous, want.Seq, want.LastMoved = 3, 3, 1, "r-1", seq(1), "p-3"
		same(t, "the reparked park", parkOf(t, s, "g"), want)
	}
	if err := s.Repark(t.Context(), "never", "m-1", fifo.ReasonExpiring, "parking"); !errors.Is(err, fifo.ErrNotParked) {
		t.Fatalf("Repark of a group never parked: err = %v, want ErrNotParked", err)
	}
	notParked(t, s, "never")
}

// releaseRemovesTheParkAsSeen: Release of the park as stored removes it;
// Release of a group not parked (any more) is no error.
func releaseRemovesTheParkAsSeen(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 2})
	mustBegin(t, s, "g", "r-1")
	mustMove(t, s, "g", "r-1", 1, 2)
	mustCount(t, s, "g", fifo.Count{Seq: seq(1), Index: 2})
	p := parkOf(t, s, "g")
	if err := s.Release(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	notParked(t, s, "g")
	if err := s.Release(t.Context(), p); err != nil {
		t.Fatalf("Release again: %v", err)
	}
	if err := s.Release(t.Context(), fifo.Park{Group: "never"}); err != nil {
		t.Fatalf("Release of a group never parked: %v", err)
	}
}

// releaseOfAChangedParkConflicts: Release of a park whose counters or
// round are not the stored ones fails with ErrChanged and keeps it.
func releaseOfAChangedParkConflicts(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 2})
	mustBegin(t, s, "g", "r-1")
	mustMove(t, s, "g", "r-1", 1, 2)
	mustCount(t, s, "g", fifo.Count{Seq: seq(1), Index: 1})
	stored := parkOf(t, s, "g")
	for name, change := range map[string]func(p *fifo.Park){
		"parked":    func(p *fifo.Park) { p.Parked-- },
		"moved":     func(p *fifo.Park) { p.Moved++ },
		"applied":   func(p *fifo.Park) { p.Applied++ },
		"releasing": func(p *fifo.Park) { p.Releasing = "r-0" },
	} {
		seen := stored
		change(&seen)
		if err := s.Release(t.Context(), seen); !errors.Is(err, fifo.ErrChanged) {
			t.Errorf("Release with another %s: err = %v, want ErrChanged", name, err)
		}
	}
	same(t, "the park after refused releases", parkOf(t, s, "g"), stored)
}

// aGroupParkedAgainStartsAfresh: a group parked after its release has the
// new park, none of the old one's counters or round.
func aGroupParkedAgainStartsAfresh(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Seq: seq(5), Parked: 2})
	mustBegin(t, s, "g", "r-1")
	mustMove(t, s, "g", "r-1", 1, 2)
	mustCount(t, s, "g", fifo.Count{Seq: seq(9), Index: 2})
	if err := s.Release(t.Context(), parkOf(t, s, "g")); err != nil {
		t.Fatal(err)
	}
	in := fifo.Park{Group: "g", Reason: fifo.ReasonExpiring, Head: "m-5", Queue: "parking", Since: t0.Add(time.Hour)}
	got, err := s.Park(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "the new park", got, in)
	same(t, "the stored park", parkOf(t, s, "g"), in)
	mustCount(t, s, "g", fifo.Count{Seq: seq(1), Parked: 1})
	counters(t, s, "g", 1, 0, 0, "")
}

// listOrdersByGroup: List returns every park, ordered by group (as Go
// compares strings), and none of an empty store.
func listOrdersByGroup(t *testing.T, s fifo.Store) {
	if none, err := s.List(t.Context()); err != nil || len(none) != 0 {
		t.Fatalf("List of an empty store = %v, %v", none, err)
	}
	groups := []string{"b", "a-2", "a", "Z", "a#1", "é", strings.Repeat("x", 128), "a-10"}
	for _, g := range groups {
		mustPark(t, s, g, "head-"+g)
	}
	mustCount(t, s, "a", fifo.Count{Parked: 4})
	got, err := s.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Group)
	}
	want := slices.Sorted(slices.Values(groups))
	if !slices.Equal(names, want) {
		t.Fatalf("List = %q, want %q", names, want)
	}
	for _, p := range got {
		if p.Head != "head-"+p.Group || p.Group == "a" && p.Parked != 4 {
			t.Errorf("List: park of %q = %+v", p.Group, p)
		}
	}
}

// groupsDoNotCollide: the writes to one group leave a group whose name
// shares its prefix untouched.
func groupsDoNotCollide(t *testing.T, s fifo.Store) {
	for _, g := range []string{"g", "g1", "g#1"} {
		mustPark(t, s, g, "head-"+g)
	}
	mustCount(t, s, "g", fifo.Count{Parked: 3})
	mustBegin(t, s, "g", "r-1")
	mustMove(t, s, "g", "r-1", 1, 3)
	mustCount(t, s, "g", fifo.Count{Index: 3})
	if err := s.Release(t.Context(), parkOf(t, s, "g")); err != nil {
		t.Fatal(err)
	}
	notParked(t, s, "g")
	for _, g := range []string{"g1", "g#1"} {
		counters(t, s, g, 0, 0, 0, "")
	}
}
