package replay

import (
	"maps"
)

// Outcome is what becomes of one examined message: the one word the
// policy's decision, the log line of a message ("outcome") and the
// [Counts] share.
type Outcome string

// The outcomes. A decision is one of the first three.
const (
	OutcomeReplayed  Outcome = "replayed"  // sent to the source queue
	OutcomeParked    Outcome = "parked"    // sent to the parking queue
	OutcomeDelayed   Outcome = "delayed"   // hidden in the DLQ until due
	OutcomeRecovered Outcome = "recovered" // sent by an earlier run: deleted now without sending
	OutcomeApplied   Outcome = "applied"   // its key completed with the same payload: deleted without sending
	OutcomeBlocked   Outcome = "blocked"   // FIFO: an earlier message of its group did not move
	OutcomeSkipped   Outcome = "skipped"   // rejected by the filter
	OutcomeDeferred  Outcome = "deferred"  // left for a later run: the cap, the canary or a closed gate
	OutcomeFailed    Outcome = "failed"    // an error before it moved
)

// moves reports whether the outcome sends the message to another queue.
func (o Outcome) moves() bool { return o == OutcomeReplayed || o == OutcomeParked }

// leaves reports whether the message leaves the DLQ: moved, or deleted as
// recovered or applied. On a FIFO route, a message that does not leave
// holds up the later ones of its group.
func (o Outcome) leaves() bool { return o.moves() || o == OutcomeRecovered || o == OutcomeApplied }

// Counts are per-message outcomes. Every examined message has one
// [Outcome], counted in the field of its name. A message moved but not
// deleted from the DLQ counts as replayed (or parked) and as an error; the
// next run deletes it.
type Counts struct {
	Examined     int            `json:"examined"`     // distinct messages received
	DeadLettered int            `json:"deadLettered"` // seen for the first time, a replay of the engine's that came back excepted (a skipped or held message is not looked up)
	Replayed     int            `json:"replayed"`     // OutcomeReplayed
	Parked       map[string]int `json:"parked"`       // OutcomeParked, by reason
	Recovered    int            `json:"recovered"`    // OutcomeRecovered
	Applied      int            `json:"applied"`      // OutcomeApplied
	Delayed      int            `json:"delayed"`      // OutcomeDelayed
	Blocked      int            `json:"blocked"`      // OutcomeBlocked
	Skipped      int            `json:"skipped"`      // OutcomeSkipped
	Deferred     int            `json:"deferred"`     // OutcomeDeferred
	Errors       int            `json:"errors"`       // OutcomeFailed, and failures after a move (its ledger record, its delete, the hold told of its park)
}

// count adds one message of outcome o (reason: the parking reason).
func (c *Counts) count(o Outcome, reason string) {
	switch o {
	case OutcomeReplayed:
		c.Replayed++
	case OutcomeParked:
		if c.Parked == nil {
			c.Parked = map[string]int{}
		}
		c.Parked[reason]++
	case OutcomeRecovered:
		c.Recovered++
	case OutcomeApplied:
		c.Applied++
	case OutcomeDelayed:
		c.Delayed++
	case OutcomeBlocked:
		c.Blocked++
	case OutcomeSkipped:
		c.Skipped++
	case OutcomeDeferred:
		c.Deferred++
	case OutcomeFailed:
		c.Errors++
	}
}

// ParkedTotal is the number of parked messages, all reasons.
func (c Counts) ParkedTotal() int {
	n := 0
	for _, v := range c.Parked {
		n += v
	}
	return n
}

func (c *Counts) add(o Counts) {
	c.Examined += o.Examined
	c.DeadLettered += o.DeadLettered
	c.Replayed += o.Replayed
	if c.Parked == nil {
		c.Parked = map[string]int{}
	}
	for k, v := range o.Parked {
		c.Parked[k] += v
	}
	c.Recovered += o.Recovered
	c.Applied += o.Applied
	c.Delayed += o.Delayed
	c.Blocked += o.Blocked
	c.Skipped += o.Skipped
	c.Deferred += o.Deferred
	c.Errors += o.Errors
}

func newCounts() Counts { return Counts{Parked: map[string]int{}} }

// clone returns a deep copy, so a summary handed out is not shared.
func (c Counts) clone() Counts {
	c.Parked = maps.Clone(c.Parked)
	if c.Parked == nil {
		c.Parked = map[string]int{}
	}
	return c
}
