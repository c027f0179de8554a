package replay_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// operatorLedger is the ledger as the construct's grants let an operator
// use it: every item action on the seal key's partition is denied.
type operatorLedger struct{ *replaytest.MemoryLedger }

var errDenied = &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "explicit deny in an identity-based policy"}

func (l operatorLedger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	if r.HistoryKey == settings.SealKeyPartition || r.HistoryKey == settings.SealPublicKeyPartition {
		return record.Message{}, false, fmt.Errorf("put %s: %w", r.HistoryKey, errDenied)
	}
	return l.MemoryLedger.Mark(ctx, r)
}

func (l operatorLedger) History(ctx context.Context, key string) ([]record.Message, error) {
	if key == settings.SealKeyPartition {
		return nil, fmt.Errorf("query %s: %w", key, errDenied)
	}
	return l.MemoryLedger.History(ctx, key)
}

// drain receives and deletes every visible message of url.
func (h *harness) drain(url string) {
	h.t.Helper()
	ctx := context.Background()
	for {
		out, err := h.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			h.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return
		}
		for _, m := range out.Messages {
			if _, err := h.q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("m"), ReceiptHandle: m.ReceiptHandle}}}); err != nil {
				h.t.Fatal(err)
			}
		}
	}
}

// sealGate is the run's seal gate; ok is false when the summary has none.
func sealGate(s replay.Summary) (replay.Gate, bool) {
	i := slices.IndexFunc(s.Gates, func(g replay.Gate) bool { return g.Name == replay.GateSeal })
	if i < 0 {
		return replay.Gate{}, false
	}
	return s.Gates[i], true
}

// An engine denied the seal key (an operator's, under the construct's
// grants) trusts the replay function's seals, so it parks what has had
// its replays; but what it sends carries no seal the function accepts: a
// replay it sent comes back as a new dead letter, whatever its count said.
func TestAnOperatorEngineVerifiesButCannotSeal(t *testing.T) {
	h := newHarness(t, false, nil)
	now := h.clock.Now()
	h.deadLetter(h.route, msg{body: order("ORD-SPENT"), meta: &replay.Metadata{ReplayCount: 3, OriginalMessageID: "o-spent", FirstDeadLetteredAt: now, LastReplayAt: now}})
	h.deadLetter(h.route, msg{body: order("ORD-TWICE"), meta: &replay.Metadata{ReplayCount: 2, OriginalMessageID: "o-twice", FirstDeadLetteredAt: now, LastReplayAt: now}})
	h.clock.Advance(24 * time.Hour)

	op := replay.New(h.q, operatorLedger{h.ledger}, h.options())
	s := h.run(op, replay.Request{})
	// Both are replays that came back (their metadata verifies): no new dead letter.
	checkCounts(t, s.Total, counts{Examined: 2, DeadLettered: 0, Replayed: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}})
	if g, ok := sealGate(s); !ok || g.Decision != replay.GateOpen || !strings.Contains(g.Detail, "this run cannot seal") {
		t.Fatalf("seal gate = %+v (found %v), want open, saying the run cannot seal", g, ok)
	}
	parked := h.stored(h.route.ParkingURL)
	if len(parked) != 1 || parked[0].meta.Reason != replay.ReasonReplayExhausted || parked[0].meta.Seal != "" {
		t.Fatalf("parking queue = %+v, want ORD-SPENT parked with unsealed metadata", parked)
	}
	sent := h.stored(h.route.SourceURL)
	if len(sent) != 1 || sent[0].meta.ReplayCount != 3 || sent[0].meta.Seal != "" {
		t.Fatalf("source = %+v, want ORD-TWICE sent with its third replay, unsealed", sent)
	}
	for _, m := range []stored{parked[0], sent[0]} {
		if v, err := replay.NewVerifier(context.Background(), h.ledger, h.route); err != nil {
			t.Fatal(err)
		} else if ok, _ := v.Check(m.raw); ok {
			t.Fatalf("metadata an operator's engine sent verifies: %+v", m.meta)
		}
	}

	// The replay fails and the broker moves it to the DLQ: the function's
	// engine does not trust its count of 3 (it would park it), it replays
	// it as a first dead letter.
	h.drain(h.route.SourceURL)
	h.deadLetter(h.route, msg{body: sent[0].body, attrs: sent[0].raw.MessageAttributes})
	h.clock.Advance(24 * time.Hour)
	s = h.run(h.engine(), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 1, Replayed: 1})
	if _, ok := sealGate(s); ok {
		t.Fatalf("the function's run has a seal gate: %+v", s.Gates)
	}
	if got := h.stored(h.route.SourceURL); len(got) != 1 || got[0].meta.ReplayCount != 1 || len(got[0].meta.Seal) != 128 {
		t.Fatalf("source = %+v, want ORD-TWICE replayed once, sealed", got)
	}
}

// An engine that can read neither key closes the seal gate, as before.
func TestAnOperatorEngineWithoutThePublicKeyReplaysNothing(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("N", 1)
	h.clock.Advance(24 * time.Hour)
	s := h.run(replay.New(h.q, operatorLedger{h.ledger}, h.options()), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, Deferred: 1})
	if g, ok := sealGate(s); !ok || g.Decision != replay.GateClosed || !strings.Contains(g.Detail, "no public seal key") {
		t.Fatalf("seal gate = %+v (found %v), want closed for want of the public key", g, ok)
	}
}

// legacySeal is the seal of m written before the signature: the
// HMAC-SHA256 under key of m's document, the body's digest and the queue.
func legacySeal(key []byte, m replay.Metadata, body, queueURL string) replay.Metadata {
	m.Seal = ""
	doc, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256([]byte(body))
	mac := hmac.New(sha256.New, key)
	mac.Write(doc)
	mac.Write([]byte{0})
	mac.Write(sum[:])
	mac.Write([]byte{0})
	mac.Write([]byte(queueURL[strings.LastIndex(queueURL, "/")+1:]))
	m.Seal = hex.EncodeToString(mac.Sum(nil))
	return m
}

// The engine seals with a signature, under a new key: the ledger's "v1"
// key, which every operator could read (issue 34), is never used again, so
// metadata sealed under it (an HMAC, or a signature from it) is no
// evidence, and a forged "replayed 3 times" is not parked.
func TestSealsAreSignaturesUnderANewKey(t *testing.T) {
	h := newHarness(t, false, nil)
	now := h.clock.Now()
	old := bytes.Repeat([]byte{7}, 32) // the key an operator read before the upgrade
	if _, _, err := h.ledger.Mark(context.Background(), record.Message{HistoryKey: settings.SealKeyPartition, MessageID: "v1", State: record.Seen,
		Route: "homing", OriginalMessageID: hex.EncodeToString(old), FirstSeenAt: now, At: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	spent := replay.Metadata{ReplayCount: 3, OriginalMessageID: "o-old", FirstDeadLetteredAt: now, LastReplayAt: now}
	forge := func(id string, seal func(body string) replay.Metadata) {
		body := order(id)
		attrs, err := envelope.Pack(nil, replay.AttributeName, seal(body))
		if err != nil {
			t.Fatal(err)
		}
		h.deadLetter(h.route, msg{body: body, attrs: attrs})
	}
	forge("ORD-HMAC", func(body string) replay.Metadata { return legacySeal(old, spent, body, h.route.SourceURL) })
	forge("ORD-SIGNED", func(body string) replay.Metadata { return spent.Sealed(old, body, h.route.SourceURL) })
	h.clock.Advance(24 * time.Hour)

	s := h.run(h.engine(), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 2, DeadLettered: 2, Replayed: 2})
	if bytes.Equal(h.sealKey(), old) {
		t.Fatal("the engine signs with the key operators could read")
	}
	sent := h.stored(h.route.SourceURL)
	if len(sent) != 2 || len(sent[0].meta.Seal) != 128 {
		t.Fatalf("source = %+v, want both sealed with a signature (128 hex digits)", sent)
	}
	v, err := replay.NewVerifier(context.Background(), h.ledger, h.route)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := v.Check(sent[0].raw); !ok {
		t.Fatal("the public key does not verify the engine's seal")
	}
}

// Verifier.Check decides as the engine does: only sealed metadata, for the
// queue it must have come through, is history; a verdict is a reason on
// the invalid queue only.
func TestVerifierCheck(t *testing.T) {
	h := newHarness(t, false, nil)
	key := h.sealKey()
	now := h.clock.Now()
	body := order("ORD-V")
	replayed := replay.Metadata{ReplayCount: 2, OriginalMessageID: "o", FirstDeadLetteredAt: now, LastReplayAt: now}
	parked := replay.Metadata{ReplayCount: 3, OriginalMessageID: "o", FirstDeadLetteredAt: now, Reason: replay.ReasonReplayExhausted, ParkedAt: now}
	pack := func(name string, v any) map[string]types.MessageAttributeValue {
		attrs, err := envelope.Pack(nil, name, v)
		if err != nil {
			t.Fatal(err)
		}
		return attrs
	}
	other := make([]byte, 32) // a key that is not the lane's
	parking := replay.Route{DLQURL: h.route.ParkingURL, SourceURL: h.route.SourceURL}
	invalidQueue := replay.Route{DLQURL: "https://sqs.us-east-1.amazonaws.com/000000000000/orders-invalid", SourceURL: h.route.SourceURL, Invalid: true}
	verdict := pack(invalid.AttributeName, invalid.Metadata{Reason: "missing-tax-id"})
	for _, tt := range []struct {
		name     string
		route    replay.Route
		attrs    map[string]types.MessageAttributeValue
		verified bool
		reason   string
	}{
		{"none", h.route, nil, false, replay.ReasonDeadLettered},
		{"a replay the engine sealed", h.route, pack(replay.AttributeName, replayed.Sealed(key, body, h.route.SourceURL)), true, replay.ReasonDeadLettered},
		{"a park the engine sealed, in the parking queue", parking, pack(replay.AttributeName, parked.Sealed(key, body, h.route.ParkingURL)), true, replay.ReasonReplayExhausted},
		{"a parked message's metadata in a DLQ", h.route, pack(replay.AttributeName, parked.Sealed(key, body, h.route.ParkingURL)), false, replay.ReasonDeadLettered},
		{"a forged park: unsealed", h.route, pack(replay.AttributeName, parked), false, replay.ReasonDeadLettered},
		{"a forged park: sealed under another key", parking, pack(replay.AttributeName, parked.Sealed(other, body, h.route.ParkingURL)), false, replay.ReasonDeadLettered},
		{"a producer's verdict on a DLQ message", h.route, verdict, false, replay.ReasonDeadLettered},
		{"the consumer's verdict on the invalid queue", invalidQueue, verdict, false, "missing-tax-id"},
		{"undecodable", h.route, map[string]types.MessageAttributeValue{replay.AttributeName: {DataType: aws.String("String"), StringValue: aws.String("{")}}, false, replay.ReasonDeadLettered},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := replay.NewVerifier(context.Background(), h.ledger, tt.route)
			if err != nil {
				t.Fatal(err)
			}
			ok, reason := v.Check(types.Message{MessageId: aws.String("m-1"), Body: aws.String(body), MessageAttributes: tt.attrs})
			if ok != tt.verified || reason != tt.reason {
				t.Fatalf("Check = %v, %q; want %v, %q", ok, reason, tt.verified, tt.reason)
			}
		})
	}

	if _, err := replay.NewVerifier(context.Background(), replaytest.NewMemoryLedger(h.clock.Now), h.route); err == nil || !strings.Contains(err.Error(), "no public seal key") {
		t.Fatalf("NewVerifier on a ledger without the public key: %v", err)
	}
}
