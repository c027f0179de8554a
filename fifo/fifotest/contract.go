package fifotest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/parking"
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
	{"count_adds_parked", countAddsParked},
	{"count_counts_a_record_once", countCountsARecordOnce},
	{"count_settles_the_rounds_copies", countSettlesTheRoundsCopies},
	{"count_needs_a_park", countNeedsAPark},
	{"begin_starts_a_round", beginStartsARound},
	{"sent_needs_the_round", sentNeedsTheRound},
	{"end_takes_the_settled_records", endTakesTheSettledRecords},
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

// mustRound begins round on group with records p-1..p-n, sends them all
// and settles the first settled.
func mustRound(t *testing.T, s fifo.Store, group, round string, n, settled int) {
	t.Helper()
	var batch, keys []string
	for i := 1; i <= n; i++ {
		batch = append(batch, fmt.Sprintf("p-%d", i))
		keys = append(keys, fmt.Sprintf("%s-m-%d", round, i))
	}
	if err := s.Begin(t.Context(), group, round, batch, keys); err != nil {
		t.Fatalf("Begin %q %q: %v", group, round, err)
	}
	if err := s.Sent(t.Context(), group, round, n); err != nil {
		t.Fatalf("Sent %q %q %d: %v", group, round, n, err)
	}
	for i := 1; i <= settled; i++ {
		mustCount(t, s, group, fifo.Count{Round: round, Index: i})
	}
}

// seq is source sequence number n as the consumer counts it.
func seq(n int) string { return parking.SeqKey(fmt.Sprint(n)) }

// same fails t unless got is want (Since as an instant).
func same(t *testing.T, what string, got, want fifo.Park) {
	t.Helper()
	if !got.Since.Equal(want.Since) {
		t.Errorf("%s: Since = %v, want %v", what, got.Since, want.Since)
	}
	got.Since, want.Since = time.Time{}, time.Time{}
	if len(got.Batch) == 0 && len(want.Batch) == 0 {
		got.Batch, want.Batch = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

// counters fails t unless group's park counts parked and moved, and has
// round in progress with sent and settled copies.
func counters(t *testing.T, s fifo.Store, group string, parked, moved int, round string, sent, settled int) {
	t.Helper()
	p := parkOf(t, s, group)
	if p.Parked != parked || p.Moved != moved || p.Releasing != round || p.Sent != sent || p.Settled != settled {
		t.Fatalf("park of %q: parked %d moved %d releasing %q sent %d settled %d; want %d %d %q %d %d",
			group, p.Parked, p.Moved, p.Releasing, p.Sent, p.Settled, parked, moved, round, sent, settled)
	}
}

// parkStoresThePark: Park of a group not parked stores its group, reason,
// head, queue and time, with no record counted and no round (whatever the
// caller gave), and returns what it stored.
func parkStoresThePark(t *testing.T, s fifo.Store) {
	in := fifo.Park{Group: "acct-7", Reason: fifo.ReasonExpiring, Head: "m-1", Queue: "parking", Since: t0,
		Parked: 1, Moved: 5, Releasing: "r-1", Batch: []string{"p-1"}, Sent: 1, Settled: 1, Stop: 1, Seq: seq(3)}
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

// countAddsParked: Count adds its Parked and keeps the last Seq (as a
// number orders); a Count without Seq counts every time.
func countAddsParked(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Seq: seq(9), Parked: 1})
	mustCount(t, s, "g", fifo.Count{Seq: seq(10), Parked: 1})
	mustCount(t, s, "g", fifo.Count{Parked: 1})
	mustCount(t, s, "g", fifo.Count{Parked: 1})
	if p := parkOf(t, s, "g"); p.Parked != 4 || p.Seq != seq(10) || p.Moved != 0 {
		t.Fatalf("park %+v: want parked 4, seq %s, moved 0", p, seq(10))
	}
}

// countCountsARecordOnce: a Count whose Seq is not above the last one
// counted (the same record again, or an older copy), or that settles a
// copy settled already, changes nothing and is no error.
func countCountsARecordOnce(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Seq: seq(100), Parked: 1})
	mustCount(t, s, "g", fifo.Count{Seq: seq(100), Parked: 1})
	mustCount(t, s, "g", fifo.Count{Seq: seq(99), Parked: 1})
	mustRound(t, s, "g", "r-1", 3, 0)
	mustCount(t, s, "g", fifo.Count{Seq: seq(101), Round: "r-1", Index: 2})
	mustCount(t, s, "g", fifo.Count{Seq: seq(102), Round: "r-1", Index: 2, Stop: 2, Head: "m-9", Reason: fifo.ReasonExpiring, Queue: "parking"})
	mustCount(t, s, "g", fifo.Count{Seq: seq(103), Round: "r-1", Index: 1})
	p := parkOf(t, s, "g")
	if p.Parked != 1 || p.Settled != 2 || p.Stop != 0 || p.Head != "m-1" || p.Seq != seq(101) {
		t.Fatalf("park %+v: want parked 1, settled 2, no stop, head m-1, seq %s", p, seq(101))
	}
}

// countSettlesTheRoundsCopies: Count raises Settled to its Index in the
// park's round (ErrChanged in another, counting nothing), and with Stop
// names the new head, reason and queue; Taken then leaves the stopped
// records in the parking queue.
func countSettlesTheRoundsCopies(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 4})
	mustRound(t, s, "g", "r-1", 4, 1)
	if err := s.Count(t.Context(), "g", fifo.Count{Round: "r-0", Index: 2}); !errors.Is(err, fifo.ErrChanged) {
		t.Fatalf("Count of another round's copy: err = %v, want ErrChanged", err)
	}
	counters(t, s, "g", 4, 0, "r-1", 4, 1)
	mustCount(t, s, "g", fifo.Count{Round: "r-1", Index: 2, Stop: 3, Head: "m-7", Reason: "invalid: bad-amount", Queue: "invalid"})
	mustCount(t, s, "g", fifo.Count{Round: "r-1", Index: 4})
	p := parkOf(t, s, "g")
	if p.Settled != 4 || p.Stop != 3 || p.Head != "m-7" || p.Reason != "invalid: bad-amount" || p.Queue != "invalid" || p.Taken() != 2 {
		t.Fatalf("park %+v: want settled 4, stop 3 at m-7 (invalid: bad-amount, invalid), 2 taken", p)
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
	if err := s.Count(t.Context(), "g", fifo.Count{Parked: 1}); !errors.Is(err, fifo.ErrNotParked) {
		t.Errorf("Count of a released group: err = %v, want ErrNotParked", err)
	}
	notParked(t, s, "never")
	notParked(t, s, "g")
}

// beginStartsARound: Begin names the round and its batch, none sent or
// settled; Begin while a round is in progress fails with ErrChanged and
// changes nothing; Begin of a group not parked fails with ErrNotParked and
// parks nothing.
func beginStartsARound(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 3})
	if err := s.Begin(t.Context(), "g", "r-1", []string{"p-1", "p-2"}, []string{"m-1", "m-2"}); err != nil {
		t.Fatal(err)
	}
	counters(t, s, "g", 3, 0, "r-1", 0, 0)
	if err := s.Begin(t.Context(), "g", "r-2", []string{"p-3"}, []string{"m-3"}); !errors.Is(err, fifo.ErrChanged) {
		t.Fatalf("Begin during a round: err = %v, want ErrChanged", err)
	}
	if p := parkOf(t, s, "g"); p.Releasing != "r-1" || !slices.Equal(p.Batch, []string{"p-1", "p-2"}) || !slices.Equal(p.Keys, []string{"m-1", "m-2"}) {
		t.Fatalf("park %+v: want round r-1 of p-1, p-2 (keys m-1, m-2)", p)
	}
	if err := s.Begin(t.Context(), "never", "r-1", []string{"p-1"}, []string{"m-1"}); !errors.Is(err, fifo.ErrNotParked) {
		t.Fatalf("Begin of a group never parked: err = %v, want ErrNotParked", err)
	}
	notParked(t, s, "never")
}

// sentNeedsTheRound: Sent raises Sent (never lowers it) in the park's
// round, and fails with ErrChanged in another.
func sentNeedsTheRound(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	if err := s.Begin(t.Context(), "g", "r-1", []string{"p-1", "p-2", "p-3"}, []string{"m-1", "m-2", "m-3"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 1} {
		if err := s.Sent(t.Context(), "g", "r-1", n); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sent(t.Context(), "g", "r-2", 3); !errors.Is(err, fifo.ErrChanged) {
		t.Fatalf("Sent in another round: err = %v, want ErrChanged", err)
	}
	counters(t, s, "g", 0, 0, "r-1", 2, 0)
}

// endTakesTheSettledRecords: End of a round with a copy sent and not
// settled, or of another round, fails with ErrChanged; once all are
// settled it adds the records taken to Moved, their keys to Recent (the
// last 20), and clears the round.
func endTakesTheSettledRecords(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 5})
	mustRound(t, s, "g", "r-1", 3, 2)
	for _, round := range []string{"r-1", "r-0"} {
		if err := s.End(t.Context(), "g", round); !errors.Is(err, fifo.ErrChanged) {
			t.Fatalf("End of %s: err = %v, want ErrChanged", round, err)
		}
	}
	mustCount(t, s, "g", fifo.Count{Round: "r-1", Index: 3})
	if err := s.End(t.Context(), "g", "r-1"); err != nil {
		t.Fatal(err)
	}
	counters(t, s, "g", 5, 3, "", 0, 0)
	mustRound(t, s, "g", "r-2", 2, 0)
	mustCount(t, s, "g", fifo.Count{Round: "r-2", Index: 1, Stop: 1, Head: "m-4", Reason: fifo.ReasonExpiring, Queue: "parking"})
	mustCount(t, s, "g", fifo.Count{Round: "r-2", Index: 2})
	if err := s.End(t.Context(), "g", "r-2"); err != nil {
		t.Fatal(err)
	}
	if p := parkOf(t, s, "g"); p.Moved != 3 || p.Releasing != "" || len(p.Batch) != 0 || len(p.Keys) != 0 || p.Stop != 0 || p.Head != "m-4" ||
		!slices.Equal(p.Recent, []string{"r-1-m-1", "r-1-m-2", "r-1-m-3"}) {
		t.Fatalf("park %+v: want moved 3, no round, head m-4, the keys of r-1 recent", p)
	}
	mustCount(t, s, "g", fifo.Count{Parked: 20})
	mustRound(t, s, "g", "r-3", 10, 10)
	if err := s.End(t.Context(), "g", "r-3"); err != nil {
		t.Fatal(err)
	}
	mustRound(t, s, "g", "r-4", 10, 10)
	if err := s.End(t.Context(), "g", "r-4"); err != nil {
		t.Fatal(err)
	}
	if p := parkOf(t, s, "g"); p.Moved != 23 || len(p.Recent) != 20 || p.Recent[0] != "r-3-m-1" || p.Recent[19] != "r-4-m-10" {
		t.Fatalf("park %+v: want moved 23, the keys of r-3 and r-4 recent", p)
	}
}

// releaseRemovesTheParkAsSeen: Release of the park as stored removes it;
// Release of a group not parked (any more) is no error.
func releaseRemovesTheParkAsSeen(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 2})
	mustRound(t, s, "g", "r-1", 2, 2)
	if err := s.End(t.Context(), "g", "r-1"); err != nil {
		t.Fatal(err)
	}
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

// releaseOfAChangedParkConflicts: Release of a park whose counters are not
// the stored ones, or during a round, fails with ErrChanged and keeps it.
func releaseOfAChangedParkConflicts(t *testing.T, s fifo.Store) {
	mustPark(t, s, "g", "m-1")
	mustCount(t, s, "g", fifo.Count{Parked: 2})
	mustRound(t, s, "g", "r-1", 1, 1)
	if err := s.Release(t.Context(), parkOf(t, s, "g")); !errors.Is(err, fifo.ErrChanged) {
		t.Fatalf("Release during a round: err = %v, want ErrChanged", err)
	}
	if err := s.End(t.Context(), "g", "r-1"); err != nil {
		t.Fatal(err)
	}
	stored := parkOf(t, s, "g")
	for name, change := range map[string]func(p *fifo.Park){
		"parked": func(p *fifo.Park) { p.Parked-- },
		"moved":  func(p *fifo.Park) { p.Moved++ },
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
	mustRound(t, s, "g", "r-1", 2, 2)
	if err := s.End(t.Context(), "g", "r-1"); err != nil {
		t.Fatal(err)
	}
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
	counters(t, s, "g", 1, 0, "", 0, 0)
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
	mustRound(t, s, "g", "r-1", 3, 3)
	if err := s.End(t.Context(), "g", "r-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(t.Context(), parkOf(t, s, "g")); err != nil {
		t.Fatal(err)
	}
	notParked(t, s, "g")
	for _, g := range []string{"g1", "g#1"} {
		counters(t, s, g, 0, 0, "", 0, 0)
	}
}
