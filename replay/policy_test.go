package replay_test

import (
	"testing"
	"time"

	"github.com/homingdlq/homing/replay"
)

func TestPolicyDecide(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := replay.Policy{MaxReplays: 3, BackoffBase: 5 * time.Minute, BackoffMax: 4 * time.Hour, ExpiryRescueWindow: 24 * time.Hour}
	tests := []struct {
		name   string
		facts  replay.Facts
		action replay.Outcome
		reason string
	}{
		{"never replayed, dead-lettered long ago", replay.Facts{DeadLetteredAt: now.Add(-time.Hour), JitterKey: "a"}, replay.OutcomeReplayed, ""},
		{"never replayed, just dead-lettered", replay.Facts{DeadLetteredAt: now.Add(-time.Nanosecond), JitterKey: "a"}, replay.OutcomeDelayed, ""},
		{"last replay counts, not the dead-lettering", replay.Facts{ReplayCount: 2, DeadLetteredAt: now.Add(-48 * time.Hour), LastReplayAt: now.Add(-time.Second), JitterKey: "a"}, replay.OutcomeDelayed, ""},
		{"due after the capped backoff", replay.Facts{ReplayCount: 2, LastReplayAt: now.Add(-4 * time.Hour), JitterKey: "a"}, replay.OutcomeReplayed, ""},
		{"exhausted", replay.Facts{ReplayCount: 3, DeadLetteredAt: now.Add(-time.Hour)}, replay.OutcomeParked, replay.ReasonReplayExhausted},
		{"exhausted beats expiring", replay.Facts{ReplayCount: 5, ExpiresAt: now.Add(time.Hour)}, replay.OutcomeParked, replay.ReasonReplayExhausted},
		{"not due and expiring", replay.Facts{ReplayCount: 1, LastReplayAt: now, ExpiresAt: now.Add(23 * time.Hour), JitterKey: "a"}, replay.OutcomeParked, replay.ReasonExpiryRescue},
		{"not due, expiry outside the window", replay.Facts{ReplayCount: 1, LastReplayAt: now, ExpiresAt: now.Add(25 * time.Hour), JitterKey: "a"}, replay.OutcomeDelayed, ""},
		{"due and expiring: replayed", replay.Facts{ReplayCount: 1, LastReplayAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour), JitterKey: "a"}, replay.OutcomeReplayed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(tt.facts, now)
			if d.Outcome != tt.action || d.Reason != tt.reason {
				t.Fatalf("decision = %+v, want %s %s", d, tt.action, tt.reason)
			}
		})
	}
}

func TestBackoffIsFullJitterCappedAndStable(t *testing.T) {
	p := replay.Policy{BackoffBase: time.Minute, BackoffMax: 10 * time.Minute}
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
	if (replay.Policy{}).Backoff(0, "k") >= replay.DefaultBackoffBase {
		t.Fatal("defaults not applied")
	}
}

func TestTransition(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rec := func(s replay.State, run string, lease time.Time) *replay.MessageRecord {
		return &replay.MessageRecord{State: s, RunID: run, LeaseUntil: lease}
	}
	next := func(s replay.State, run string) replay.MessageRecord {
		return replay.MessageRecord{State: s, RunID: run, At: t0}
	}
	tests := []struct {
		name string
		cur  *replay.MessageRecord
		next replay.MessageRecord
		want bool
	}{
		{"seen over nothing", nil, next(replay.Seen, "a"), true},
		{"seen over seen", rec(replay.Seen, "a", time.Time{}), next(replay.Seen, "b"), false},
		{"intent over nothing", nil, next(replay.Intent, "a"), true},
		{"intent over seen", rec(replay.Seen, "a", time.Time{}), next(replay.Intent, "b"), true},
		{"intent over a live intent", rec(replay.Intent, "a", t0.Add(time.Second)), next(replay.Intent, "b"), false},
		{"intent over a passed intent", rec(replay.Intent, "a", t0), next(replay.Intent, "b"), true},
		{"intent over the same run's", rec(replay.Intent, "a", t0.Add(time.Hour)), next(replay.Intent, "a"), true},
		{"intent over sent", rec(replay.Sent, "a", time.Time{}), next(replay.Intent, "b"), false},
		{"sent over own intent", rec(replay.Intent, "a", t0.Add(time.Hour)), next(replay.Sent, "a"), true},
		{"parked over own intent", rec(replay.Intent, "a", t0.Add(time.Hour)), next(replay.Parked, "a"), true},
		{"sent over another run's intent", rec(replay.Intent, "b", t0.Add(time.Hour)), next(replay.Sent, "a"), false},
		{"sent over seen", rec(replay.Seen, "a", time.Time{}), next(replay.Sent, "a"), false},
		{"sent over nothing", nil, next(replay.Sent, "a"), false},
		{"parked over parked", rec(replay.Parked, "a", time.Time{}), next(replay.Parked, "a"), false},
		{"unknown state", nil, next("DONE", "a"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := replay.Transition(tt.cur, tt.next); got != tt.want {
				t.Fatalf("Transition = %v, want %v", got, tt.want)
			}
		})
	}
}
