package emf

import (
	"context"
	"maps"
	"sync"
)

// The acknowledged outcomes of package batch (batch.Succeeded,
// batch.Invalid and batch.Parked); every other outcome is a batch item
// failure. A test
// holds them to batch's constants: emf does not import batch, which
// brings the SQS client along.
const (
	outcomeSucceeded = "succeeded"
	outcomeInvalid   = "invalid"
	outcomeParked    = "parked" // sent to the parking queue with its group: processed, not failed
)

// totals are the record outcomes of one invocation.
type totals struct {
	Processed  int            // every record with an outcome
	Failed     int            // reported back to SQS as batch item failures
	Classes    map[string]int // the failures by class (batch's failure class)
	Invalid    map[string]int // sent to the invalid queue, by reason
	Duplicates int            // the receiver returned a stored result
	Unrecorded int            // the effect happened, its completion was not recorded
	InDoubt    int            // took over an expired claim, or resolved an ambiguous failure
}

// InvalidTotal is the number of invalid records, all reasons.
func (c totals) InvalidTotal() int {
	n := 0
	for _, v := range c.Invalid {
		n += v
	}
	return n
}

// tally counts the outcomes of one invocation. Its zero value is ready; it
// is safe for concurrent use (the batch processor runs records at once).
type tally struct {
	mu sync.Mutex
	c  totals
}

// Outcome counts one record's outcome, in the words of batch.Outcome:
// "succeeded", "parked", "invalid" (with its reason), anything else a
// failure (with its class).
func (t *tally) Outcome(outcome, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.Processed++
	switch outcome {
	case outcomeSucceeded, outcomeParked:
	case outcomeInvalid:
		if t.c.Invalid == nil {
			t.c.Invalid = map[string]int{}
		}
		t.c.Invalid[reason]++
	default:
		t.c.Failed++
		if reason != "" {
			if t.c.Classes == nil {
				t.c.Classes = map[string]int{}
			}
			t.c.Classes[reason]++
		}
	}
}

// Receipt is what the idempotent receiver said of a record it acknowledged:
// the flags of idempotency.Outcome, which emf does not import (it stays
// free of the receiver's dependencies).
type Receipt struct {
	Duplicate  bool // the stored result was returned without running the effect
	Unrecorded bool // the effect happened but its completion could not be recorded
	InDoubt    bool // took over an expired claim, or resolved an ambiguous failure
}

// Receipt counts what the idempotent receiver reported for a record.
func (t *tally) Receipt(out Receipt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if out.Duplicate {
		t.c.Duplicates++
	}
	if out.Unrecorded {
		t.c.Unrecorded++
	}
	if out.InDoubt {
		t.c.InDoubt++
	}
}

// Counts returns a copy of the totals so far.
func (t *tally) Counts() totals {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.c
	c.Invalid = maps.Clone(c.Invalid)
	c.Classes = maps.Clone(c.Classes)
	return c
}

type tallyKey struct{}

// newContext returns ctx carrying t, for [CountOutcome] and
// [CountReceipt]. [Wrap] does it for each invocation.
func newContext(ctx context.Context, t *tally) context.Context {
	return context.WithValue(ctx, tallyKey{}, t)
}

// CountOutcome counts a record's outcome in the tally of ctx; without
// one it does nothing. CountOutcome[batch.Outcome] is a
// batch.Options.OnOutcome. It is safe for concurrent use.
func CountOutcome[O ~string](ctx context.Context, o O, reason string) {
	if t, ok := ctx.Value(tallyKey{}).(*tally); ok {
		t.Outcome(string(o), reason)
	}
}

// CountReceipt counts the idempotent receiver's outcome of a record (the
// flags of the idempotency.Outcome that Receiver.Do returned) in the
// tally of ctx; without one it does nothing. Call it from the record
// handler, with the handler's ctx, for every record the receiver
// acknowledged. It is safe for concurrent use.
func CountReceipt(ctx context.Context, out Receipt) {
	if t, ok := ctx.Value(tallyKey{}).(*tally); ok {
		t.Receipt(out)
	}
}
