package replay

import (
	"fmt"
	"slices"
)

// The lifecycle of a message in a run. A received message is undecided;
// the plan gives it its [Outcome], and the claim, the send and the finish
// may change it, only along the transitions of [lifecycle]: every change
// goes through item.to, which refuses any other. When its batch ends, a
// message that did not leave the DLQ (sent, or deleted as recovered or
// applied) is left as its outcome's ending says; in a dry run every one is
// deferred. The run's counts, its log lines and its metrics count the outcome
// each message ends with.

// undecided is the outcome of a message received and not yet planned.
const undecided Outcome = ""

// ending is what becomes of a message that stays in the DLQ when its batch
// ends.
type ending uint8

const (
	// endKeep leaves it as it is: it reappears when its receive
	// visibility (the decision window) ends.
	endKeep ending = iota
	// endDefer hides it until the pass ends, then releases it (see deferred.go):
	// it is left for a later run, and the pass reaches the rest of the DLQ.
	endDefer
	// endHide hides it until it is due (item.delay).
	endHide
)

// stage declares one outcome: the phases that may give it, what it may
// turn into, and its ending.
type stage struct {
	by     string    // the phases that give the outcome, for the reader
	next   []Outcome // the outcomes it may turn into
	ending ending
}

// lifecycle is the table of the outcomes and their transitions.
var lifecycle = map[Outcome]stage{
	undecided: {by: "receive", ending: endKeep, next: []Outcome{
		OutcomeSkipped, OutcomeDeferred, OutcomeDelayed, OutcomeReplayed, OutcomeParked, // plan: the filter, a gate, the policy
	}},
	OutcomeReplayed: {by: "plan", ending: endKeep, next: []Outcome{
		OutcomeParked,                    // plan: the expiry rescue at the cap, too large for its source; claim: the rescue when the ledger fails
		OutcomeDeferred,                  // plan: the cap, the canary limit
		OutcomeBlocked,                   // plan, claim, send: an earlier message of its FIFO group does not leave
		OutcomeApplied,                   // claim: its key completed with the same payload
		OutcomeRecovered, OutcomeDelayed, // claim: a final record; another run's live INTENT
		OutcomeFailed, // plan: its metadata; claim: the ledger; send: the lease, the send
	}},
	OutcomeParked: {by: "plan, claim", ending: endKeep, next: []Outcome{
		OutcomeDeferred, OutcomeBlocked, OutcomeApplied, OutcomeRecovered, OutcomeDelayed, OutcomeFailed,
	}},
	OutcomeDelayed: {by: "plan, claim", ending: endHide, next: []Outcome{
		OutcomeRecovered, // a dry run's look-up: a final record
	}},
	OutcomeBlocked: {by: "plan, claim, send", ending: endKeep, next: []Outcome{
		OutcomeRecovered, // a dry run's look-up
	}},
	OutcomeRecovered: {by: "claim", ending: endKeep, next: []Outcome{
		OutcomeFailed, // finish: its delete failed
	}},
	OutcomeApplied:  {by: "claim", ending: endKeep},
	OutcomeSkipped:  {by: "plan", ending: endDefer},
	OutcomeDeferred: {by: "plan", ending: endDefer},
	OutcomeFailed:   {by: "plan, claim, send, finish", ending: endKeep},
}

// to moves the item to outcome o. A transition the lifecycle does not have
// is a bug of the engine: the item fails with an error that names it, and
// stays in the DLQ (nothing is lost).
func (it *item) to(o Outcome) {
	if !slices.Contains(lifecycle[it.outcome].next, o) {
		it.err = fmt.Errorf("replay: %q -> %q is not a transition of the lifecycle", it.outcome, o)
		o = OutcomeFailed
	}
	it.outcome = o
}

// park moves the item to OutcomeParked for reason.
func (it *item) park(reason string) {
	it.to(OutcomeParked)
	it.reason = reason
}

// delayFor moves the item to OutcomeDelayed, hidden for seconds when its
// batch ends.
func (it *item) delayFor(seconds int32) {
	it.to(OutcomeDelayed)
	it.delay = seconds
}

// fail moves the item to OutcomeFailed for err; the first failure stands.
func (it *item) fail(err error) {
	if it.outcome == OutcomeFailed {
		return
	}
	it.to(OutcomeFailed)
	if it.err == nil {
		it.err = err
	}
}

// end is what becomes of the item when its batch ends: nothing when it left
// the DLQ (stays is false), else its outcome's ending (endDefer for all in a
// dry run).
func (it *item) end(dryRun bool) (e ending, stays bool) {
	switch {
	case it.sent || it.outcome == OutcomeRecovered:
		return endKeep, false
	case dryRun:
		return endDefer, true
	}
	return lifecycle[it.outcome].ending, true
}
