package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/replay"
)

// The gates judge a lane by its share of failing keys, known failures left
// out (issue 34, item 5): a failing producer, a poison key or a burst of one
// kind of failure does not hold the others back beyond one schedule period;
// an outage still does.

// arrive puts n new good orders ORD-<prefix>-<i> in the DLQ, and, when
// failing > 0, one order of the failing producer (ORD-FAIL-<prefix>-<i>)
// after every n/failing good ones: the producer is one of several writing
// to a shared source queue.
func (h *harness) arrive(prefix string, n, failing int) {
	h.t.Helper()
	every := n + 1
	if failing > 0 {
		every = n / failing
	}
	for i := range n {
		if i%every == 0 && i/every < failing {
			h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-FAIL-%s-%03d", prefix, i/every))})
		}
		h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-%s-%03d", prefix, i))})
	}
}

// good reports whether an order is one that takes effect.
func good(id string) bool { return !strings.HasPrefix(id, "ORD-FAIL-") && id != "ORD-POISON" }

// goodLeft returns the good orders in the DLQ.
func (h *harness) goodLeft() int {
	h.t.Helper()
	n := 0
	for _, m := range h.stored(h.route.DLQURL) {
		if good(keyOf(m.body)) {
			n++
		}
	}
	return n
}

// (a) One producer on a shared source queue whose messages always fail:
// before, the canary limited the lane to 5 replays a run whenever a key of
// the previous run had not completed, and picked the producer's replays,
// first in the queue, so that of 100 other dead letters 5 were replayed a
// run. Now its keys are a small share of each run's, and once its messages
// have failed they are known failures that neither take the canary's
// slots nor count: every good dead letter is replayed by the first run
// after it arrived, and completes.
func TestAFailingProducerDoesNotHoldTheLane(t *testing.T) {
	h := newHarness(t, false, nil)
	done := setCompletions{}
	opts := func(o *replay.Options) { o.Completions = done }
	h.arrive("R0", 100, 10)
	for run := range 6 {
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		if left := h.goodLeft(); left != 0 {
			t.Fatalf("run %d: %d good orders left in the DLQ (replayed %d, canary %+v)", run, left, s.Total.Replayed, s.Routes[0].Gates[1])
		}
		if b := s.Routes[0].Breaker; b != nil && b.Open {
			t.Fatalf("run %d: the failing producer opened the breaker: %+v", run, b)
		}
		h.consume(done, good)
		h.arrive(fmt.Sprintf("R%d", run+1), 100, 10)
	}
	for i := range 100 {
		if k := fmt.Sprintf("ORD-R3-%03d", i); !done[k] {
			t.Fatalf("%s never completed", k)
		}
	}
}

// (b) A burst of 101 dead letters of one kind that always fail, beside
// 100 good ones: before, the refill gate closed on a DLQ grown by more
// than 100, whoever the messages belonged to, and the run replayed 0 of
// 201. New dead letters no longer close it (replays coming back do): the
// good ones are replayed by the first run after the burst, and the lane
// replays everything again within two runs of it.
func TestABurstOfOneKindDoesNotCloseTheLane(t *testing.T) {
	h := newHarness(t, false, nil)
	done := setCompletions{}
	opts := func(o *replay.Options) { o.Completions = done }
	h.arrive("Q", 10, 0) // a quiet lane, read by a run before the burst
	h.clock.Advance(15 * time.Minute)
	h.run(h.engine(opts), replay.Request{})
	h.consume(done, good)

	for i := range 101 {
		h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-FAIL-B-%03d", i))})
	}
	h.arrive("B", 100, 0)
	h.clock.Advance(15 * time.Minute)
	s := h.run(h.engine(opts), replay.Request{})
	if g := s.Routes[0].Gates[0]; g.Decision != replay.GateOpen || h.goodLeft() != 0 {
		t.Fatalf("refill gate %+v, replayed %d of 201, %d good left in the DLQ: want the 100 good ones replayed", g, s.Total.Replayed, h.goodLeft())
	}
	h.consume(done, good)
	for run := range 4 {
		h.arrive(fmt.Sprintf("N%d", run), 20, 0)
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		t.Logf("run %d after the burst: gates %+v, replayed %d, good left %d", run+1, s.Routes[0].Gates, s.Total.Replayed, h.goodLeft())
		if run >= 1 && h.goodLeft() != 0 {
			t.Fatalf("run %d after the burst: %d good orders left in the DLQ", run+1, h.goodLeft())
		}
		h.consume(done, good)
	}
}

// (c) An outage the health probe does not see, with new dead letters
// every run, on a lane with records and on one without: the gates still
// hold it (the breaker opens and probes; no storm of replays), as before.
func TestAnOutageIsStillHeld(t *testing.T) {
	for _, records := range []bool{true, false} {
		t.Run(fmt.Sprintf("records=%v", records), func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.route.Records = records
			done := setCompletions{}
			opts := lyingHealth(t, records, done)
			opened, probes, sent := outage(t, h, opts, func(prefix string, i int) string { return fmt.Sprintf("ORD-%s-%03d", prefix, i) })
			t.Logf("breaker opened %v, %d probes, %d replays sent into the outage", opened, probes, sent)
			// The first runs replay what is there before the replays come
			// back (20, then 10, then the canary's 5 on records); then
			// only probes go out.
			if bound := 20 + 10 + 10 + replay.DefaultCanaryLimit*probes; !opened || sent > bound {
				t.Fatalf("opened %v, %d probes, %d replays sent into the outage (bound %d): the gates did not hold", opened, probes, sent, bound)
			}
		})
	}
}

// (d) A single poison key replayed every run: before, each run that
// replayed it left a key that had not completed, and the canary held the
// lane at 5 replays a run until the key was parked. Now the run that
// replayed it alone limits the next one (1 of 1 failed), whose 5 others
// complete; from then on its replays are a known failure's, and the lane
// replays everything.
func TestAPoisonKeyDoesNotKeepTheLaneAtTheCanary(t *testing.T) {
	h := newHarness(t, false, nil)
	done := setCompletions{}
	opts := func(o *replay.Options) {
		o.Completions = done
		o.MaxReplays = 8
		o.BackoffBase = time.Minute
		o.BackoffMax = 10 * time.Minute // due again at every 15-minute run
	}
	h.deadLetter(h.route, msg{body: order("ORD-POISON")})
	poisoned := 0
	for run := range 8 {
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		g := s.Routes[0].Gates[1]
		for _, m := range h.stored(h.route.SourceURL) {
			if keyOf(m.body) == "ORD-POISON" {
				poisoned++
			}
		}
		switch {
		case run == 1 && g.Decision != replay.GateLimited:
			t.Fatalf("run %d: canary %+v: want limited after a run whose single key failed", run, g)
		case run >= 2 && (g.Decision != replay.GateOpen || h.goodLeft() != 0):
			t.Fatalf("run %d: canary %+v, %d good orders left: the poison key keeps the lane at the canary", run, g, h.goodLeft())
		}
		h.consume(done, good)
		h.arrive(fmt.Sprintf("D%d", run), 20, 0)
	}
	if poisoned < 6 {
		t.Fatalf("the poison key was replayed %d times in 8 runs: the test does not test what it claims", poisoned)
	}
}

// The refill gate closes when more than RefillThreshold of the DLQ's
// growth are replays that came back, almost all of their run's (the
// replays fail en masse), even where no breaker reads the replays' fate;
// the replays back wait for its verdict. When they are a share of their
// run's (one kind of failure), it stays open: they wait for the next run,
// and the new dead letters are replayed.
func TestRefillGateClosesOnReplaysBack(t *testing.T) {
	tests := []struct {
		name         string
		prevReplayed int // of which 150 are back
		want         replay.GateDecision
	}{
		{"almost all back: closed", 160, replay.GateClosed},
		{"a share back: open", 400, replay.GateOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			at := h.clock.Now().Add(-15 * time.Minute)
			prev := replay.RouteSummary{Route: "orders", Gates: []replay.Gate{{Name: replay.GateRefill, Decision: replay.GateOpen}},
				Counts: replay.Counts{Replayed: tt.prevReplayed}}
			if err := h.ledger.PutRun(context.Background(), replay.Summary{RunID: "prev", StartedAt: at, Routes: []replay.RouteSummary{prev}}, at.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			for i := range 150 {
				h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-BACK-%03d", i)),
					meta: &replay.Metadata{ReplayCount: 1, LastReplayAt: at, OriginalMessageID: fmt.Sprintf("o-%d", i), Route: "orders", RunID: "prev"}})
			}
			h.arrive("NEW", 20, 0)
			h.clock.Advance(due)
			// A completions reader that the previous run gave nothing to
			// read (no replayed keys): no breaker reads these replays' fate.
			s := h.run(h.engine(func(o *replay.Options) { o.Completions = setCompletions{} }), replay.Request{})
			rs := s.Routes[0]
			g := rs.Gates[0]
			if g.Decision != tt.want {
				t.Fatalf("refill gate %+v, stop %s: want %s", g, rs.StopReason, tt.want)
			}
			switch tt.want {
			case replay.GateClosed:
				if !strings.Contains(g.Detail, "replays came back") || rs.StopReason != replay.StopGate || s.Total.Replayed != 0 {
					t.Fatalf("refill gate %+v, stop %s, replayed %d: want closed before any replay back went out", g, rs.StopReason, s.Total.Replayed)
				}
			default:
				if s.Total.Replayed != 20 || s.Total.Deferred != 150 {
					t.Fatalf("counts %+v: want the 20 new replayed, the 150 back deferred to the next run", countsOf(s.Total))
				}
			}
		})
	}
}
