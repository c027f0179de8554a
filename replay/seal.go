package replay

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/homingdlq/homing/settings"
)

// The engine trusts only the metadata it wrote. A producer's message may
// carry a well-formed copy of our attribute (a forwarded or re-published
// replayed or parked message, or a forgery); its replay count, original id
// or times must not decide anything. So every metadata the engine writes is
// sealed: [Metadata.Seal] is an HMAC-SHA256, under a key only the ledger
// holds, of the metadata, the message body and the name of the queue the
// engine sent it to. A message's metadata is ours when its seal verifies
// for its body and for the queue it must have come through: the route's
// source queue for a replay (the broker moved it from there to the DLQ),
// the queue the route reads for a parked message (the parking queue).
// Anything else (no seal, a wrong one, a parked message's metadata in a
// DLQ, metadata over its bounds) is the producer's data, kept under a
// neutral name, and the message is taken as one that carries none of ours.

// The ledger record that holds the seal key: the SEEN record of
// (SealKeyHistoryKey, sealKeyMessageID), whose OriginalMessageID is the key in
// hex. The first run writes it (Mark's SEEN-when-absent rule makes
// concurrent first runs agree on one key); it lives for sealKeyLifetime.
// No history key spells it (they start with "order#" or "message#").
const (
	SealKeyHistoryKey = "homing#seal-key"
	sealKeyMessageID  = "v1"
	sealKeyBytes      = 32
	sealKeyLifetime   = 100 * 365 * 24 * time.Hour
)

// Bounds of what the engine takes from metadata: what it writes is within
// them (SQS message ids are 100 bytes at most; route names, run ids and
// reasons are ours), so sealed metadata over them is not ours either.
const (
	maxMetaID     = 128
	maxMetaCount  = 10_000
	maxMetaString = settings.MaxRouteNameBytes
)

// SealKey returns the ledger's seal key, writing a new random one when the
// ledger holds none. Operators' tools that write metadata the engine must
// trust (and tests) use it with [Metadata.Sealed].
func SealKey(ctx context.Context, l Ledger, now time.Time) ([]byte, error) {
	key := make([]byte, sealKeyBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	rec := MessageRecord{
		HistoryKey: SealKeyHistoryKey, MessageID: sealKeyMessageID, State: Seen, Route: "homing",
		OriginalMessageID: hex.EncodeToString(key), FirstSeenAt: now, At: now, ExpiresAt: now.Add(sealKeyLifetime),
	}
	cur, ok, err := l.Mark(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("read the seal key from the ledger: %w", err)
	}
	if ok {
		return key, nil
	}
	stored, err := hex.DecodeString(cur.OriginalMessageID)
	if err != nil || len(stored) != sealKeyBytes {
		return nil, errors.New("read the seal key from the ledger: the stored key is not 32 bytes of hex")
	}
	return stored, nil
}

// Sealed returns m sealed under key for a message of body sent to the
// queue at queueURL (see [SealKey]).
func (m Metadata) Sealed(key []byte, body, queueURL string) Metadata {
	m.Seal = m.seal(key, body, queueName(queueURL))
	return m
}

// seal is the HMAC of m (its Seal left out), body and queue under key.
func (m Metadata) seal(key []byte, body, queue string) string {
	m.Seal = ""
	// The times as they read back: the seal of what was written and of
	// what is read are made of the same bytes.
	m.FirstDeadLetteredAt = m.FirstDeadLetteredAt.UTC()
	m.LastReplayAt = m.LastReplayAt.UTC()
	m.ParkedAt = m.ParkedAt.UTC()
	m.ResetAt = m.ResetAt.UTC()
	doc, _ := json.Marshal(m) // a struct of strings, ints and times always encodes
	sum := sha256.Sum256([]byte(body))
	mac := hmac.New(sha256.New, key)
	mac.Write(doc)
	mac.Write([]byte{0})
	mac.Write(sum[:])
	mac.Write([]byte{0})
	mac.Write([]byte(queue))
	return hex.EncodeToString(mac.Sum(nil))
}

// verifies reports whether m is metadata the engine wrote under key for a
// message of body sent to queue, within the bounds of what it writes.
func (m Metadata) verifies(key []byte, body, queue string) bool {
	if len(key) == 0 || m.Seal == "" || !m.bounded() {
		return false
	}
	want := m.seal(key, body, queue)
	return hmac.Equal([]byte(m.Seal), []byte(want))
}

func (m Metadata) bounded() bool { return m.readable() && len(m.Seal) == 2*sha256.Size }

// readable reports whether m is within the bounds of what the engine
// writes, sealed or not: [Read] refuses metadata that is not, so that what
// it returns [Attributes] writes again.
func (m Metadata) readable() bool {
	return m.OriginalMessageID != "" && len(m.OriginalMessageID) <= maxMetaID &&
		m.ReplayCount >= 0 && m.ReplayCount <= maxMetaCount && m.Refunds >= 0 && m.Refunds <= maxMetaCount &&
		len(m.Route) <= maxMetaString && len(m.RunID) <= maxMetaString && len(m.Reason) <= maxMetaString &&
		len(m.Corrupt) <= maxMetaString && len(m.Seal) <= 2*sha256.Size
}

// queueName is the last path segment of a queue URL: the queue's name,
// whichever form of URL (an emulator's, a region's) names it.
func queueName(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// trust is what a run needs to tell our metadata from a producer's: the
// seal key (nil when it could not be read: then no metadata is ours) and
// the route's queues.
type trust struct {
	key    []byte
	source string // the route's source queue name: a replay came through it
	reads  string // the name of the queue the route reads: a parked message is there
}

func newTrust(key []byte, rt Route) trust {
	return trust{key: key, source: queueName(rt.SourceURL), reads: queueName(rt.DLQURL)}
}

// ours reports whether meta, read from a message of body, is ours.
func (t trust) ours(meta Metadata, body string) bool {
	queue := t.source
	if meta.Reason != "" {
		queue = t.reads
	}
	return meta.verifies(t.key, body, queue)
}
