package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/payload"
	"github.com/homingdlq/homing/replay"
)

// TestRefKeyShape checks the RefKey lane's bodies against the route's
// expressions: the route's Key reads the key at order.ref, never the decoy
// orderId; the route's PayloadHash over the body is the hash the sample's
// handler records for the body the adapter hands it; and a body that is
// not an object reaches the handler as it is.
func TestRefKeyShape(t *testing.T) {
	lane := Lane{RefKey: true}
	hash, err := payload.NewHash(lane.hashPart())
	if err != nil {
		t.Fatal(err)
	}
	w := &workload{rng: rand.New(rand.NewPCG(7, 7)), seed: 7, lane: lane}
	for i := range 20 {
		id := fmt.Sprintf("ORD-7-%06d", i)
		body := w.validBody(id, i%2*99)
		var decoy struct {
			OrderID string `json:"orderId"`
		}
		if err := json.Unmarshal([]byte(body), &decoy); err != nil || decoy.OrderID == "" || decoy.OrderID == id {
			t.Fatalf("body %s: want a decoy orderId other than %s, got %q (%v)", body, id, decoy.OrderID, err)
		}
		if got := lane.keyOf(body); got != id {
			t.Errorf("key of %s = %q, want %q", body, got, id)
		}
		o, err := order.Parse([]byte(lane.sample(body)), 0)
		if err != nil || o.OrderID != id {
			t.Fatalf("the adapted body of %s: orderId %q, %v; want %s", body, o.OrderID, err, id)
		}
		sample, ok := invoicing.PayloadHash(lane.sample(body))
		want, werr := lane.hash([]byte(body)) // what the lane's consumer writes
		got, err := hash.Sum([]byte(body))
		if !ok || err != nil || werr != nil || got != want || got[strings.IndexByte(got, ':'):] != sample[strings.IndexByte(sample, ':'):] {
			t.Errorf("route hash of %s = %q (%v), want the consumer's %q, the digest of the sample's %q", body, got, err, want, sample)
		}
		if same, _ := invoicingHash(t).Same(want, []byte(body)); same {
			t.Errorf("the sample's HashPart over the RefKey body %s matches: the decoy would go unnoticed", body)
		}
	}
	for _, body := range []string{`{"order": `, `[1]`, `"x"`} {
		if got := lane.sample(body); got != body {
			t.Errorf("sample(%s) = %s, want it unchanged", body, got)
		}
	}
}

// TestLongKeyShape checks the LongKey lane's keys and bodies: every key is
// 130 to 600 bytes, over the replay's bound on an id it embeds as is; the
// route's Key reads it whole; the consumer reads the order with that key
// and the sample's hash of the body; a body over the size limit is still
// refused as too large.
func TestLongKeyShape(t *testing.T) {
	lane := Lane{LongKey: true}
	w := &workload{rng: rand.New(rand.NewPCG(9, 9)), seed: 9, lane: lane}
	for i := range 40 {
		id := w.key(fmt.Sprintf("ORD-9-%06d", i))
		if len(id) < 130 || len(id) > 600 || len(id) <= replay.MaxKeyID {
			t.Errorf("key %q is %d bytes; want 130..600", id, len(id))
		}
		body := w.validBody(id, 0)
		if got := lane.keyOf(body); got != id {
			t.Errorf("route key of %s = %q, want %q", body, got, id)
		}
		o, err := lane.parse(body)
		if err != nil || o.OrderID != id {
			t.Fatalf("consumer's order of %s: %q, %v; want key %s", body, o.OrderID, err, id)
		}
		p := &Publication{Body: body}
		lane.describe(p)
		if want, _ := invoicing.PayloadHash(body); p.OrderID != id || p.Hash != want || p.Request == "" {
			t.Errorf("describe: %+v; want key %s, hash %s", p, id, want)
		}
	}
	body := w.validBody(w.key("ORD-9-BIG"), 0)
	if _, err := lane.read(body, len(body)-1); !isReason(err, order.ReasonPayloadTooLarge) {
		t.Errorf("a body one byte over the limit: %v; want %s", err, order.ReasonPayloadTooLarge)
	}
	if _, err := lane.read(body, len(body)); err != nil {
		t.Errorf("a body at the limit: %v", err)
	}
}

// TestIntKeyShape checks the IntKey lane: an integer of at most 2^53 in
// magnitude is the key, of the engine and of the consumer (through the
// adapter), and the route's PayloadHash over the body is the hash the
// sample's handler records; one past 2^53 is no key, and the sample's
// handler refuses the order as missing-order-id.
func TestIntKeyShape(t *testing.T) {
	lane := Lane{IntKey: true}
	hash, err := payload.NewHash(lane.hashPart())
	if err != nil {
		t.Fatal(err)
	}
	w := &workload{rng: rand.New(rand.NewPCG(11, 11)), seed: 11, lane: lane}
	ids := []string{"9007199254740992", "-9007199254740992", "12"}
	for i := range 10 {
		ids = append(ids, w.key(fmt.Sprintf("ORD-11-%06d", i)))
	}
	for _, id := range ids {
		body := w.validBody(id, 0)
		if !strings.Contains(body, `"orderId":`+id+`,`) {
			t.Fatalf("body %s: want orderId the number %s", body, id)
		}
		if got := lane.keyOf(body); got != id {
			t.Errorf("route key of %s = %q, want %q", body, got, id)
		}
		o, err := lane.parse(body)
		if err != nil || o.OrderID != id {
			t.Fatalf("consumer's order of %s: %q, %v; want %s", body, o.OrderID, err, id)
		}
		sample, ok := invoicing.PayloadHash(lane.sample(body))
		want, werr := lane.hash([]byte(body)) // what the lane's consumer writes
		got, err := hash.Sum([]byte(body))
		if !ok || err != nil || werr != nil || got != want || got[strings.IndexByte(got, ':'):] != sample[strings.IndexByte(sample, ':'):] {
			t.Errorf("route hash of %s = %q (%v), want the consumer's %q, the digest of the sample's %q", body, got, err, want, sample)
		}
	}
	for _, id := range []string{"9007199254740993", "-9007199254740993", "9007199254740994"} {
		body := w.validBody(id, 0)
		if got := lane.keyOf(body); got != "" {
			t.Errorf("route key of %s = %q, want none", body, got)
		}
		if _, err := lane.parse(body); !isReason(err, order.ReasonMissingOrderID) {
			t.Errorf("consumer's order of %s: %v; want %s", body, err, order.ReasonMissingOrderID)
		}
	}
}

func isReason(err error, r order.Reason) bool {
	var inv *order.InvalidError
	return errors.As(err, &inv) && inv.Reason == r
}

func invoicingHash(t *testing.T) payload.Hash {
	h, err := payload.NewHash(invoicing.HashPart)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestNoRecordsNeedsDeduplication: a lane without records is once in
// effect only where the service deduplicates, so New refuses the other.
func TestNoRecordsNeedsDeduplication(t *testing.T) {
	c := quiet(5)
	c.Lane.NoRecords = true
	c.Service = Counting
	if _, err := New(c); err == nil {
		t.Fatal("New accepted a lane without records over a counting service")
	}
}

// TestSeedRulesCoverTheLanes: the seeds of TestSim's default run and of
// TestSimIsDeterministic include each lane.
func TestSeedRulesCoverTheLanes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seeds []uint64
	}{{"TestSim", seedRange(DefaultSeeds)}, {"TestSimIsDeterministic", determinismSeeds}} {
		kinds := map[Lane]int{}
		groups := map[fifo.OnError]int{}
		for _, seed := range tc.seeds {
			lane := RandomConfig(seed, 0).Lane
			groups[lane.Groups]++
			lane.Groups = ""
			kinds[lane]++
		}
		for _, want := range []Lane{{}, {RefKey: true}, {LongKey: true}, {IntKey: true}, {NoRecords: true}} {
			if kinds[want] == 0 {
				t.Errorf("%s: no seed of lane %+v among %v", tc.name, want, tc.seeds)
			}
		}
		for _, want := range []fifo.OnError{"", fifo.Hold, fifo.Skip} {
			if groups[want] == 0 {
				t.Errorf("%s: no seed whose lane has Groups %q among %v", tc.name, want, tc.seeds)
			}
		}
	}
}

// TestSeedRulesCrossTheLanes: within the first 300 seeds (make sim runs
// more), every key shape meets records and no records, standard and FIFO
// queues, and each of these lanes meets a schedule that pauses during its
// outage and one whose ticks come late or not at all.
func TestSeedRulesCrossTheLanes(t *testing.T) {
	type lane struct {
		shape            string
		records, fifo    bool
		paused, lateTick bool
	}
	seen := map[lane]bool{}
	for _, seed := range seedRange(300) {
		c := RandomConfig(seed, 0)
		l := lane{shape: "plain", records: !c.Lane.NoRecords, fifo: c.Queues.FIFO,
			paused: len(c.Faults.Ticks.Pauses) > 0 || c.Faults.Ticks.PauseAfterProbe > 0, lateTick: c.Faults.Ticks.Late > 0}
		switch {
		case c.Lane.RefKey:
			l.shape = "ref"
		case c.Lane.LongKey:
			l.shape = "long"
		case c.Lane.IntKey:
			l.shape = "int"
		}
		if c.Lane.check() != nil {
			t.Fatalf("seed %d: %v", seed, c.Lane.check())
		}
		seen[l] = true
		seen[lane{shape: l.shape, records: l.records, fifo: l.fifo}] = true
		seen[lane{shape: l.shape, records: l.records, paused: l.paused}] = true
		seen[lane{shape: l.shape, records: l.records, lateTick: l.lateTick}] = true
	}
	for _, shape := range []string{"plain", "ref", "long", "int"} {
		for _, records := range []bool{true, false} {
			for _, want := range []lane{
				{shape: shape, records: records}, {shape: shape, records: records, fifo: true},
				{shape: shape, records: records, paused: true}, {shape: shape, records: records, lateTick: true},
			} {
				if !seen[want] {
					t.Errorf("no seed of 1..300 with lane %+v", want)
				}
			}
		}
	}
}

func seedRange(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// removedAtLeast checks that the engine removed at least n dead letters
// as already applied.
func removedAtLeast(n int) func(t *testing.T, rep *Report) {
	return func(t *testing.T, rep *Report) {
		if rep.Stats.Applied < n {
			t.Errorf("%d dead letters removed as already applied; want at least %d", rep.Stats.Applied, n)
		}
	}
}

// appliedRemoval is a lane whose event source mapping never manages to
// delete what the consumer processed: every order is invoiced, then comes
// back until it is dead-lettered, its key completed with its payload. The
// replay must remove each one as already applied (and not replay it).
func appliedRemoval(seed uint64, lane Lane) Config {
	c := quiet(seed)
	c.Lane = lane
	c.Faults.ESMDeleteErrors = 1
	b := newBuilder(seed)
	b.w.lane = lane
	b.valid(10, time.Minute)
	c.Publications = b.pubs
	return c
}

// noRecordsLane is a lane whose consumer writes no records, through an
// outage its health probe does not see: the replays go out (no canary
// holds them), fail and come back; the breaker on the DLQ signal and the
// budget bound them; after the outage, and the operator's rounds, each
// order is invoiced once by the deduplicating service; a duplicate is
// acknowledged; a conflicting payload too (the consumer cannot tell it).
func noRecordsLane(seed uint64, lane Lane) Config {
	c := quiet(seed)
	c.Lane = lane
	b := newBuilder(seed)
	b.w.lane = lane
	pubs := b.spread(20, time.Minute, 20*time.Minute)
	b.add(&Publication{Kind: KindDuplicate, Body: pubs[0].Body, At: 50 * time.Minute, Of: pubs[0].N})
	b.add(&Publication{Kind: KindConflict, Body: b.w.validBody(pubs[1].OrderID, 99), At: 50 * time.Minute, Of: pubs[1].N})
	c.Publications = b.pubs
	c.Phases = []Phase{{From: 0, To: 90 * time.Minute, Mode: "down", LyingHealth: true}}
	return c
}

// replayedWithoutRecords checks that the lane's dead letters were replayed
// (there was something the skipped protections would have read) and that
// no run read completions on the lane's route.
func replayedWithoutRecords(t *testing.T, rep *Report) {
	if rep.Stats.Replays == 0 {
		t.Error("no replays: the scenario never exercised the lane")
	}
	for _, r := range rep.Runs {
		for _, rs := range r.Summary.Routes {
			if rs.BreakerSignal == replay.SignalCompletions {
				t.Errorf("run %s read completions on route %s", r.ID, rs.Route)
			}
		}
	}
}

func laneScenarios() []scenario {
	return []scenario{
		{
			name: "applied-removal", issue: "16.6: a dead letter already applied is removed, not replayed",
			cfg: func() Config { return appliedRemoval(1601, Lane{}) }, check: removedAtLeast(10),
		},
		{
			name: "applied-removal-ref-key", issue: "16.6: the same on a lane keyed at order.ref, with a decoy orderId",
			cfg: func() Config { return appliedRemoval(1602, Lane{RefKey: true}) }, check: removedAtLeast(10),
		},
		{
			name: "no-records-lane", issue: "16.6: a lane whose consumer writes no records keeps the promises that apply",
			cfg: func() Config { return noRecordsLane(1603, Lane{NoRecords: true}) }, check: replayedWithoutRecords,
		},
		{
			name: "no-records-ref-key", issue: "16.6: the same, keyed at order.ref",
			cfg: func() Config { return noRecordsLane(1604, Lane{RefKey: true, NoRecords: true}) }, check: replayedWithoutRecords,
		},
		{
			name: "applied-removal-long-key", issue: "30.1: a dead letter already applied is removed whatever its key's length",
			cfg: func() Config { return appliedRemoval(3011, Lane{LongKey: true}) }, check: removedAtLeast(10),
		},
		{
			name: "long-key-lying-outage", issue: "30.1: keys over 128 bytes keep the canary and the breaker",
			cfg: func() Config {
				// As lying-health-probe-parks-good-orders, on a lane keyed
				// by ARNs and URLs of 130 to 600 bytes: the canary samples
				// them, the breaker opens on them, and no good order is
				// parked for the outage.
				c := quiet(3012)
				c.Lane = Lane{LongKey: true}
				b := newBuilder(3012)
				b.w.lane = c.Lane
				b.valid(100, time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 3 * time.Hour, Mode: "down", LyingHealth: true}}
				return c
			},
			check: func(t *testing.T, rep *Report) {
				noParks(replay.ReasonReplayExhausted)(t, rep)
				if !breakerOpened(rep) {
					t.Error("no run left the lane's breaker open: the outage went unnoticed")
				}
			},
		},
		{
			name: "no-records-long-key", issue: "30.1: the same without records",
			cfg: func() Config { return noRecordsLane(3013, Lane{LongKey: true, NoRecords: true}) }, check: replayedWithoutRecords,
		},
		{
			name: "int-key-bound", issue: "30.2: 2^53 is a key, 2^53+1 none: two publications never absorbed as one",
			cfg: func() Config { return intKeyBound(3021) },
			check: func(t *testing.T, rep *Report) {
				if rep.Stats.Replays == 0 {
					t.Error("no replays: the bound's orders never reached the replay")
				}
			},
		},
		{
			name: "applied-removal-int-key", issue: "30.2: the same removal on a lane of integer keys",
			cfg: func() Config { return appliedRemoval(3022, Lane{IntKey: true}) }, check: removedAtLeast(10),
		},
		{
			name: "no-records-paused-after-probe", issue: "30.3: a run late after a probe judges it, never closes blind",
			cfg:   func() Config { return pausedAfterProbe(3031, Lane{NoRecords: true}) },
			check: notBlindAfterPause,
		},
		{
			name: "long-key-paused-after-probe", issue: "30.3: the same on a lane with records, keyed long",
			cfg: func() Config { return pausedAfterProbe(3032, Lane{LongKey: true}) },
			check: func(t *testing.T, rep *Report) {
				notBlindAfterPause(t, rep)
				boundedInOutage(t, rep)
			},
		},
		{
			name: "no-records-probe-judged-early", issue: "30.3: a probe is judged by a pass that looked before its replays could come back",
			cfg:   func() Config { return pausedAfterProbe(3031, Lane{NoRecords: true}) },
			check: boundedInOutage,
		},
		{
			name: "no-records-long-outage", issue: "seed 763: a probe on the DLQ signal is judged however long the wait for it",
			cfg:   func() Config { return longOutage(7631, Lane{RefKey: true, NoRecords: true}) },
			check: closedAfterOutage,
		},
	}
}

// longOutage is an outage the health probe misses, on a lane without
// records, long enough for the wait between the breaker's probes
// (BackoffBase 5 minutes, doubling up to 12 hours) to outgrow the 20
// recent runs the gates read (a run every 5 minutes), with an order the
// service fails for ever among the dead letters. Seed 763's breaker lost
// sight of its probe, probed 5 messages every 12 hours and never closed:
// the others waited for the expiry rescue, 14 days, and the poison order
// parked first expired from the parking queue before the operator came.
func longOutage(seed uint64, lane Lane) Config {
	c := quiet(seed)
	c.Lane = lane
	c.Replay.Options.BackoffBase = 5 * time.Minute
	c.Replay.Options.BackoffMax = 12 * time.Hour
	b := newBuilder(seed)
	b.w.lane = lane
	b.spread(40, time.Minute, 20*time.Minute)
	b.poison(90 * time.Second)
	c.Publications = b.pubs
	c.Phases = []Phase{{From: 0, To: 8 * time.Hour, Mode: "down", LyingHealth: true}}
	return c
}

// closedAfterOutage checks longOutage: the waits for a probe outgrew 20
// runs; a run closed the breaker within a wait and a return of the
// outage's end; no dead letter waited for the expiry rescue; only the
// poison order was parked before the operator came.
func closedAfterOutage(t *testing.T, rep *Report) {
	o := rep.Config.Replay.Options
	var wait time.Duration
	var closed time.Time
	end := Start.Add(rep.Config.Phases[0].To)
	for _, r := range rep.Runs {
		b := laneRoute(r).Breaker
		if b != nil && b.Open {
			wait = max(wait, b.ProbeAt.Sub(r.Start))
		}
		if closed.IsZero() && r.Start.After(end) && laneRoute(r).Route != "" && (b == nil || !b.Open) {
			closed = r.Start
		}
	}
	if limit := 20 * rep.Config.Replay.Schedule; wait <= limit {
		t.Errorf("the longest wait for a probe was %s: the scenario needs one past 20 runs (%s)", wait, limit)
	}
	bound := end.Add(o.BackoffMax + time.Hour)
	switch {
	case closed.IsZero():
		t.Errorf("no run closed the breaker after the outage's end at %s; want one by %s", fmtOffset(end.Sub(Start)), fmtOffset(bound.Sub(Start)))
	case closed.After(bound):
		t.Errorf("the breaker closed at %s after the outage's end at %s; want by %s", fmtOffset(closed.Sub(Start)), fmtOffset(end.Sub(Start)), fmtOffset(bound.Sub(Start)))
	}
	if got := rep.Stats.ParkedUnattended; got[replay.ReasonReplayExhausted] != 1 || len(got) != 1 {
		t.Errorf("parked %v before the operator came; want only the poison order, %s", got, replay.ReasonReplayExhausted)
	}
}

// breakerOpened reports whether a run left the lane's breaker open.
func breakerOpened(rep *Report) bool {
	return slices.ContainsFunc(rep.Runs, func(r RunRecord) bool {
		b := laneRoute(r).Breaker
		return b != nil && b.Open
	})
}

// intKeyBound is a lane of integer keys whose orders include ±2^53 and,
// a minute later each, the same order with ±(2^53+1): a key, and no key
// that a double reads as the same number (the payload hash too). An
// outage the health probe misses dead-letters them all and the replay
// brings them back. Each twin must end in the invalid queue as
// missing-order-id (no key), never acknowledged as a duplicate of the
// other; the others are invoiced once.
func intKeyBound(seed uint64) Config {
	c := quiet(seed)
	c.Lane = Lane{IntKey: true}
	b := newBuilder(seed)
	b.w.lane = c.Lane
	b.valid(10, time.Minute)
	for i, sign := range []string{"", "-"} {
		o := b.w.validOrder(sign+"9007199254740992", 0)
		at := 2*time.Minute + time.Duration(i)*time.Second
		b.add(&Publication{Kind: KindValid, Body: b.w.encode(o), At: at})
		o.OrderID = sign + "9007199254740993"
		b.add(&Publication{Kind: KindInvalid, Body: b.w.encode(o), At: at + time.Minute, WantReason: string(order.ReasonMissingOrderID)})
	}
	c.Publications = b.pubs
	c.Phases = []Phase{{From: 0, To: 40 * time.Minute, Mode: "down", LyingHealth: true}}
	return c
}

// pauseLength is how long pausedAfterProbe's schedule is disabled.
const pauseLength = 2 * time.Hour

// pausedAfterProbe is an outage the health probe misses, longer than
// the schedule's pause of 2 hours that begins right after the first run
// that probed the lane's open breaker: the first run after it comes late,
// after the breaker's next probe was due, and no pass has looked at the
// probe's replays. Operators run no replay meanwhile.
func pausedAfterProbe(seed uint64, lane Lane) Config {
	c := quiet(seed)
	c.Lane = lane
	c.Faults.Ticks.PauseAfterProbe = pauseLength
	b := newBuilder(seed)
	b.w.lane = lane
	b.spread(40, time.Minute, 20*time.Minute)
	c.Publications = b.pubs
	c.Phases = []Phase{{From: 0, To: 6 * time.Hour, Mode: "down", LyingHealth: true}}
	return c
}

// notBlindAfterPause checks pausedAfterProbe: the schedule paused after a
// probe; the first run after the pause left the breaker open, and no run
// from it to the next probe, that one included, replayed more than a
// probe's worth (CanaryLimit): the breaker did not close blind on a probe
// no pass had looked at and send the DLQ into the outage. (The removal
// and the budgets are the invariants'.)
func notBlindAfterPause(t *testing.T, rep *Report) {
	after := runsAfterPause(t, rep)
	if len(after) == 0 {
		t.Fatal("no run between the pause's end and the outage's")
	}
	if b := laneRoute(after[0]).Breaker; b == nil || !b.Open {
		t.Errorf("run %s, the first after the pause, left the breaker %+v; want it open (the outage goes on)", after[0].ID, b)
	}
	limit := rep.Config.Replay.Options.CanaryLimit
	for _, r := range after {
		if n := len(r.Replayed); n > limit {
			t.Errorf("run %s at %s, after the pause and before the next probe, replayed %d messages; want at most a probe's %d", r.ID, fmtOffset(r.Start.Sub(Start)), n, limit)
		}
		if laneRoute(r).Probe {
			break
		}
	}
}

// boundedInOutage checks pausedAfterProbe over the rest of the outage: no
// run from the pause's end to the outage's replayed more than a probe's
// worth.
func boundedInOutage(t *testing.T, rep *Report) {
	limit := rep.Config.Replay.Options.CanaryLimit
	for _, r := range runsAfterPause(t, rep) {
		if n := len(r.Replayed); n > limit {
			t.Errorf("run %s at %s, after the pause and in the outage, replayed %d messages; want at most a probe's %d", r.ID, fmtOffset(r.Start.Sub(Start)), n, limit)
		}
	}
}

// runsAfterPause returns the runs of pausedAfterProbe that started after
// its pause ended and before its outage did.
func runsAfterPause(t *testing.T, rep *Report) []RunRecord {
	t.Helper()
	var end time.Time
	for _, r := range rep.Runs {
		if end.IsZero() && laneRoute(r).Probe {
			end = r.Start.Add(pauseLength)
		}
	}
	if end.IsZero() {
		t.Fatal("no run probed the lane's breaker: the schedule never paused")
	}
	outage := Start.Add(rep.Config.Phases[0].To)
	var out []RunRecord
	for _, r := range rep.Runs {
		if !r.Start.Before(end) && r.Start.Before(outage) {
			out = append(out, r)
		}
	}
	return out
}

// laneRoute is the summary of the lane's route in r ("orders"), zero
// when r did not read it.
func laneRoute(r RunRecord) replay.RouteSummary {
	for _, rs := range r.Summary.Routes {
		if rs.Route == "orders" {
			return rs
		}
	}
	return replay.RouteSummary{}
}

// A replay of a dead letter whose key the consumer completed with the same
// payload is a removal that did not happen, unless the engine could not
// remove it: its INTENT mark failed, the lane has no records, or the
// record holds another payload. (With a route hash that never matches,
// every seed that dead-letters an applied message replayed it and passed.)
func TestCheckReplayedCompleted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		intended  bool
		recorded  string // the hash of the completed record; "" none
		noRecords bool
		want      int
	}{
		{"completed with its payload", true, "h", false, 1},
		{"its INTENT mark failed", false, "h", false, 0},
		{"completed with another payload", true, "other", false, 0},
		{"not completed", true, "", false, 0},
		{"a lane without records", true, "h", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCheckSim(t)
			s.cfg.Lane.NoRecords = tc.noRecords
			body := `{"eventType":"order.created","version":1,"orderId":"ORD-1"}`
			h, err := s.cfg.Lane.hash([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			recorded := map[string]string{"h": h, "other": h[:strings.IndexByte(h, ':')] + ":" + strings.Repeat("0", 64), "": ""}[tc.recorded]
			s.pubs = []*Publication{{N: 0, OrderID: "ORD-1", Hash: h, Body: body}}
			s.sqs.lineage["m-1"] = 0
			if tc.recorded != "" {
				r := &idempotency.Receiver{Store: s.store.MemoryStore, Scope: consumerName, Now: s.clock.Now}
				if _, err := r.Do(context.Background(), "ORD-1", recorded, func(context.Context) (string, error) { return "INV-1", nil }); err != nil {
					t.Fatal(err)
				}
			}
			run := newRunState("sched-0001")
			run.intended["m-1"] = tc.intended
			s.replayedCompleted(run, "m-1")
			if got := kinds(s)["replayed-completed"]; got != tc.want {
				t.Errorf("violations %v; want %d replayed-completed", s.violations, tc.want)
			}
		})
	}
}
