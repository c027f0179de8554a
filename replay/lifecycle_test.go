package replay

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// outcomes are every outcome a message can end a run with.
var outcomes = []Outcome{
	OutcomeReplayed, OutcomeParked, OutcomeDelayed, OutcomeRecovered, OutcomeApplied,
	OutcomeBlocked, OutcomeSkipped, OutcomeDeferred, OutcomeFailed,
}

// The table declares every outcome, and item.to takes exactly its
// transitions: each pair of outcomes is tried.
func TestLifecycleTakesOnlyItsTransitions(t *testing.T) {
	states := append([]Outcome{undecided}, outcomes...)
	for _, o := range states {
		if _, ok := lifecycle[o]; !ok {
			t.Fatalf("outcome %q is not in the lifecycle", o)
		}
	}
	if len(lifecycle) != len(states) {
		t.Fatalf("the lifecycle declares %d outcomes, want %d", len(lifecycle), len(states))
	}
	for _, from := range states {
		for _, to := range outcomes {
			it := &item{outcome: from}
			it.to(to)
			allowed := slices.Contains(lifecycle[from].next, to)
			switch {
			case allowed && (it.outcome != to || it.err != nil):
				t.Errorf("%q -> %q: got %q (err %v), want the transition", from, to, it.outcome, it.err)
			case !allowed && (it.outcome != OutcomeFailed || it.err == nil || !strings.Contains(it.err.Error(), "not a transition")):
				t.Errorf("%q -> %q: got %q (err %v), want a failure naming the refused transition", from, to, it.outcome, it.err)
			}
		}
	}
}

// Every outcome is reachable from a received message, and every outcome
// but the failure can fail or end: no state is a dead declaration.
func TestLifecycleReachesEveryOutcome(t *testing.T) {
	reached := map[Outcome]bool{undecided: true}
	for queue := []Outcome{undecided}; len(queue) > 0; queue = queue[1:] {
		for _, next := range lifecycle[queue[0]].next {
			if !reached[next] {
				reached[next] = true
				queue = append(queue, next)
			}
		}
	}
	for _, o := range outcomes {
		if !reached[o] {
			t.Errorf("outcome %q cannot be reached from a received message", o)
		}
	}
	if len(lifecycle[OutcomeFailed].next) != 0 {
		t.Errorf("a failure turns into %v, want nothing: the first failure stands", lifecycle[OutcomeFailed].next)
	}
}

// The first failure of an item stands; a message that left the DLQ has no
// ending; a dry run holds every message that stays; the others end as
// their outcome's stage says.
func TestItemEnds(t *testing.T) {
	it := &item{outcome: OutcomeReplayed}
	first := errors.New("first")
	it.fail(first)
	it.fail(errors.New("second"))
	if it.outcome != OutcomeFailed || it.err != first {
		t.Fatalf("after two failures: %q, %v; want the first", it.outcome, it.err)
	}
	for _, tt := range []struct {
		it     item
		dryRun bool
		ending ending
		stays  bool
	}{
		{item{outcome: OutcomeReplayed, sent: true}, false, endKeep, false},
		{item{outcome: OutcomeRecovered}, false, endKeep, false},
		{item{outcome: OutcomeReplayed}, false, endKeep, true}, // not sent: a stop, a crash
		{item{outcome: OutcomeDelayed, delay: 30}, false, endHide, true},
		{item{outcome: OutcomeDelayed}, true, endDefer, true},
		{item{outcome: OutcomeSkipped}, false, endDefer, true},
		{item{outcome: OutcomeDeferred}, false, endDefer, true},
		{item{outcome: OutcomeBlocked}, false, endKeep, true},
		{item{outcome: OutcomeFailed}, false, endKeep, true},
		{item{outcome: OutcomeFailed}, true, endDefer, true},
	} {
		e, stays := tt.it.end(tt.dryRun)
		if e != tt.ending || stays != tt.stays {
			t.Errorf("%q (sent %v, dry run %v): ending %d, stays %v; want %d, %v", tt.it.outcome, tt.it.sent, tt.dryRun, e, stays, tt.ending, tt.stays)
		}
	}
}
