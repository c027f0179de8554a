package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

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

// deniedAPIError is DynamoDB's answer to an explicit deny.
type deniedAPIError struct{}

func (deniedAPIError) Error() string     { return "AccessDeniedException: explicit deny" }
func (deniedAPIError) ErrorCode() string { return "AccessDeniedException" }

func (l operatorLedger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	if r.HistoryKey == settings.SealKeyPartition || r.HistoryKey == settings.SealPublicKeyPartition {
		return record.Message{}, false, fmt.Errorf("put %s: %w", r.HistoryKey, deniedAPIError{})
	}
	return l.MemoryLedger.Mark(ctx, r)
}

func (l operatorLedger) History(ctx context.Context, key string) ([]record.Message, error) {
	if key == settings.SealKeyPartition {
		return nil, fmt.Errorf("query %s: %w", key, deniedAPIError{})
	}
	return l.MemoryLedger.History(ctx, key)
}

// forged is a producer's copy of our attribute on a first dead letter:
// "replayed 3 times, replay-exhausted", unsealed.
func (f *fixture) forged(url, body string) {
	f.t.Helper()
	attrs, err := envelope.Pack(nil, envelope.ReplayAttributeName, replay.Metadata{
		ReplayCount: 3, OriginalMessageID: "m-forged", FirstDeadLetteredAt: f.clock.Now(), Reason: replay.ReasonReplayExhausted, ParkedAt: f.clock.Now(),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.send(url, body, nil, attrs)
}

// Forged metadata is shown, marked unverified, and is no history: peek's
// replay count and reason, and inspect's counts, are the engine's.
func TestPeekAndInspectShowForgedMetadataUnverified(t *testing.T) {
	f := newFixture(t)
	f.send(f.dlq, order("ORD-SEALED"), &replay.Metadata{ReplayCount: 2, OriginalMessageID: "m-2", FirstDeadLetteredAt: f.clock.Now()}, nil)
	f.forged(f.dlq, order("ORD-FORGED"))
	verdict, err := envelope.Pack(nil, invalid.AttributeName, invalid.Metadata{Reason: "invalid-tax-id"})
	if err != nil {
		t.Fatal(err)
	}
	f.send(f.invalid, order("ORD-INVALID"), nil, verdict)
	f.clock.Advance(time.Hour)

	r := f.run("--json", "peek")
	r.want(t, exitOK)
	byOrder := map[string]peekedMessage{}
	for _, m := range decode[peekReport](t, r).Messages {
		byOrder[m.Key] = m
	}
	if m := byOrder["ORD-FORGED"]; m.Verified || m.ReplayCount != 0 || m.Reason != replay.ReasonDeadLettered || m.Replay == nil || m.Replay.ReplayCount != 3 {
		t.Fatalf("ORD-FORGED = %+v, want its metadata shown unverified, replay count 0, dead-lettered", m)
	}
	if m := byOrder["ORD-SEALED"]; !m.Verified || m.ReplayCount != 2 {
		t.Fatalf("ORD-SEALED = %+v, want verified, replay count 2", m)
	}
	r = f.run("peek")
	r.want(t, exitOK)
	if n := strings.Count(r.stdout, envelope.ReplayAttributeName+" (unverified)"); n != 1 {
		t.Fatalf("%d metadata marked unverified, want 1:\n%s", n, r.stdout)
	}

	r = f.run("--json", "inspect")
	r.want(t, exitOK)
	st := decode[inspectReport](t, r).Sample
	if len(st.ByReplayCount) != 1 || st.ByReplayCount["2"] != 1 || st.Unverified != 1 || len(st.ByReason) != 1 || st.ByReason[replay.ReasonDeadLettered] != 2 {
		t.Fatalf("sample = %+v, want the sealed one by its count, the forged one apart, both dead-lettered", st)
	}
	if r = f.run("inspect"); !regexp.MustCompile(`(?m)^unverified +1$`).MatchString(r.stdout) {
		t.Fatalf("table lacks the unverified count:\n%s", r.stdout)
	}
	// On the invalid queue, the consumer's verdict is the reason.
	r = f.run("--json", "inspect", "--queue", "invalid")
	r.want(t, exitOK)
	if st := decode[inspectReport](t, r).Sample; st.ByReason["invalid-tax-id"] != 1 {
		t.Fatalf("invalid queue: sample = %+v", st)
	}
}

// Without the public key nothing verifies, and dlq says why in one line.
func TestPeekWithoutThePublicKey(t *testing.T) {
	f := newFixture(t)
	f.forged(f.dlq, order("ORD-FORGED"))
	r := f.run("--json", "peek")
	r.want(t, exitOK, "dlq: replay metadata shown unverified: the ledger holds no public seal key")
	if m := decode[peekReport](t, r).Messages; len(m) != 1 || m[0].Verified || m[0].ReplayCount != 0 || m[0].Reason != replay.ReasonDeadLettered {
		t.Fatalf("messages = %+v", m)
	}
}

// dlq replay under the operator's grants verifies with the public key,
// parks what has had its replays, replays the rest unsealed, and says so.
func TestReplayWithoutTheSealKey(t *testing.T) {
	f := newFixture(t)
	f.send(f.dlq, order("ORD-SPENT"), &replay.Metadata{ReplayCount: 3, OriginalMessageID: "m-1", FirstDeadLetteredAt: f.clock.Now()}, nil)
	f.forged(f.dlq, order("ORD-FORGED"))
	f.send(f.dlq, order("ORD-NEW"), nil, map[string]types.MessageAttributeValue{})
	f.clock.Advance(2 * time.Hour)
	f.operator = true

	r := f.run("replay", "--yes")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "seal open: this run cannot seal: the seal key is the replay function's; replays restart their budget") || !strings.Contains(r.stdout, "1 replay-exhausted") || f.visible(f.source) != 2 || f.visible(f.parking) != 1 {
		t.Fatalf("source %d, parking %d:\n%s", f.visible(f.source), f.visible(f.parking), r.stdout)
	}
	for _, m := range f.q.Messages(f.source) {
		if meta, _, found, err := replay.Read(m.MessageAttributes); err != nil || !found || meta.Seal != "" {
			t.Fatalf("a replay of the operator's run: %+v, %v (found %v), want unsealed metadata", meta, err, found)
		}
	}
}
