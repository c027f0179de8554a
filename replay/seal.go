package replay

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/payload"
)

// The engine trusts only the metadata it wrote. A producer's message may
// carry a well-formed copy of our attribute (a forwarded or re-published
// replayed or parked message, or a forgery); its replay count, original id
// or times must not decide anything. So every metadata the engine writes is
// sealed: [Metadata.Seal] is an Ed25519 signature, by a key only the replay
// function may read, of the metadata, the message body and the name of the
// queue the engine sent it to. A message's metadata is ours when its seal
// verifies for its body and for the queue it must have come through: the
// route's source queue for a replay (the broker moved it from there to the
// DLQ), the queue the route reads for a parked message (the parking queue).
// Anything else (no seal, a wrong one, a parked message's metadata in a
// DLQ, metadata over its bounds) is the producer's data, kept under a
// neutral name, and the message is taken as one that carries none of ours.
//
// An engine denied the seal key (an operator's `dlq replay` under the
// construct's grants) verifies with the public key and seals nothing: its
// replays come back as new dead letters. The key of the seals written
// before the signature (an HMAC-SHA256, under the record "v1" that every
// operator could read) is never used again: the signing key is a new one,
// and those seals verify nowhere.

// The ledger records of the seal: the SEEN records of (sealKeyPartition,
// sealKeyMessageID), whose OriginalMessageID is the key (the Ed25519 seed)
// in hex, and of (settings.SealPublicKeyPartition, sealKeyMessageID), whose
// OriginalMessageID is its public key in hex. The first run writes them
// (Mark's SEEN-when-absent rule makes concurrent first runs agree on one
// key; the public key derives from it); they live for sealKeyLifetime. No
// history key spells them (they start with "order#" or "message#").
const (
	sealKeyPartition = settings.SealKeyPartition
	sealKeyMessageID = "v2" // "v1" was the HMAC key operators could read

	sealKeyBytes    = ed25519.SeedSize
	sealKeyLifetime = 100 * 365 * 24 * time.Hour
)

// sealLen is the length of a seal: an Ed25519 signature in hex.
const sealLen = 2 * ed25519.SignatureSize

// Bounds of what the engine takes from metadata: what it writes is within
// them (SQS message ids are 100 bytes at most; route names, run ids and
// reasons are ours), so sealed metadata over them is not ours either.
const (
	maxMetaID     = 128
	maxMetaCount  = 10_000
	maxMetaString = settings.MaxRouteNameBytes
)

// SealKey returns the ledger's seal key, writing a new random one when the
// ledger holds none, and its public key when the ledger holds none. Tools
// that write metadata the engine must trust (and tests) use it with
// [Metadata.Sealed]; the construct grants it to the replay function alone.
func SealKey(ctx context.Context, l Ledger, now time.Time) ([]byte, error) {
	key, _, err := sealKey(ctx, l, now)
	return key, err
}

// sealKey is [SealKey]; note says what operators should know of the
// public key ("" when it is in place).
func sealKey(ctx context.Context, l Ledger, now time.Time) (key []byte, note string, err error) {
	if key, err = storedKey(ctx, l, now); err != nil {
		return nil, "", err
	}
	return key, publishKey(ctx, l, newSealer(key).pub, now), nil
}

// storedKey returns the ledger's seal key, writing a new random one when
// the ledger holds none.
func storedKey(ctx context.Context, l Ledger, now time.Time) ([]byte, error) {
	key := make([]byte, sealKeyBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	rec := record.Message{
		HistoryKey: sealKeyPartition, MessageID: sealKeyMessageID, State: record.Seen, Route: "homing",
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
	return newSealer(key).seal(m, body, queueName(queueURL))
}

// signed is what a seal covers: m (its Seal left out), body's digest and
// the queue's name.
func (m Metadata) signed(body, queue string) []byte {
	m.Seal = ""
	// The times as they read back: the seal of what was written and of
	// what is read are made of the same bytes.
	m.FirstDeadLetteredAt = m.FirstDeadLetteredAt.UTC()
	m.LastReplayAt = m.LastReplayAt.UTC()
	m.ParkedAt = m.ParkedAt.UTC()
	m.ResetAt = m.ResetAt.UTC()
	doc, _ := json.Marshal(m) // a struct of strings, ints and times always encodes
	sum := sha256.Sum256([]byte(body))
	return slices.Concat(doc, []byte{0}, sum[:], []byte{0}, []byte(queue))
}

// sealer seals and verifies metadata: with the seal key (the replay
// function) both, with its public key alone (an operator) only verifies;
// the zero sealer verifies nothing.
type sealer struct {
	priv ed25519.PrivateKey // nil: seals nothing
	pub  ed25519.PublicKey
}

func newSealer(key []byte) sealer {
	if len(key) != sealKeyBytes {
		return sealer{}
	}
	priv := ed25519.NewKeyFromSeed(key)
	return sealer{priv: priv, pub: priv.Public().(ed25519.PublicKey)}
}

// seal returns m with its seal for a message of body sent to queue; m
// unsealed when s cannot seal.
func (s sealer) seal(m Metadata, body, queue string) Metadata {
	m.Seal = ""
	if s.priv != nil {
		m.Seal = hex.EncodeToString(ed25519.Sign(s.priv, m.signed(body, queue)))
	}
	return m
}

// verifies reports whether m is metadata the engine sealed for a message of
// body sent to queue, within the bounds of what it writes.
func (s sealer) verifies(m Metadata, body, queue string) bool {
	if !m.readable() {
		return false
	}
	if len(m.Seal) != sealLen || s.pub == nil {
		return false
	}
	sig, err := hex.DecodeString(m.Seal)
	return err == nil && ed25519.Verify(s.pub, m.signed(body, queue), sig)
}

// readSealer reads the engine's sealer from l: the seal key's, else (when
// the seal key is denied, as it is to an operator) the public key's, with
// note saying what the run cannot do; an error when neither can be read.
func readSealer(ctx context.Context, l Ledger, now time.Time) (s sealer, note string, err error) {
	key, note, err := sealKey(ctx, l, now)
	if err == nil {
		return newSealer(key), note, nil
	}
	if !denied(err) {
		return sealer{}, "", err
	}
	pub, perr := readPublicKey(ctx, l)
	if perr != nil {
		return sealer{}, "", errors.Join(err, perr)
	}
	return sealer{pub: pub}, noSealNote, nil
}

// noSealNote is the seal gate's detail in the summary of a run that could
// read the public key but not the seal key.
const noSealNote = "this run cannot seal: the seal key is the replay function's; replays restart their budget"

// denied reports whether err is an access denial (the seal key's, under
// the construct's grants).
func denied(err error) bool {
	var coded interface{ ErrorCode() string }
	return errors.As(err, &coded) && coded.ErrorCode() == "AccessDeniedException"
}

// publishKey writes pub to the ledger when it holds none, and returns what
// operators should know when it holds another.
func publishKey(ctx context.Context, l Ledger, pub ed25519.PublicKey, now time.Time) string {
	rec := record.Message{
		HistoryKey: settings.SealPublicKeyPartition, MessageID: sealKeyMessageID, State: record.Seen, Route: "homing",
		OriginalMessageID: hex.EncodeToString(pub), FirstSeenAt: now, At: now, ExpiresAt: now.Add(sealKeyLifetime),
	}
	cur, ok, err := l.Mark(ctx, rec)
	switch {
	case err != nil:
		return fmt.Sprintf("write the public seal key to the ledger (next run retries): %v; operators' tools cannot verify metadata meanwhile", err)
	case !ok && cur.OriginalMessageID != rec.OriginalMessageID:
		return fmt.Sprintf("the ledger's public seal key (%s) is not the seal key's: operators' tools cannot verify metadata; delete that item and the next run writes it again", settings.SealPublicKeyPartition)
	}
	return ""
}

// readPublicKey reads the public seal key from l.
func readPublicKey(ctx context.Context, l Ledger) (ed25519.PublicKey, error) {
	recs, err := l.History(ctx, settings.SealPublicKeyPartition)
	if err != nil {
		return nil, fmt.Errorf("read the public seal key from the ledger: %w", err)
	}
	i := slices.IndexFunc(recs, func(r record.Message) bool { return r.MessageID == sealKeyMessageID })
	if i < 0 {
		return nil, errors.New("the ledger holds no public seal key: the replay function writes it on its first run")
	}
	pub, err := hex.DecodeString(recs[i].OriginalMessageID)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("read the public seal key from the ledger: the stored key is not 32 bytes of hex")
	}
	return pub, nil
}

// readable reports whether m is within the bounds of what the engine
// writes, sealed or not: [Read] refuses metadata that is not, so that what
// it returns [Attributes] writes again.
func (m Metadata) readable() bool {
	return m.OriginalMessageID != "" && len(m.OriginalMessageID) <= maxMetaID &&
		m.ReplayCount >= 0 && m.ReplayCount <= maxMetaCount && m.Refunds >= 0 && m.Refunds <= maxMetaCount &&
		len(m.Route) <= maxMetaString && len(m.RunID) <= maxMetaString && len(m.Reason) <= maxMetaString &&
		len(m.Corrupt) <= maxMetaString && len(m.Seal) <= sealLen
}

// queueName is the last path segment of a queue URL: the queue's name,
// whichever form of URL (an emulator's, a region's) names it.
func queueName(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// trust is what a run needs to tell our metadata from a producer's: the
// sealer (the zero one when no key could be read: then no metadata is ours)
// and the route's queues.
type trust struct {
	sealer  sealer
	source  string // the route's source queue name: a replay came through it
	reads   string // the name of the queue the route reads: a parked message is there
	invalid bool   // the route reads the lane's invalid queue (Route.Invalid)
}

func newTrust(s sealer, rt Route) trust {
	return trust{sealer: s, source: queueName(rt.SourceURL), reads: queueName(rt.DLQURL), invalid: rt.Invalid}
}

// ours reports whether meta, read from a message of body, is ours.
func (t trust) ours(meta Metadata, body string) bool {
	queue := t.source
	if meta.Reason != "" {
		queue = t.reads
	}
	return t.sealer.verifies(meta, body, queue)
}

// Verifier tells, as the engine does, the metadata the engine sealed from a
// producer's copy on the messages of one route. The zero Verifier verifies
// nothing. It is safe for concurrent use.
type Verifier struct{ t trust }

// NewVerifier returns the Verifier of rt's messages under the public seal
// key in l, which operators may read. When the key cannot be read it
// returns an error and a Verifier that verifies no metadata but still
// tells rt's reasons (the consumer's verdict on the invalid queue); so
// does a nil l.
func NewVerifier(ctx context.Context, l Ledger, rt Route) (Verifier, error) {
	if l == nil {
		return Verifier{t: newTrust(sealer{}, rt)}, errors.New("no ledger to read the public seal key from")
	}
	pub, err := readPublicKey(ctx, l)
	if err != nil {
		return Verifier{t: newTrust(sealer{}, rt)}, err
	}
	return Verifier{t: newTrust(sealer{pub: pub}, rt)}, nil
}

// Check reports whether the metadata of m ([Read]) is the engine's: only
// then are its replay count and reason history. reason is what a [Filter]
// matches m by: the parking reason of verified metadata, the consumer's
// verdict on a route over the invalid queue, else [ReasonDeadLettered].
func (v Verifier) Check(m types.Message) (verified bool, reason string) {
	msg := readMessage(m, time.Time{}, v.t, payload.Key{})
	return msg.hasMeta, msg.reason
}
