package replay_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/replay"
)

// Several workers per route, each finishing a batch beside the next
// receive: every message moves once, the ledger records each, and the cap
// and the rate stay the run's.
func TestWorkersMoveEachMessageOnce(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("W", 500)
	h.clock.Advance(due)
	s := h.run(h.engine(func(o *replay.Options) {
		o.Workers = 4
		o.Lockstep = false
		o.Rate = replay.MaxRate
	}), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 500, DeadLettered: 500, Replayed: 500})
	got := bodiesOf(h.stored(h.route.SourceURL))
	if len(got) != 500 || len(slices.Compact(sortedCopy(got))) != 500 {
		t.Fatalf("%d messages in the source (%d distinct), want 500", len(got), len(slices.Compact(sortedCopy(got))))
	}
	if visible, inFlight := h.depth(h.route.DLQURL); visible+inFlight != 0 {
		t.Fatalf("DLQ holds %d", visible+inFlight)
	}
	for _, i := range []int{0, 250, 499} {
		hist, err := h.ledger.History(context.Background(), record.HistoryKey(fmt.Sprintf("ORD-W-%03d", i), ""))
		if err != nil || len(hist) != 1 || hist[0].State != record.Sent {
			t.Fatalf("history of ORD-W-%03d = %+v, %v", i, hist, err)
		}
	}

	capped := newHarness(t, false, nil)
	capped.orders("C", 200)
	capped.clock.Advance(due)
	s = capped.run(capped.engine(func(o *replay.Options) { o.Workers = 4; o.Lockstep = false }), replay.Request{Max: 35})
	if s.Total.Replayed != 35 || s.Routes[0].StopReason != replay.StopCap {
		t.Fatalf("replayed %d (stop %s), want the cap of 35", s.Total.Replayed, s.Routes[0].StopReason)
	}
	if visible, inFlight := capped.depth(capped.route.DLQURL); visible != 165 || inFlight != 0 {
		t.Fatalf("DLQ: %d visible, %d in flight; want the 165 left released", visible, inFlight)
	}
}

// On a FIFO route the workers run in parallel across message groups and
// keep the order of each group.
func TestWorkersKeepTheOrderOfEachFIFOGroup(t *testing.T) {
	h := newHarness(t, true, nil)
	want := map[string][]string{}
	for i := range 60 {
		g := fmt.Sprintf("g%d", i%6)
		body := order(fmt.Sprintf("ORD-%s-%02d", g, i))
		want[g] = append(want[g], body)
		h.deadLetter(h.route, msg{body: body, group: g})
	}
	h.clock.Advance(due)
	s := h.run(h.engine(func(o *replay.Options) { o.Workers = 4; o.Lockstep = false; o.Rate = replay.MaxRate }), replay.Request{})
	if s.Total.Replayed != 60 {
		t.Fatalf("replayed %d of 60: %+v", s.Total.Replayed, countsOf(s.Total))
	}
	got := map[string][]string{}
	for _, m := range h.stored(h.route.SourceURL) {
		got[m.group] = append(got[m.group], m.body)
	}
	for g, bodies := range want {
		if !slices.Equal(got[g], bodies) {
			t.Fatalf("group %s arrived as %v, want %v", g, got[g], bodies)
		}
	}
}

func TestWorkersOptionIsValidated(t *testing.T) {
	h := newHarness(t, false, nil)
	_, err := h.tryRun(context.Background(), h.engine(func(o *replay.Options) { o.Workers = replay.MaxWorkers + 1 }), replay.Request{})
	if !errors.Is(err, replay.ErrInvalidRequest) {
		t.Fatalf("err = %v, want ErrInvalidRequest", err)
	}
}
