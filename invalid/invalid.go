package invalid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/clip"
	"github.com/homingdlq/homing/internal/envelope"
)

// AttributeName is the message attribute that carries [Metadata]. A
// producer's attribute of this name is kept as data under a neutral name
// ("homing-invalid.prev"), never decoded.
const AttributeName = envelope.InvalidAttributeName

// Bounds of the [Metadata] fields, in bytes before JSON escaping; a longer
// value is cut on a rune boundary and marked with "...". Even fully escaped
// (sixfold), the metadata stays within the bound the lane keeps room for on
// the source queue, so any message the lane's source queue accepted fits
// the invalid queue whole; batch.InvalidQueue sends a larger one in parts
// ([Metadata] Part and Parts).
const (
	MaxReasonBytes = 64
	MaxDetailBytes = 1024 // one human sentence, with room for a downstream's error text
	MaxNameBytes   = 512  // SourceQueue, MessageID, Consumer
)

// Metadata says why and where a message was declared invalid.
type Metadata struct {
	Reason      string    `json:"reason"`
	Detail      string    `json:"detail"`
	SourceQueue string    `json:"sourceQueue"` // ARN of the queue the record came from
	MessageID   string    `json:"messageId"`   // SQS message id of the record
	Consumer    string    `json:"consumer"`
	At          time.Time `json:"at"`
	// Part and Parts number the messages of a body too large to travel whole
	// beside its verdict (a message as large as SQS takes): the body was cut
	// on rune boundaries into Parts messages, Part counting from 1, each with
	// this verdict; their bodies in the order of Part are the body, and the
	// first carries the producer's attributes. Both 0 when the body is whole.
	Part  int `json:"part,omitempty"`
	Parts int `json:"parts,omitempty"`
}

// Stamp returns the producer's attributes with meta packed into
// [AttributeName], every field cut to its bound. A producer's attribute of
// our name is kept as data under the neutral name, never decoded. attrs is
// not modified.
func Stamp(attrs map[string]types.MessageAttributeValue, meta Metadata) (map[string]types.MessageAttributeValue, error) {
	meta.Reason = clip.String(meta.Reason, MaxReasonBytes)
	meta.Detail = clip.String(meta.Detail, MaxDetailBytes)
	meta.SourceQueue = clip.String(meta.SourceQueue, MaxNameBytes)
	meta.MessageID = clip.String(meta.MessageID, MaxNameBytes)
	meta.Consumer = clip.String(meta.Consumer, MaxNameBytes)
	out := make(map[string]types.MessageAttributeValue, len(attrs)+1)
	for k, v := range attrs {
		out[k] = v
	}
	attrs, err := envelope.Pack(neutralise(out), AttributeName, meta)
	if err != nil {
		return nil, fmt.Errorf("stamp invalid-message metadata: %w", err)
	}
	return attrs, nil
}

// neutralise keeps a producer's attribute of our name as data under the
// neutral name: ours is ours, whatever a message arrives with (a verdict of
// an earlier publication sent back, or a forgery), and is never decoded.
func neutralise(attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	theirs, ok := attrs[AttributeName]
	if !ok {
		return attrs
	}
	delete(attrs, AttributeName)
	attrs[envelope.Neutral(AttributeName, attrs)] = theirs
	return attrs
}

// DeduplicationID is the FIFO deduplication id for a message forwarded from
// a queue: the same source message always gets the same id.
func DeduplicationID(sourceQueue, messageID string) string {
	sum := sha256.Sum256([]byte(sourceQueue + "\n" + messageID))
	return hex.EncodeToString(sum[:])
}

// ErrCorrupt is wrapped by [Read] when the message carries our attribute but
// not as [Stamp] writes it (a forgery, or a message cut by hand).
var ErrCorrupt = envelope.ErrCorrupt

// Read returns the metadata of a message received from the invalid queue and
// the producer's attributes as they were before publishing. found is false
// when the message carries no metadata; an attribute of our name that does
// not decode, or whose fields are not within their bounds as Stamp cuts them
// (a field over [MaxDetailBytes] and the others, a Part outside 1..Parts),
// is an error wrapping [ErrCorrupt]. What Read returns, Stamp writes again unchanged.
func Read(attrs map[string]types.MessageAttributeValue) (meta Metadata, producer map[string]types.MessageAttributeValue, found bool, err error) {
	producer, found, err = envelope.Unpack(attrs, AttributeName, &meta)
	if err == nil && found && !bounded(meta) {
		err = fmt.Errorf("a field over its bound: %w", ErrCorrupt)
	}
	if err != nil {
		return Metadata{}, nil, found, fmt.Errorf("read invalid-message metadata: %w", err)
	}
	return meta, producer, found, nil
}

// bounded reports whether every field of m is as Stamp writes it: within
// its bound, or cut to it, and a part within its parts.
func bounded(m Metadata) bool {
	if m.Parts == 0 && m.Part != 0 || m.Parts != 0 && (m.Part < 1 || m.Part > m.Parts) {
		return false
	}
	for _, f := range [...]struct {
		v string
		n int
	}{{m.Reason, MaxReasonBytes}, {m.Detail, MaxDetailBytes}, {m.SourceQueue, MaxNameBytes}, {m.MessageID, MaxNameBytes}, {m.Consumer, MaxNameBytes}} {
		if clip.String(f.v, f.n) != f.v {
			return false
		}
	}
	return true
}
