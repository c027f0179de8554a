package replay

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/payload"
)

// The plan is a pure function of the batch and the run's state: tested by
// table, without a queue or a ledger.
func TestPlan(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	old := now.Add(-2 * time.Hour)         // dead-lettered long enough ago to be due
	nearExpiry := now.Add(-90 * time.Hour) // a 4-day retention ends within the 24 h rescue window
	type in struct {
		body    string
		group   string
		sentAt  time.Time
		meta    *Metadata
		wantOut Outcome
		reason  string
	}
	msg := func(id string, m in) types.Message {
		attrs := map[string]types.MessageAttributeValue{}
		if m.meta != nil {
			body := m.body
			if body == "" {
				body = `{"orderId":"ORD-` + id + `"}`
			}
			sealed := m.meta.Sealed(testKey, body, "s") // a replay comes through the source
			var err error
			if attrs, err = envelope.Pack(nil, attributeName, sealed); err != nil {
				t.Fatal(err)
			}
		}
		sys := map[string]string{"SentTimestamp": strconv.FormatInt(m.sentAt.UnixMilli(), 10)}
		if m.group != "" {
			sys["MessageGroupId"] = m.group
		}
		body := m.body
		if body == "" {
			body = `{"orderId":"ORD-` + id + `"}`
		}
		return types.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("rh-" + id), Body: aws.String(body), MessageAttributes: attrs, Attributes: sys}
	}
	base := func() planner {
		return planner{
			policy: Policy{}.withDefaults(), route: Route{Name: "orders", DLQURL: "d", SourceURL: "s", ParkingURL: "p"}, runID: "run-1",
			now: now, receivedAt: now, retention: 96 * time.Hour, sourceMax: envelope.MaxMessageBytes, movesLeft: 100, replayLeft: -1, key: newSealer(testKey),
		}
	}
	fifo := Route{Name: "orders", DLQURL: "d.fifo", SourceURL: "s.fifo", ParkingURL: "p.fifo"}
	tests := []struct {
		name        string
		plan        func(*planner)
		msgs        []in
		wantMoves   int
		wantReplays int
	}{
		{"due: replayed", nil, []in{{sentAt: old, wantOut: OutcomeReplayed}}, 1, 1},
		{"just dead-lettered: delayed", nil, []in{{sentAt: now, wantOut: OutcomeDelayed}}, 0, 0},
		{"exhausted: parked", nil, []in{{sentAt: old, meta: &Metadata{ReplayCount: 3, OriginalMessageID: "o"}, wantOut: OutcomeParked, reason: ReasonReplayExhausted}}, 1, 0},
		{"not due and about to expire: rescued", nil, []in{{sentAt: nearExpiry, meta: &Metadata{ReplayCount: 1, LastReplayAt: now, OriginalMessageID: "o"}, wantOut: OutcomeParked, reason: ReasonExpiryRescue}}, 1, 0},
		{"filtered out: skipped", func(p *planner) { p.filter = Filter{Keys: []string{"ORD-b"}} },
			[]in{{sentAt: old, wantOut: OutcomeSkipped}, {sentAt: old, wantOut: OutcomeReplayed}}, 1, 1},
		{"a closed gate defers all but the rescue", func(p *planner) { p.gated = true; p.replayLeft = 0 },
			[]in{{sentAt: old, wantOut: OutcomeDeferred}, {sentAt: nearExpiry, wantOut: OutcomeParked, reason: ReasonExpiryRescue}}, 1, 0},
		{"the cap defers the rest", func(p *planner) { p.movesLeft = 1 },
			[]in{{sentAt: old, wantOut: OutcomeReplayed}, {sentAt: old, wantOut: OutcomeDeferred}}, 1, 1},
		{"the canary limit parks what is about to expire", func(p *planner) { p.replayLeft = 1 },
			[]in{{sentAt: old, wantOut: OutcomeReplayed}, {sentAt: old, wantOut: OutcomeDeferred}, {sentAt: nearExpiry, wantOut: OutcomeParked, reason: ReasonExpiryRescue}}, 2, 1},
		{"a replay given back by the breaker", func(p *planner) { p.breaker = &Breaker{FailedRuns: []string{"bad"}} },
			[]in{{sentAt: old, meta: &Metadata{ReplayCount: 3, LastReplayAt: old, OriginalMessageID: "o", RunID: "bad"}, wantOut: OutcomeReplayed}}, 1, 0},
		// A known failure (replayed before, not given back) takes no slot
		// of the canary's: the slots go to the others.
		{"the canary limit: a known failure takes no slot", func(p *planner) { p.replayLeft = 1 },
			[]in{{sentAt: old, meta: &Metadata{ReplayCount: 1, LastReplayAt: old, OriginalMessageID: "o", RunID: "r"}, wantOut: OutcomeReplayed},
				{sentAt: old, wantOut: OutcomeReplayed}, {sentAt: old, wantOut: OutcomeDeferred}}, 2, 1},
		{"the canary limit: a replay given back is no known failure", func(p *planner) { p.replayLeft = 1; p.breaker = &Breaker{FailedRuns: []string{"bad"}} },
			[]in{{sentAt: old, meta: &Metadata{ReplayCount: 1, LastReplayAt: old, OriginalMessageID: "o", RunID: "bad"}, wantOut: OutcomeReplayed},
				{sentAt: old, wantOut: OutcomeDeferred}}, 1, 1},
		{"a probe's limit counts known failures", func(p *planner) { p.replayLeft = 1; p.probe = true },
			[]in{{sentAt: old, meta: &Metadata{ReplayCount: 1, LastReplayAt: old, OriginalMessageID: "o", RunID: "r"}, wantOut: OutcomeReplayed},
				{sentAt: old, wantOut: OutcomeDeferred}}, 1, 1},
		{"too large for the source with our metadata", func(p *planner) { p.sourceMax = 64 },
			[]in{{sentAt: old, body: `{"orderId":"ORD-big","pad":"` + fmt.Sprint(make([]byte, 8)) + `"}`, wantOut: OutcomeParked, reason: ReasonTooLarge}}, 1, 0},
		{"FIFO: a group stops behind a message that stays", func(p *planner) { p.route = fifo },
			[]in{{sentAt: old, group: "g1", wantOut: OutcomeReplayed}, {sentAt: now, group: "g1", wantOut: OutcomeDelayed}, {sentAt: old, group: "g1", wantOut: OutcomeBlocked}, {sentAt: old, group: "g2", wantOut: OutcomeReplayed}}, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := base()
			if tt.plan != nil {
				tt.plan(&pl)
			}
			key, err := payload.NewKey("orderId")
			if err != nil {
				t.Fatal(err)
			}
			items := make([]*item, len(tt.msgs))
			for i, m := range tt.msgs {
				items[i] = &item{msg: readMessage(msg(string(rune('a'+i)), m), now, newTrust(newSealer(testKey), pl.route), key)}
			}
			moves, replays := pl.plan(items)
			for i, it := range items {
				if it.outcome != tt.msgs[i].wantOut || it.reason != tt.msgs[i].reason && it.outcome == OutcomeParked {
					t.Errorf("message %d: %s %q, want %s %q", i, it.outcome, it.reason, tt.msgs[i].wantOut, tt.msgs[i].reason)
				}
				if it.outcome.moves() && (it.entry.MessageBody == nil || it.dest == "") {
					t.Errorf("message %d moves without a message to send", i)
				}
			}
			if moves != tt.wantMoves || replays != tt.wantReplays {
				t.Errorf("reserved %d moves and %d replays, want %d and %d", moves, replays, tt.wantMoves, tt.wantReplays)
			}
		})
	}
}

// testKey is the seal key of the package's internal tests.
var testKey = []byte("0123456789abcdef0123456789abcdef")
