package hold

import (
	"context"
	"errors"
	"time"

	"encoding/json"
)

// State is the state of a [Hold].
type State string

// The states of a hold. A group without a hold is free.
const (
	// Held: the head has not been applied; every other record of the
	// group is stored behind it.
	Held State = "held"
	// Draining: the head was applied or released; the consumer applies the
	// held records in order, then ends the hold.
	Draining State = "draining"
)

// Hold is the record of a held message group.
type Hold struct {
	Group string // the MessageGroupId
	// Head is the original id ([OriginOf]) of the record that holds the
	// group: the one to be applied before any other. A group released past
	// its head ([Keeper.Release]) drains with no head.
	Head string
	// HeadBody is the head's body as the consumer received it ("" when
	// the group has no head). The replay's sweep reads the head's business
	// key and payload from it, to learn from the consumer's completion
	// records whether the head was applied although the group is still
	// held behind it (a copy of the head acknowledged by one invocation
	// while another wrote the hold). It is at most [MaxHeadBody] long
	// ([HeadBodyOf]).
	HeadBody string
	State    State
	// Parked says why the head will not come back by itself ("" when it
	// will): "invalid: <reason>" when the consumer routed it to the invalid
	// queue, "parked: <reason>" when the replay parked it. An operator
	// releases such a group, or a lane whose OnError is Skip does at once.
	Parked  string
	Since   time.Time // when the group was held
	Updated time.Time // when the hold last changed
	// Version changes with every write of the hold, an [Store.Append]
	// included: [Store.Update] and [Store.End] write only the version they
	// were given.
	Version int64
}

// MaxHeadBody is the longest head body a hold keeps: every record held
// behind the hold rewrites it (its version), and every FIFO batch reads
// it, so it stays small. A longer head is kept with no body; the sweep
// cannot tell then whether it was applied, and its group waits for its
// head, or for a release, as on a lane without completion records.
const MaxHeadBody = 16 << 10

// HeadBodyOf is body as a hold keeps it ([Hold.HeadBody]): "" when it is
// longer than [MaxHeadBody].
func HeadBodyOf(body string) string {
	if len(body) > MaxHeadBody {
		return ""
	}
	return body
}

// Message is a record held behind a hold.
type Message struct {
	// Seq orders the group's held records: the record's SequenceNumber in
	// the source, zero-padded ([PadSeq]).
	Seq string
	// Record is the record as the consumer received it, as JSON (a Lambda
	// events.SQSMessage, its receipt handle dropped: package record writes
	// and reads it). A store keeps it as it is.
	Record json.RawMessage
}

// Errors of a [Store].
var (
	// ErrNotHeld: the group has no hold.
	ErrNotHeld = errors.New("hold: the group is not held")
	// ErrConflict: the hold changed since it was read (its version is not
	// the one given).
	ErrConflict = errors.New("hold: the hold changed since it was read")
)

// Store keeps the holds of one lane. Every method is safe for concurrent
// use, and every write is conditional: two consumers that hold a copy of
// the same batch (a visibility timeout that ended while the first still
// ran) cannot both win.
type Store interface {
	// Holds returns the holds of groups; a group without one is absent.
	Holds(ctx context.Context, groups []string) (map[string]Hold, error)
	// Begin holds h.Group behind h.Head, with h.HeadBody and h.Parked
	// (the other fields are the store's), unless the group is held
	// already; it returns the group's hold, the new one or the one it
	// found.
	Begin(ctx context.Context, h Hold, now time.Time) (Hold, error)
	// Append stores m behind the group's hold and changes the hold's
	// version; it returns the hold as written. Storing a Seq stored before
	// is not an error and changes nothing. ErrNotHeld when the group has no
	// hold.
	Append(ctx context.Context, group string, m Message, now time.Time) (Hold, error)
	// Next returns the first n records held in group, in order.
	Next(ctx context.Context, group string, n int) ([]Message, error)
	// Count returns how many records are held in group.
	Count(ctx context.Context, group string) (int, error)
	// Remove forgets a held record (it was applied, or it left the hold);
	// removing one that is not held is not an error.
	Remove(ctx context.Context, group, seq string) error
	// Update writes h's Head, HeadBody, State and Parked if the stored hold's version
	// is h.Version, and returns the hold as written: ErrConflict when the
	// version differs, ErrNotHeld when the group has no hold.
	Update(ctx context.Context, h Hold, now time.Time) (Hold, error)
	// End deletes the hold if its version is h.Version (ErrConflict
	// otherwise; a group without a hold is not an error). The caller ends
	// a hold only after it found no record held in it at that version.
	End(ctx context.Context, h Hold) error
	// List returns every hold of the lane, ordered by group, each
	// without its HeadBody (Holds reads it): a lane may hold many groups,
	// and a listing's memory stays small.
	List(ctx context.Context) ([]Hold, error)
}
