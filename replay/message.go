package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/clip"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/payload"
)

// attributeName is the message attribute that carries [Metadata].
const attributeName = envelope.ReplayAttributeName

// Metadata travels with a replayed or parked message in the one attribute
// attributeName. A replay replaces the previous metadata.
type Metadata struct {
	ReplayCount         int       `json:"replayCount"`           // replays so far, this one included
	FirstDeadLetteredAt time.Time `json:"firstDeadLetteredAt"`   // when the original message was first dead-lettered (approximately)
	LastReplayAt        time.Time `json:"lastReplayAt,omitzero"` // when it was last sent back to its source
	OriginalMessageID   string    `json:"originalMessageId"`     // the id of the message as first dead-lettered
	Route               string    `json:"route,omitempty"`       // the route that sent it
	RunID               string    `json:"runId,omitempty"`       // the run that sent it
	Reason              string    `json:"reason,omitempty"`      // parked messages: why
	ParkedAt            time.Time `json:"parkedAt,omitzero"`     // parked messages: when
	Corrupt             string    `json:"corrupt,omitempty"`     // parked as corrupt-metadata by earlier versions: the undecodable attribute, as it was
	// ResetAt is when an operator restarted the replay count
	// ([Request.ResetCount]): the ledger's replays of the message before it
	// are not counted.
	ResetAt time.Time `json:"resetAt,omitzero"`
	// Seal authenticates the rest (see seal.go): metadata without a seal
	// that verifies is not the engine's, whatever it says.
	Seal string `json:"seal,omitempty"`
	// Refunds counts the replays given back because they failed in a run
	// whose replays all failed (the [Breaker]: the failure was the
	// system's, not the message's). At most MaxReplays replays are given
	// back: a message is replayed at most 2 x MaxReplays times in all
	// (between two resets of its count).
	Refunds int `json:"refunds,omitempty"`
}

// Read returns a message's metadata and the producer's attributes before
// ours were added; found is false when it carries no metadata. It does not
// verify the seal ([Verifier] does). An attribute of our name that does not
// decode, or holds what the engine never writes, is an error wrapping
// invalid.ErrCorrupt (docs/PACKAGES.md#replay). What Read returns,
// [Attributes] writes again.
func Read(attrs map[string]types.MessageAttributeValue) (meta Metadata, producer map[string]types.MessageAttributeValue, found bool, err error) {
	producer, found, err = envelope.Unpack(attrs, attributeName, &meta)
	if err == nil && found && !meta.readable() {
		err = fmt.Errorf("%w: no original message id, or a field out of the engine's bounds", envelope.ErrCorrupt)
	}
	if err != nil {
		return Metadata{}, nil, found, fmt.Errorf("read replay metadata: %w", err)
	}
	return meta, producer, found, nil
}

// Attributes returns producer's attributes with meta added in the one
// attribute attributeName, as the engine sends a message: meta is trusted
// by the engine only when sealed ([Metadata.Sealed]). It returns an error
// when meta does not fit beside producer: more than the 10 attributes SQS
// carries, or metadata over 16 KiB.
func Attributes(producer map[string]types.MessageAttributeValue, meta Metadata) (map[string]types.MessageAttributeValue, error) {
	attrs, err := envelope.Pack(producer, attributeName, meta)
	if err != nil {
		return nil, fmt.Errorf("add replay metadata: %w", err)
	}
	return attrs, nil
}

// boundedKey is what a ledger record or a summary stores of a business
// key: record.BoundedID of it, "" for none.
func boundedKey(key string) string {
	if key == "" {
		return ""
	}
	return record.BoundedID(key)
}

// MaxKeyID is the longest id a key embeds as it is; a longer one is
// hashed (docs/CONTRACT.md).
const MaxKeyID = record.MaxKeyID

// deduplicationID is the FIFO deduplication id of the message sent for
// replay number count (or, with a reason, the parking) of the message whose
// id is messageID in the queue the engine reads: the same send always gets
// the same id, and two different messages never share one (SQS message ids
// are unique; nothing a producer writes goes into it).
func deduplicationID(messageID string, count int, reason string) string {
	sum := sha256.Sum256([]byte(messageID + "\n" + strconv.Itoa(count) + "\n" + reason))
	return hex.EncodeToString(sum[:])
}

// message is what the engine reads from one DLQ message.
type message struct {
	id, receipt, body string
	group             string // FIFO MessageGroupId
	meta              Metadata
	hasMeta           bool
	producer          map[string]types.MessageAttributeValue
	foreign           bool      // an attribute of our name that is not our metadata: kept as data
	key               string    // the business key: its route's Key of the body; "" for none
	step              string    // the ledger's identity of the send that made it: see stepOf
	class             string    // its failure class (classUnknown: no record); "" when not read
	reason            string    // the filter reason: see reason
	sentAt            time.Time // SentTimestamp; zero when absent
	// deadLetteredAt approximates when the message reached the DLQ: its
	// SentTimestamp (for FIFO queues SQS resets it on the move; for
	// standard queues it is the original send, earlier), or now.
	// ApproximateFirstReceiveTimestamp is not used: in the DLQ it may be the
	// first receive by an earlier run, which would move the due time of a
	// message from one run to the next.
	deadLetteredAt time.Time
}

// readMessage reads m as received at now, telling our metadata from a
// producer's with t, and its business key with key.
func readMessage(m types.Message, now time.Time, t trust, key payload.Key) message {
	msg := message{
		id:      aws.ToString(m.MessageId),
		receipt: aws.ToString(m.ReceiptHandle),
		body:    aws.ToString(m.Body),
		group:   m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)],
		sentAt:  millis(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]),
	}
	var err error
	msg.meta, msg.producer, msg.hasMeta, err = Read(m.MessageAttributes)
	if err == nil && msg.hasMeta && !t.ours(msg.meta, msg.body) {
		err = errNotOurs
	}
	if err != nil {
		// Not ours: the engine only ever writes metadata that reads back
		// and verifies (see seal.go). A producer's attribute of our name
		// is kept as data under a neutral name, never taken as our
		// metadata; the message is treated as one that carries none.
		msg.meta, msg.hasMeta, msg.foreign = Metadata{}, false, true
		msg.producer = maps.Clone(m.MessageAttributes)
		delete(msg.producer, attributeName)
		msg.producer[envelope.Neutral(attributeName, m.MessageAttributes)] = m.MessageAttributes[attributeName]
	}
	msg.key, _ = key.Of([]byte(msg.body))
	msg.step = stepOf(msg, t.reads)
	msg.reason = reason(msg.meta, m.MessageAttributes, t.invalid)
	msg.deadLetteredAt = msg.sentAt
	if msg.deadLetteredAt.IsZero() {
		msg.deadLetteredAt = now
	}
	return msg
}

// stepOf is the ledger's identity of m in its key's history, when m
// carries metadata the engine sealed: the queue it is read from, its original
// id, replay count, refunds, reset and park reason. Two copies of one send
// (a run that crashed between its send and its record is retried) share
// it, so the copy that comes second is recovered, not sent again. It is ""
// for a message without our metadata: its record is its own id's.
func stepOf(m message, queue string) string {
	if !m.hasMeta {
		return ""
	}
	step := "step~" + queue + "~" + record.BoundedID(m.meta.OriginalMessageID) + "~" +
		strconv.Itoa(m.meta.ReplayCount) + "~" + strconv.Itoa(m.meta.Refunds)
	if !m.meta.ResetAt.IsZero() {
		step += "~reset~" + m.meta.ResetAt.UTC().Format(time.RFC3339Nano)
	}
	if m.meta.Reason != "" {
		step += "~parked~" + m.meta.Reason
	}
	return step
}

// errNotOurs says a well-formed metadata attribute does not verify.
var errNotOurs = errors.New("replay metadata not sealed by the engine")

// originalID is the id of the message as first dead-lettered.
func (m message) originalID() string {
	if m.meta.OriginalMessageID != "" {
		return m.meta.OriginalMessageID
	}
	return m.id
}

// firstDeadLettered is when the original message was first dead-lettered.
func (m message) firstDeadLettered() time.Time {
	if !m.meta.FirstDeadLetteredAt.IsZero() {
		return m.meta.FirstDeadLetteredAt
	}
	return m.deadLetteredAt
}

// millis parses an SQS epoch-milliseconds attribute; zero when absent or bad.
func millis(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

// isPart reports whether attrs carry the consumer's verdict on a part of a
// body split in several messages (invalid.Metadata.Parts).
func isPart(attrs map[string]types.MessageAttributeValue) bool {
	inv, _, found, err := invalid.Read(attrs)
	return err == nil && found && inv.Parts > 1
}

// reason is the reason a [Filter] selects a message by: the parking reason
// in meta (our metadata, verified; zero when it carries none), else, on a
// route over the invalid queue (invalid), the consumer's verdict, else
// [ReasonDeadLettered]. A verdict elsewhere is the producer's data.
func reason(meta Metadata, attrs map[string]types.MessageAttributeValue, invalidQueue bool) string {
	if meta.Reason != "" {
		return meta.Reason
	}
	if !invalidQueue {
		return ReasonDeadLettered
	}
	if inv, _, found, err := invalid.Read(attrs); err == nil && found && inv.Reason != "" {
		// Stamp writes it within its bound; bounded again before use.
		return clip.String(inv.Reason, maxMetaString)
	}
	return ReasonDeadLettered
}
