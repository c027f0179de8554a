package replay_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/replay"
)

// failureRecords are the consumer's failure records, by message id; class,
// when set, is the record of every other id.
type failureRecords struct {
	byID  map[string]string
	class string
	reads int
}

func (f *failureRecords) classes(_ context.Context, ids []string) (map[string]string, error) {
	f.reads++
	out := map[string]string{}
	for _, id := range ids {
		if c := cmp.Or(f.byID[id], f.class); c != "" {
			out[id] = c
		}
	}
	return out, nil
}

// A run filtered by error class replays the messages whose failure record
// has that class ("unknown": none); the others stay. A filter by class
// needs the records.
func TestAFilterByErrorClassReplaysThatClass(t *testing.T) {
	h := newHarness(t, false, nil)
	ids := h.orders("E", 4)
	recs := &failureRecords{byID: map[string]string{ids[0]: "tax-service-503", ids[1]: "panic", ids[2]: "tax-service-503", ids[3]: "Not A Class"}}
	h.clock.Advance(due)
	withRecords := func(o *replay.Options) { o.Failures = recs.classes }
	for _, tt := range []struct {
		classes []string
		want    []string
	}{
		{[]string{"tax-service-503"}, []string{"ORD-E-000", "ORD-E-002"}},
		{[]string{"unknown", "panic"}, []string{"ORD-E-001", "ORD-E-003"}}, // a record of no class reads as none
	} {
		before := len(h.q.Messages(h.route.SourceURL))
		s := h.run(h.engine(withRecords), replay.Request{Filter: replay.Filter{ErrorClasses: tt.classes}})
		sent := bodiesOf(h.stored(h.route.SourceURL))[before:]
		if s.Total.Replayed != len(tt.want) || s.Total.Skipped != 4-before-len(tt.want) || len(sent) != len(tt.want) {
			t.Fatalf("%v: %+v, sent %v; want %v", tt.classes, countsOf(s.Total), sent, tt.want)
		}
		for i, b := range sent {
			if !strings.Contains(b, tt.want[i]) {
				t.Fatalf("%v: sent %v, want %v", tt.classes, sent, tt.want)
			}
		}
		h.clock.Advance(window)
	}
	for _, tt := range []struct {
		name    string
		classes []string
		mod     func(*replay.Options)
	}{
		{"no records", []string{"panic"}, func(*replay.Options) {}},
		{"no class", []string{"Panic!"}, withRecords},
	} {
		if _, err := h.tryRun(context.Background(), h.engine(tt.mod), replay.Request{Filter: replay.Filter{ErrorClasses: tt.classes}}); !errors.Is(err, replay.ErrInvalidRequest) {
			t.Fatalf("%s: err = %v, want ErrInvalidRequest", tt.name, err)
		}
	}
}

// The records are read for the replays that came back, never for first
// dead letters (no read on a run without replays of ours), and the
// summary counts the classes that came back; when the breaker opens, its
// detail says them.
func TestTheBreakerSaysWhichClassesCameBack(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("OUT", 20)
	recs := &failureRecords{class: "tax-service-503"}
	opts := func(o *replay.Options) {
		o.Health = func(context.Context) error { return nil } // says up throughout
		o.Completions = setCompletions{}
		o.CanaryLimit = 2
		o.Failures = recs.classes
	}
	h.clock.Advance(due)
	h.run(h.engine(opts), replay.Request{})
	if recs.reads != 0 {
		t.Fatalf("%d reads of failure records for first dead letters, want none", recs.reads)
	}
	var detail string
	back := 0
	for range 8 {
		for _, m := range h.stored(h.route.SourceURL) {
			h.deadLetter(h.route, msg{body: m.body, attrs: m.raw.MessageAttributes})
		}
		h.drainQueue(h.route.SourceURL)
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		back += s.Routes[0].BackClasses["tax-service-503"]
		for _, g := range s.Routes[0].Gates {
			if g.Decision == replay.GateClosed && strings.Contains(g.Detail, "breaker open") {
				detail = g.Detail
			}
		}
	}
	if back == 0 || !strings.Contains(detail, "back by failure class: ") || !strings.Contains(detail, " tax-service-503") {
		t.Fatalf("%d replays back counted as tax-service-503; breaker detail %q: want the class", back, detail)
	}
}

// A summary names at most 10 classes, however many come back.
func TestBackClassesAreBounded(t *testing.T) {
	var m map[string]int
	for i := range 10000 {
		m = replay.Tally(m, fmt.Sprintf("class-%d", i))
	}
	m = replay.Tally(m, "class-3")
	if len(m) != 11 || m["other"] != 9990 || m["class-3"] != 2 {
		t.Fatalf("%d classes, other %d, class-3 %d: want 10 named and 9,990 other", len(m), m["other"], m["class-3"])
	}
}
