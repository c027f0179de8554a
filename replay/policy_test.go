package replay

import (
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/record"
)

func TestPolicyDecide(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := Policy{MaxReplays: 3, BackoffBase: 5 * time.Minute, BackoffMax: 4 * time.Hour, ExpiryRescueWindow: 24 * time.Hour}
	tests := []struct {
		name   string
		facts  facts
		action Outcome
		reason string
	}{
		{"never replayed, dead-lettered long ago", facts{DeadLetteredAt: now.Add(-time.Hour), JitterKey: "a"}, OutcomeReplayed, ""},
		{"never replayed, just dead-lettered", facts{DeadLetteredAt: now.Add(-time.Nanosecond), JitterKey: "a"}, OutcomeDelayed, ""},
		{"last replay counts, not the dead-lettering", facts{ReplayCount: 2, DeadLetteredAt: now.Add(-48 * time.Hour), LastReplayAt: now.Add(-time.Second), JitterKey: "a"}, OutcomeDelayed, ""},
		{"due after the capped backoff", facts{ReplayCount: 2, LastReplayAt: now.Add(-4 * time.Hour), JitterKey: "a"}, OutcomeReplayed, ""},
		{"exhausted", facts{ReplayCount: 3, DeadLetteredAt: now.Add(-time.Hour)}, OutcomeParked, ReasonReplayExhausted},
		{"exhausted beats expiring", facts{ReplayCount: 5, ExpiresAt: now.Add(time.Hour)}, OutcomeParked, ReasonReplayExhausted},
		{"not due and expiring", facts{ReplayCount: 1, LastReplayAt: now, ExpiresAt: now.Add(23 * time.Hour), JitterKey: "a"}, OutcomeParked, ReasonExpiryRescue},
		{"not due, expiry outside the window", facts{ReplayCount: 1, LastReplayAt: now, ExpiresAt: now.Add(25 * time.Hour), JitterKey: "a"}, OutcomeDelayed, ""},
		{"just dead-lettered, reset by an operator", facts{DeadLetteredAt: now, Reset: true, JitterKey: "a"}, OutcomeReplayed, ""},
		{"reset and expiring: replayed, not parked", facts{DeadLetteredAt: now, ExpiresAt: now.Add(time.Hour), Reset: true, JitterKey: "a"}, OutcomeReplayed, ""},
		{"due and expiring: replayed", facts{ReplayCount: 1, LastReplayAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour), JitterKey: "a"}, OutcomeReplayed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.decide(tt.facts, now)
			if d.Outcome != tt.action || d.Reason != tt.reason {
				t.Fatalf("decision = %+v, want %s %s", d, tt.action, tt.reason)
			}
		})
	}
}

func TestBackoffIsFullJitterCappedAndStable(t *testing.T) {
	p := Policy{BackoffBase: time.Minute, BackoffMax: 10 * time.Minute}
	for count, ceiling := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		var lo, hi time.Duration = ceiling, 0
		for i := range 500 {
			key := string(rune('a'+i%26)) + string(rune('a'+i/26))
			b := p.Backoff(count, key)
			if b < 0 || b >= ceiling {
				t.Fatalf("Backoff(%d) = %v, want [0, %v)", count, b, ceiling)
			}
			if b != p.Backoff(count, key) {
				t.Fatal("the backoff of a key changes between calls")
			}
			lo, hi = min(lo, b), max(hi, b)
		}
		if lo > ceiling/10 || hi < ceiling*9/10 {
			t.Fatalf("count %d: jitter spans only [%v, %v] of [0, %v)", count, lo, hi, ceiling)
		}
	}
	if b := p.Backoff(1<<30, "k"); b >= 10*time.Minute {
		t.Fatalf("huge count: %v", b)
	}
	if (Policy{}).Backoff(0, "k") >= DefaultBackoffBase {
		t.Fatal("defaults not applied")
	}
}

func TestTransition(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rec := func(s record.State, run string, lease time.Time) *record.Message {
		return &record.Message{State: s, RunID: run, LeaseUntil: lease}
	}
	next := func(s record.State, run string) record.Message {
		return record.Message{State: s, RunID: run, At: t0}
	}
	tests := []struct {
		name string
		cur  *record.Message
		next record.Message
		want bool
	}{
		{"seen over nothing", nil, next(record.Seen, "a"), true},
		{"seen over seen", rec(record.Seen, "a", time.Time{}), next(record.Seen, "b"), false},
		{"intent over nothing", nil, next(record.Intent, "a"), true},
		{"intent over seen", rec(record.Seen, "a", time.Time{}), next(record.Intent, "b"), true},
		{"intent over a live intent", rec(record.Intent, "a", t0.Add(time.Second)), next(record.Intent, "b"), false},
		{"intent over a passed intent", rec(record.Intent, "a", t0), next(record.Intent, "b"), true},
		{"intent over the same run's", rec(record.Intent, "a", t0.Add(time.Hour)), next(record.Intent, "a"), true},
		{"intent over sent", rec(record.Sent, "a", time.Time{}), next(record.Intent, "b"), false},
		{"sent over own intent", rec(record.Intent, "a", t0.Add(time.Hour)), next(record.Sent, "a"), true},
		{"parked over own intent", rec(record.Intent, "a", t0.Add(time.Hour)), next(record.Parked, "a"), true},
		{"sent over another run's intent", rec(record.Intent, "b", t0.Add(time.Hour)), next(record.Sent, "a"), false},
		{"sent over seen", rec(record.Seen, "a", time.Time{}), next(record.Sent, "a"), false},
		{"sent over nothing", nil, next(record.Sent, "a"), false},
		{"parked over parked", rec(record.Parked, "a", time.Time{}), next(record.Parked, "a"), false},
		{"unknown state", nil, next("DONE", "a"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := record.Transition(tt.cur, tt.next); got != tt.want {
				t.Fatalf("Transition = %v, want %v", got, tt.want)
			}
		})
	}
}
