package replay

import (
	"context"
	"time"
)

// State is the state of a DLQ message in the ledger.
type State string

// The states of a DLQ message. SENT, PARKED and RESOLVED are final.
const (
	Seen     State = "SEEN"     // the engine has seen it in the DLQ
	Intent   State = "INTENT"   // a run is about to send it (leased)
	Sent     State = "SENT"     // sent back to its source queue
	Parked   State = "PARKED"   // sent to the parking queue
	Resolved State = "RESOLVED" // removed without a send: see Reason (ReasonAlreadyApplied)
)

// Final reports whether s ends a DLQ message's history.
func (s State) Final() bool { return s == Sent || s == Parked || s == Resolved }

// defaultRecordLifetime is how long ledger records live: longer than the
// longest DLQ retention (14 days) with a margin.
const defaultRecordLifetime = 30 * 24 * time.Hour

// MessageRecord is the ledger record of one DLQ message. The records of the
// messages of one business key together are the key's history.
type MessageRecord struct {
	HistoryKey        string    `json:"historyKey"` // see HistoryKey
	MessageID         string    `json:"messageId"`  // the DLQ message id
	State             State     `json:"state"`
	Route             string    `json:"route"`
	Key               string    `json:"key,omitempty"` // the business key, bounded by boundedID; "" for none
	OriginalMessageID string    `json:"originalMessageId"`
	RunID             string    `json:"runId,omitempty"`     // the run that wrote State
	Reason            string    `json:"reason,omitempty"`    // PARKED: the parking reason; RESOLVED: why
	ReplayCount       int       `json:"replayCount"`         // SENT, PARKED: the count in the metadata sent
	FirstSeenAt       time.Time `json:"firstSeenAt"`         // when a run first saw it in the DLQ
	At                time.Time `json:"at"`                  // when State was written
	LeaseUntil        time.Time `json:"leaseUntil,omitzero"` // INTENT: the run holds it until then
	ExpiresAt         time.Time `json:"expiresAt"`           // the record counts as absent from then on
}

// Ledger is the replay ledger. Implementations make each method atomic with
// respect to the others, treat a record whose ExpiresAt has passed (by their
// own clock) as absent without relying on TTL deletion, and are safe for
// concurrent use.
type Ledger interface {
	// Mark writes r as the record of (r.HistoryKey, r.MessageID) when the
	// stored record allows the transition to r.State at r.At:
	//
	//	SEEN           when absent;
	//	INTENT         when absent, SEEN, or INTENT whose lease has passed
	//	               or whose RunID is r.RunID (FirstSeenAt is kept);
	//	SENT, PARKED,
	//	RESOLVED       when INTENT with RunID r.RunID (FirstSeenAt is kept).
	//
	// It returns ok=true and the record it replaced (zero when there was
	// none: the message is seen for the first time), otherwise ok=false
	// and the stored record (zero when absent).
	Mark(ctx context.Context, r MessageRecord) (current MessageRecord, ok bool, err error)
	// History returns the records of a history key (see HistoryKey), in
	// no particular order.
	History(ctx context.Context, historyKey string) ([]MessageRecord, error)
	// PutRun stores a run summary, keeping it until expiresAt.
	PutRun(ctx context.Context, s Summary, expiresAt time.Time) error
	// LastRun returns the summary with the latest StartedAt; found is false
	// when there is none.
	LastRun(ctx context.Context) (s Summary, found bool, err error)
	// Runs returns up to n summaries, the latest first.
	Runs(ctx context.Context, n int) ([]Summary, error)
}

// BatchLedger is a [Ledger] that marks the records of a batch in one call.
// The engine writes a batch's INTENT, SEEN and final records with it when
// its ledger implements it, and with Mark per record otherwise.
type BatchLedger interface {
	Ledger
	// MarkBatch applies Mark's rule to each record (records of distinct
	// messages): each transition is atomic on its own, not the set. It
	// returns one result per record, in order.
	MarkBatch(ctx context.Context, records []MessageRecord) []Marked
}

// Marked is what [BatchLedger.MarkBatch] did with one record: what Mark
// returns for it.
type Marked struct {
	// Record is, when OK, the record replaced (zero when there was none);
	// otherwise the stored record (zero when absent).
	Record MessageRecord
	OK     bool
	Err    error
}

// Completions tells which business keys the consumer has completed: its
// completion record of the key (for a consumer built on package
// idempotency, the record "<consumer>#<key>") is COMPLETED. Only a route
// whose consumer writes such records ([Route.Records]) reads them.
type Completions interface {
	// Completed returns the payload hash each completed key among keys
	// completed with (as payload.Hash.Sum wrote it); a key absent from the
	// map has not completed (or its record has expired).
	Completed(ctx context.Context, keys []string) (map[string]string, error)
}

// Transition reports whether the ledger allows writing next over cur (nil:
// no live record). Ledger implementations use it, or the same rule as a
// write condition.
func Transition(cur *MessageRecord, next MessageRecord) bool {
	switch next.State {
	case Seen:
		return cur == nil
	case Intent:
		return cur == nil || cur.State == Seen ||
			cur.State == Intent && (!next.At.Before(cur.LeaseUntil) || cur.RunID == next.RunID)
	case Sent, Parked, Resolved:
		return cur != nil && cur.State == Intent && cur.RunID == next.RunID
	}
	return false
}
