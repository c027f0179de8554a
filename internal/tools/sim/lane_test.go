package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/hold"
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
		groups := map[hold.OnError]int{}
		for _, seed := range tc.seeds {
			lane := RandomConfig(seed, 0).Lane
			groups[lane.Groups]++
			lane.Groups = ""
			kinds[lane]++
		}
		for _, want := range []Lane{{}, {RefKey: true}, {NoRecords: true}} {
			if kinds[want] == 0 {
				t.Errorf("%s: no seed of lane %+v among %v", tc.name, want, tc.seeds)
			}
		}
		for _, want := range []hold.OnError{"", hold.KeepHeld, hold.Skip} {
			if groups[want] == 0 {
				t.Errorf("%s: no seed whose lane has Groups %q among %v", tc.name, want, tc.seeds)
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
	}
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
