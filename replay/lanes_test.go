package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// Lanes that are not the sample's keep the storm protection (issue 30):
// long keys, a route with records but no completions reader, and a run
// that comes late after a probe.

// longKey is a business key of a lane keyed by ARNs: 136 bytes and more,
// past the ledger's 128-byte bound.
func longKey(prefix string, i int) string {
	return fmt.Sprintf("arn:aws:states:us-east-1:123456789012:execution:%s:%s-%04d", strings.Repeat("shipment-flow-", 6), prefix, i)
}

// lyingHealth are the options of a lane in an outage its health probe does
// not see: the probe says up; done reads the completions (nil: none, the
// DLQ signal); a lane without records fails the test if they are read.
func lyingHealth(t *testing.T, records bool, done replay.Completions) func(*replay.Options) {
	return func(o *replay.Options) {
		o.Health = func(context.Context) error { return nil }
		o.Completions = done
		if !records {
			o.Completions = untouchable{t}
		}
	}
}

// outage runs the lane every 15 minutes for three hours while every replay
// fails and new dead letters keep arriving (keys from key), and returns
// whether the breaker opened, how many probes went out and how many
// replays went into the outage; it fails the test if a good order is
// parked as exhausted.
func outage(t *testing.T, h *harness, opts func(*replay.Options), key func(prefix string, i int) string) (opened bool, probes, sent int) {
	t.Helper()
	done := setCompletions{}
	arrive := func(prefix string, n int) {
		for i := range n {
			h.deadLetter(h.route, msg{body: order(key(prefix, i))})
		}
	}
	arrive("O0", 20)
	for run := range 12 {
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		sent += s.Total.Replayed
		if rs := s.Routes[0]; rs.Breaker != nil && rs.Breaker.Open {
			opened = true
		}
		if s.Routes[0].Probe {
			probes++
		}
		if n := s.Total.Parked[replay.ReasonReplayExhausted]; n != 0 {
			t.Fatalf("run %d: parked %d good orders as exhausted during the outage", run, n)
		}
		h.consume(done, func(string) bool { return false })
		arrive(fmt.Sprintf("O%d", run+1), 10)
	}
	return opened, probes, sent
}

// A lane keyed by ARNs (136-byte keys, consumer writing records) through an
// outage the health probe does not see: the canary and the breaker judge
// its keys as any others (before, keys over 128 bytes were dropped from
// the run's sample: the breaker never opened and good orders were parked
// replay-exhausted).
func TestLongKeysKeepTheStormProtection(t *testing.T) {
	if n := len(longKey("O0", 0)); n <= replay.MaxKeyID {
		t.Fatalf("the test's keys are %d bytes: not long", n)
	}
	h := newHarness(t, false, nil)
	done := setCompletions{}
	opened, probes, sent := outage(t, h, func(o *replay.Options) {
		o.Health = func(context.Context) error { return nil }
		o.Completions = done
	}, longKey)
	if bound := 20 + 10 + 10 + replay.DefaultCanaryLimit*probes; !opened || sent > bound {
		t.Fatalf("opened %v, %d probes, %d replays sent into the outage (bound %d): long keys lost the protection", opened, probes, sent, bound)
	}
}

// A dead letter whose long key the consumer completed with the same payload
// is removed as applied, not replayed; an operator's filter takes the long
// key.
func TestALongKeyAppliedIsRemovedAndFilterable(t *testing.T) {
	t.Run("removed", func(t *testing.T) {
		h := newHarness(t, false, nil)
		applied := longKey("DONE", 1)
		h.deadLetter(h.route, msg{body: order(applied)})
		h.clock.Advance(due)
		s := h.run(h.engine(func(o *replay.Options) { o.Completions = hashCompletions{applied: sumOf(t, h.route, order(applied))} }), replay.Request{})
		if s.Total.Applied != 1 || s.Total.Replayed != 0 {
			t.Fatalf("counts %+v: want the applied long key removed, not replayed", countsOf(s.Total))
		}
	})
	t.Run("filtered", func(t *testing.T) {
		h := newHarness(t, false, nil)
		one, other := longKey("TODO", 1), longKey("TODO", 2)
		h.deadLetter(h.route, msg{body: order(one)})
		h.deadLetter(h.route, msg{body: order(other)})
		h.clock.Advance(due)
		s := h.run(h.engine(), replay.Request{Filter: replay.Filter{Keys: []string{other}}})
		if s.Total.Replayed != 1 || s.Total.Skipped != 1 || keyOf(h.stored(h.route.SourceURL)[0].body) != other {
			t.Fatalf("counts %+v: want the filtered long key replayed, the other skipped", countsOf(s.Total))
		}
	})
}

// A route that says its consumer writes records but is given no
// completions reader falls back to the DLQ signal: it has a breaker
// (before, it had none, and replayed everything into an outage).
func TestRecordsWithoutAReaderFallBackToTheDLQSignal(t *testing.T) {
	h := newHarness(t, false, nil)
	opened, probes, sent := outage(t, h, func(o *replay.Options) {
		o.Health = func(context.Context) error { return nil }
		o.Completions = nil
	}, func(prefix string, i int) string { return fmt.Sprintf("ORD-%s-%03d", prefix, i) })
	if bound := 20 + 10 + 10 + replay.DefaultCanaryLimit*probes; !opened || sent > bound {
		t.Fatalf("opened %v, %d probes, %d replays sent into the outage (bound %d): no breaker", opened, probes, sent, bound)
	}
}

// On the DLQ signal, a run that comes late after a probe (a cold start, a
// missed tick, a schedule paused for two hours) has no earlier pass's count
// of the probe's returns: it holds replays, counts them back itself, and
// keeps the breaker open (before, it found no returns, closed the breaker
// blind and replayed the DLQ into the outage).
func TestALateRunJudgesTheProbeByItsOwnPass(t *testing.T) {
	for _, records := range []bool{false, true} {
		t.Run(fmt.Sprintf("records=%v", records), func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.route.Records = records
			done := setCompletions{}
			opts := lyingHealth(t, records, nil)
			for i := range 30 {
				h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-L-%03d", i))})
			}
			probed := false
			for run := 0; run < 40 && !probed; run++ {
				h.clock.Advance(15 * time.Minute)
				s := h.run(h.engine(opts), replay.Request{})
				probed = s.Routes[0].Probe
				h.consume(done, func(string) bool { return false })
			}
			if !probed {
				t.Fatal("no probe in 10 hours of outage: the test does not reach its point")
			}
			h.clock.Advance(2 * time.Hour) // the schedule was paused
			s := h.run(h.engine(opts), replay.Request{})
			rs := s.Routes[0]
			if s.Total.Replayed != 0 || rs.Breaker == nil || !rs.Breaker.Open {
				t.Fatalf("late run: replayed %d, breaker %+v, gates %+v: want the probe judged failing by this pass, nothing replayed", s.Total.Replayed, rs.Breaker, rs.Gates)
			}
			h.clock.Advance(15 * time.Minute)
			next := h.run(h.engine(opts), replay.Request{})
			if n := next.Total.Replayed; n > replay.DefaultCanaryLimit {
				t.Fatalf("the run after: replayed %d into the outage, want at most a probe's %d", n, replay.DefaultCanaryLimit)
			}
		})
	}
}

// On the DLQ signal, a pass that looks at the DLQ before a probe's replays
// could come back (sooner than the breaker's ReturnAfter after the probe)
// is no evidence that they did not: the run at the probe's time judges by
// its own pass and keeps the breaker open (before, it took the early pass's
// 0 back for a recovery, closed the breaker and replayed the DLQ into the
// outage).
func TestAnEarlyLookDoesNotJudgeTheProbe(t *testing.T) {
	h := newHarness(t, false, nil)
	h.route.Records = false
	opts := func(o *replay.Options) {
		o.Health = func(context.Context) error { return nil }
		o.Completions = untouchable{t}
	}
	for i := range 30 {
		h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-E-%03d", i))})
	}
	var probe *replay.Breaker
	for run := 0; run < 40 && probe == nil; run++ {
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		if rs := s.Routes[0]; rs.Probe {
			probe = rs.Breaker
			break
		}
		h.consume(setCompletions{}, func(string) bool { return false })
	}
	if probe == nil || probe.ReturnAfter <= 5*time.Minute {
		t.Fatalf("breaker %+v: the test needs a probe and a ReturnAfter above 5 minutes", probe)
	}
	h.clock.Advance(5 * time.Minute) // an operator's run: the probe's replays are still out
	if s := h.run(h.engine(opts), replay.Request{}); s.Total.Replayed != 0 {
		t.Fatalf("the run after the probe replayed %d", s.Total.Replayed)
	}
	h.consume(setCompletions{}, func(string) bool { return false }) // now they come back
	h.clock.Advance(probe.ProbeAt.Sub(h.clock.Now()))
	s := h.run(h.engine(opts), replay.Request{})
	if rs := s.Routes[0]; s.Total.Replayed != 0 || rs.Breaker == nil || !rs.Breaker.Open {
		t.Fatalf("run at the probe's time: replayed %d, breaker %+v, gates %+v: want the probe judged failing, nothing replayed", s.Total.Replayed, rs.Breaker, rs.Gates)
	}
}

// An outage that starts when the DLQ holds only known failures (dead
// letters replayed once before, which failed on their own): the gates
// still hold the lane, and none is parked as exhausted (review of issue
// 34's share rule: known failures took no canary slot and were no
// evidence, so every run replayed them all into the outage).
func TestAnOutageOfKnownFailuresIsHeld(t *testing.T) {
	for _, records := range []bool{true, false} {
		t.Run(fmt.Sprintf("records=%v", records), func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.route.Records = records
			done := setCompletions{}
			opts := lyingHealth(t, records, done)
			now := h.clock.Now()
			for i := range 30 {
				h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-K-%03d", i)),
					meta: &replay.Metadata{ReplayCount: 1, OriginalMessageID: fmt.Sprintf("k-%d", i), FirstDeadLetteredAt: now, LastReplayAt: now}})
			}
			sent, probes := 0, 0
			for run := range 24 { // six hours of 15-minute runs
				h.clock.Advance(15 * time.Minute)
				s := h.run(h.engine(opts), replay.Request{})
				sent += s.Total.Replayed
				if s.Routes[0].Probe {
					probes++
				}
				if n := s.Total.Parked[replay.ReasonReplayExhausted]; n != 0 {
					t.Fatalf("run %d: parked %d orders as exhausted during the outage (%d replays sent)", run, n, sent)
				}
				h.consume(done, func(string) bool { return false })
			}
			if bound := 30 + 30 + replay.DefaultCanaryLimit*(probes+2); sent > bound {
				t.Fatalf("%d replays sent into the outage, %d probes (bound %d)", sent, probes, bound)
			}
		})
	}
}

// A part of an invalid body too large to travel whole (invalid.Metadata
// Parts) is never replayed from the invalid queue on its own: the run
// leaves it there; a whole invalid message goes as before.
func TestAPartOfAnInvalidBodyIsNotReplayed(t *testing.T) {
	h := newHarness(t, false, nil)
	rt := h.route
	rt.Invalid = true
	verdict := func(part, parts int) map[string]types.MessageAttributeValue {
		attrs, err := envelope.Pack(nil, invalid.AttributeName, invalid.Metadata{Reason: "payload-too-large", Detail: "cut", Part: part, Parts: parts})
		if err != nil {
			t.Fatal(err)
		}
		return attrs
	}
	h.deadLetter(rt, msg{body: `{"orderId":"ORD-P`, attrs: verdict(1, 2)})
	h.deadLetter(rt, msg{body: `-1"}`, attrs: verdict(2, 2)})
	h.deadLetter(rt, msg{body: order("ORD-WHOLE"), attrs: verdict(0, 0)})
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{Routes: []replay.Route{rt}})
	if s.Total.Replayed != 1 || s.Total.Skipped != 2 || keyOf(h.stored(rt.SourceURL)[0].body) != "ORD-WHOLE" {
		t.Fatalf("counts %+v: want the whole message replayed, the two parts left", countsOf(s.Total))
	}
}
