// Package record holds the replay ledger's records: the state of each dead
// letter the engine has seen, the rule of their transitions and the key of a
// business key's history. The replay engine writes them through its Ledger;
// the ledger's adapters (dynamo, replaytest's memory ledger), dlq's audit and
// the project's tests read them. They are not part of the public API: an
// adopter uses a ledger through the adapters' constructors.
package record

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/homingdlq/homing/internal/settings"
)

// State is the state of a DLQ message in the ledger.
type State string

// The states of a DLQ message. SENT, PARKED and RESOLVED are final.
const (
	Seen     State = "SEEN"     // the engine has seen it in the DLQ
	Intent   State = "INTENT"   // a run is about to send it (leased)
	Sent     State = "SENT"     // sent back to its source queue
	Parked   State = "PARKED"   // sent to the parking queue
	Resolved State = "RESOLVED" // removed without a send: see Reason (already-applied)
)

// Final reports whether s ends a DLQ message's history.
func (s State) Final() bool { return s == Sent || s == Parked || s == Resolved }

// Message is the ledger record of one DLQ message. The records of the
// messages of one business key together are the key's history.
type Message struct {
	HistoryKey string `json:"historyKey"` // see HistoryKey
	MessageID  string `json:"messageId"`  // the DLQ message id
	// Step, when set, is the record's identity in its history instead of
	// MessageID: the replay step that sent the message (see replay's
	// step), so that two copies of one send share one record.
	Step              string    `json:"step,omitempty"`
	State             State     `json:"state"`
	Route             string    `json:"route"`
	Key               string    `json:"key,omitempty"` // the business key, bounded by BoundedID; "" for none
	OriginalMessageID string    `json:"originalMessageId"`
	RunID             string    `json:"runId,omitempty"`     // the run that wrote State
	Reason            string    `json:"reason,omitempty"`    // PARKED: the parking reason; RESOLVED: why
	ReplayCount       int       `json:"replayCount"`         // SENT, PARKED: the count in the metadata sent
	FirstSeenAt       time.Time `json:"firstSeenAt"`         // when a run first saw it in the DLQ
	At                time.Time `json:"at"`                  // when State was written
	LeaseUntil        time.Time `json:"leaseUntil,omitzero"` // INTENT: the run holds it until then
	ExpiresAt         time.Time `json:"expiresAt"`           // the record counts as absent from then on
}

// ID is the record's identity in its history: Step, or MessageID.
func (m Message) ID() string {
	if m.Step != "" {
		return m.Step
	}
	return m.MessageID
}

// Marked is what a ledger's MarkBatch did with one record: what Mark
// returns for it.
type Marked struct {
	// Record is, when OK, the record replaced (zero when there was none);
	// otherwise the stored record (zero when absent).
	Record Message
	OK     bool
	Err    error
}

// Transition reports whether the ledger allows writing next over cur (nil:
// no live record). Ledger implementations use it, or the same rule as a
// write condition. A run takes over an INTENT only once its lease ended, or
// renews its own of the same DLQ message; only that run, for that message,
// writes the final record over it.
func Transition(cur *Message, next Message) bool {
	switch next.State {
	case Seen:
		return cur == nil
	case Intent:
		return cur == nil || cur.State == Seen ||
			cur.State == Intent && (!next.At.Before(cur.LeaseUntil) || cur.RunID == next.RunID && cur.MessageID == next.MessageID)
	case Sent, Parked, Resolved:
		return cur != nil && cur.State == Intent && cur.RunID == next.RunID && cur.MessageID == next.MessageID
	}
	return false
}

// HistoryKey is the ledger's partition key of the history of a business
// key: "order#<key>", or "message#<originalMessageId>" for a message
// without one. An id is bounded by BoundedID, so a key never grows with the
// input (DynamoDB rejects partition keys over 2,048 bytes). The prefix
// "order#" is the stored format of every lane's keys: never change it
// (docs/CONTRACT.md says why).
func HistoryKey(key, originalMessageID string) string {
	if key != "" {
		return settings.ScopedKey("order", BoundedID(key))
	}
	return settings.ScopedKey("message", BoundedID(originalMessageID))
}

// MaxKeyID is the longest id a key embeds as it is.
const MaxKeyID = 128

// BoundedID returns id when it is at most MaxKeyID bytes long, and
// "sha256~" plus the hex SHA-256 of id otherwise (or when id itself starts
// with "sha256~", so a plain id never spells a hashed one).
func BoundedID(id string) string {
	const marker = "sha256~"
	if len(id) <= MaxKeyID && !strings.HasPrefix(id, marker) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return marker + hex.EncodeToString(sum[:])
}
