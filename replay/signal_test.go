package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/replay"
)

// lane plays a lane's consumer on the harness's route: each message in the
// source queue either fails (it comes back to the DLQ, as SQS's redrive
// brings it after maxReceiveCount receives) or takes effect, counted per
// key in applied; record also writes its completion record in done.
type laneConsumer struct {
	h       *harness
	applied map[string]int
	done    setCompletions
}

func (c *laneConsumer) consume(up, record bool) {
	c.h.t.Helper()
	for _, m := range c.h.stored(c.h.route.SourceURL) {
		if !up {
			c.h.deadLetter(c.h.route, msg{body: m.body, attrs: m.raw.MessageAttributes})
			continue
		}
		c.applied[keyOf(m.body)]++
		if record {
			c.done[keyOf(m.body)] = true
		}
	}
	c.h.drainQueue(c.h.route.SourceURL)
}

// An outage the health probe does not see, on a route whose consumer writes
// no completion records: the breaker reads the DLQ (most of a run's
// replays back), opens, parks nothing, and probes; when the service is
// back, a probe's replays do not come back, it closes, and every message
// takes effect exactly once. Completions are never read (untouchable fails
// the test on a read).
func TestBreakerOnTheDLQSignal(t *testing.T) {
	h := newHarness(t, false, nil)
	h.route.Records = false
	h.orders("NR", 20)
	keys := keysOf("ORD-NR", 20)
	c := &laneConsumer{h: h, applied: map[string]int{}}
	opts := func(o *replay.Options) {
		o.Health = func(context.Context) error { return nil } // says up throughout
		o.Completions = untouchable{t}
		o.CanaryLimit = 2
	}
	sent, opened, probes := 0, false, 0
	for run := range 12 { // three hours of 15-minute runs
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		rs := s.Routes[0]
		sent += s.Total.Replayed
		if n := s.Total.ParkedTotal(); n != 0 {
			t.Fatalf("run %d: parked %d good messages during the outage: %+v", run, n, countsOf(s.Total))
		}
		if rs.BreakerSignal != replay.SignalDLQ {
			t.Fatalf("run %d: breaker signal %q, want %q", run, rs.BreakerSignal, replay.SignalDLQ)
		}
		if rs.Breaker != nil && rs.Breaker.Open {
			opened = true
			if g := rs.Gates[1]; !strings.Contains(g.Detail, "DLQ") {
				t.Fatalf("run %d: canary gate %+v does not name the DLQ signal", run, g)
			}
		}
		if rs.Probe {
			probes++
		}
		c.consume(false, false)
	}
	if !opened || probes == 0 || sent > 20+2*probes || probes > 6 {
		t.Fatalf("opened %v, %d probes, %d replays sent into the outage: the breaker did not hold", opened, probes, sent)
	}
	closed := false
	for range 40 {
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		if n := s.Total.ParkedTotal(); n != 0 {
			t.Fatalf("parked %d after the recovery: %+v", n, countsOf(s.Total))
		}
		closed = closed || s.Routes[0].Breaker == nil || !s.Routes[0].Breaker.Open
		c.consume(true, false)
		if len(c.applied) == len(keys) {
			break
		}
	}
	if visible, inFlight := h.depth(h.route.DLQURL); !closed || len(c.applied) != len(keys) || visible+inFlight != 0 {
		t.Fatalf("breaker closed %v, %d of %d keys took effect, DLQ holds %d", closed, len(c.applied), len(keys), visible+inFlight)
	}
	for _, k := range keys {
		if c.applied[k] != 1 {
			t.Errorf("%s took effect %d times, want once", k, c.applied[k])
		}
	}
}

// A run whose replays come back only in part (fewer than half) is no
// outage on the DLQ signal: the breaker stays shut. The messages that keep
// failing are parked in the end: a run that replays only them does open
// the breaker, which gives back at most MaxReplays replays to each.
func TestTheDLQSignalNeedsMostReplaysBack(t *testing.T) {
	h := newHarness(t, false, nil)
	h.route.Records = false
	h.orders("HALF", 10)
	opts := func(o *replay.Options) { o.Completions = untouchable{t} }
	parked := 0
	for run := range 60 {
		h.clock.Advance(6 * time.Hour)
		s := h.run(h.engine(opts), replay.Request{})
		if b := s.Routes[0].Breaker; run == 1 && b != nil && b.Open {
			t.Fatalf("breaker opened on 4 of 10 replays back: %+v", b)
		}
		if parked += s.Total.Parked[replay.ReasonReplayExhausted]; parked == 4 {
			return
		}
		for _, m := range h.stored(h.route.SourceURL) {
			if k := keyOf(m.body); k < "ORD-HALF-004" { // 4 of 10 fail on their own
				h.deadLetter(h.route, msg{body: m.body, attrs: m.raw.MessageAttributes})
			}
		}
		h.drainQueue(h.route.SourceURL)
	}
	t.Fatalf("%d of the 4 failing messages parked", parked)
}

// A lane whose consumer consumes its replays without writing homing's
// records (another runtime, a wrong key expression): before, the canary
// held it at CanaryLimit replays a run forever, and with 20 new dead
// letters a run its DLQ grew 0 -> 15 -> 30 -> 45 -> 60. Now the canary
// holds it UnrecordedRuns runs, the run that sees the third reports the
// records missing (summary, WARN line, metric), and the next run replays
// everything; once the consumer writes records again, the route is back at
// the canary.
func TestMissingRecordsAreReportedNotHeld(t *testing.T) {
	h := newHarness(t, false, nil)
	c := &laneConsumer{h: h, applied: map[string]int{}, done: setCompletions{}}
	opts := func(o *replay.Options) {
		o.Completions = c.done
		o.Consumer = "shipping"
	}
	var depths []int
	var missingAt = -1
	for run := range 1 + replay.UnrecordedRuns + 1 {
		h.orders(fmt.Sprintf("W%d", run), 20)
		h.clock.Advance(15 * time.Minute)
		h.metrics.Reset()
		s := h.run(h.engine(opts), replay.Request{})
		rs := s.Routes[0]
		visible, inFlight := h.depth(h.route.DLQURL)
		depths = append(depths, visible+inFlight)
		if rs.RecordsMissing && missingAt < 0 {
			missingAt = run
			if !strings.Contains(rs.RecordsMissingDetail, `"shipping"`) || !strings.Contains(rs.RecordsMissingDetail, `"orderId"`) {
				t.Fatalf("run %d: detail %q names neither the consumer nor the key", run, rs.RecordsMissingDetail)
			}
			if got := metric(t, h.metrics.String(), "RecordsMissing"); got != 1 {
				t.Fatalf("run %d: metric RecordsMissing = %v, want 1", run, got)
			}
		}
		if !rs.RecordsMissing {
			if got := metric(t, h.metrics.String(), "RecordsMissing"); got != 0 {
				t.Fatalf("run %d: metric RecordsMissing = %v, want 0", run, got)
			}
		}
		c.consume(true, false) // consumed, never recorded
	}
	if want := []int{0, 15, 30, 45, 0}; !slices.Equal(depths, want) || missingAt != replay.UnrecordedRuns {
		t.Fatalf("DLQ depths %v, want %v; records missing reported at run %d, want %d", depths, want, missingAt, replay.UnrecordedRuns)
	}
	lines := h.logLines("replay records missing")
	if len(lines) == 0 || lines[0]["level"] != "WARN" || lines[0]["route"] != "orders" || lines[0]["consumer"] != "shipping" || lines[0]["key"] != "orderId" ||
		!strings.Contains(fmt.Sprint(lines[0]["reason"]), "CONSUMER_NAME") {
		t.Fatalf("records-missing lines %v", lines)
	}
	if len(c.applied) != 20*(replay.UnrecordedRuns+2) {
		t.Fatalf("%d keys took effect, want every one of the %d", len(c.applied), 20*(replay.UnrecordedRuns+2))
	}

	// The consumer writes records again: the next run sees the keys it
	// replayed complete and the route is back at the canary.
	h.orders("REC", 20)
	h.clock.Advance(15 * time.Minute)
	s := h.run(h.engine(opts), replay.Request{})
	if rs := s.Routes[0]; !rs.RecordsMissing || s.Total.Replayed != 20 {
		t.Fatalf("%+v, missing %v: want the 20 replayed while the records are still missing", countsOf(s.Total), rs.RecordsMissing)
	}
	c.consume(true, true)
	h.orders("BACK", 20)
	h.clock.Advance(15 * time.Minute)
	s = h.run(h.engine(opts), replay.Request{})
	rs := s.Routes[0]
	if g := rs.Gates[1]; rs.RecordsMissing || rs.Unrecorded != 0 || rs.BreakerSignal != replay.SignalCompletions || g.Decision != replay.GateOpen {
		t.Fatalf("missing %v, unrecorded %d, signal %q, canary %+v: want the route back at the canary", rs.RecordsMissing, rs.Unrecorded, rs.BreakerSignal, g)
	}
	c.consume(true, false) // and stops again: the canary holds the next run
	h.orders("AGAIN", 20)
	h.clock.Advance(15 * time.Minute)
	s = h.run(h.engine(opts), replay.Request{})
	if g := s.Routes[0].Gates[1]; g.Decision != replay.GateLimited || s.Total.Replayed != replay.DefaultCanaryLimit || s.Routes[0].Unrecorded != 1 {
		t.Fatalf("canary %+v, replayed %d, unrecorded %d: want held at the canary again", g, s.Total.Replayed, s.Routes[0].Unrecorded)
	}
}

// Replays that come back to the DLQ are an outage, not missing records: a
// route held at the canary whose replays come back never reports its
// records missing (its breaker opens on the completions instead).
func TestReplaysThatComeBackAreNoMissingRecords(t *testing.T) {
	h := newHarness(t, false, nil)
	c := &laneConsumer{h: h, applied: map[string]int{}, done: setCompletions{}}
	opts := func(o *replay.Options) { o.Completions = c.done; o.Health = func(context.Context) error { return nil } }
	for run := range 2 * replay.UnrecordedRuns {
		h.orders(fmt.Sprintf("O%d", run), 20)
		h.clock.Advance(15 * time.Minute)
		s := h.run(h.engine(opts), replay.Request{})
		if rs := s.Routes[0]; rs.RecordsMissing || rs.Unrecorded != 0 {
			t.Fatalf("run %d: records missing %v, unrecorded %d during an outage", run, rs.RecordsMissing, rs.Unrecorded)
		}
		c.consume(false, false)
	}
}

// metric is the value of name in the EMF lines out (one route: one line).
func metric(t *testing.T, out, name string) float64 {
	t.Helper()
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		if v, ok := m[name].(float64); ok {
			return v
		}
	}
	t.Fatalf("no metric %s in %q", name, out)
	return 0
}

// Runs close together (a late run a minute after the previous one, an
// operator's beside a scheduled one) leave a failed replay no time to come
// back to the DLQ (maxReceiveCount × the source's visibility timeout, here
// 3 × 5 minutes): they count toward UnrecordedRuns but do not report the
// records missing before that time has passed since the first of them
// (before, the third run a few minutes in did, and the next run replayed
// the DLQ into what may be a slow outage). Once it has, they are reported.
func TestRunsCloseTogetherDoNotReportRecordsMissing(t *testing.T) {
	h := newHarness(t, false, nil)
	out, err := h.q.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(h.route.DLQURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	h.route.SourceURL, err = h.q.CreateQueue("orders-redriven", map[string]string{"VisibilityTimeout": "300",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, out.Attributes[string(types.QueueAttributeNameQueueArn)])})
	if err != nil {
		t.Fatal(err)
	}
	c := &laneConsumer{h: h, applied: map[string]int{}, done: setCompletions{}}
	opts := func(o *replay.Options) { o.Completions = c.done }
	h.orders("C", 20)
	missing := func() (bool, int) {
		s := h.run(h.engine(opts), replay.Request{})
		c.consume(true, false) // consumed, never recorded
		return s.Routes[0].RecordsMissing, s.Routes[0].Unrecorded
	}
	h.clock.Advance(15 * time.Minute)
	missing()
	for run := range 2 * replay.UnrecordedRuns {
		h.clock.Advance(time.Minute)
		if m, n := missing(); m {
			t.Fatalf("run %d, %d minutes in: records reported missing (unrecorded %d) before a failed replay could come back", run, run+1, n)
		}
	}
	h.clock.Advance(15 * time.Minute)
	if m, n := missing(); !m || n < replay.UnrecordedRuns {
		t.Fatalf("records missing %v, unrecorded %d after 15 minutes more: want reported", m, n)
	}
}

// On the DLQ signal, a probe is judged however many runs come between it
// and a pass that can tell, and as soon as one can: after the recovery,
// the first probe closes the breaker and the DLQ drains. Before, a probe
// was judged at the next probe's time from the latest 20 runs the gates
// read (100 minutes of runs every 5 minutes): once the wait between
// probes outgrew them (doubling), or the time a replay takes to come back
// did (a schedule paused before the breaker opened), the gate found no
// probe to judge, probed again, and never closed; 5 messages went back a
// probe, the rest waited for the expiry rescue.
func TestAProbeIsJudgedAfterALongWait(t *testing.T) {
	const every = 5 * time.Minute
	for _, tc := range []struct {
		name   string
		outage func(h *harness, run func() replay.Summary, fail func())
		bound  time.Duration // from the recovery to the breaker's closing
	}{
		{"waits doubled past the recent runs", func(h *harness, run func() replay.Summary, fail func()) {
			var wait time.Duration
			for range 8 * 12 { // eight hours of outage
				h.clock.Advance(every)
				if b := run().Routes[0].Breaker; b != nil && b.Open {
					wait = max(wait, b.ProbeAt.Sub(h.clock.Now()))
				}
				fail()
			}
			if wait <= 20*every {
				h.t.Fatalf("the longest wait for a probe was %s: the test needs one past 20 runs", wait)
			}
		}, replay.DefaultBackoffMax + 3*every},
		{"a paused schedule before the breaker opened", func(h *harness, run func() replay.Summary, fail func()) {
			h.clock.Advance(every)
			run()
			fail()
			h.clock.Advance(3 * time.Hour) // the schedule was paused
			if b := run().Routes[0].Breaker; b == nil || !b.Open || b.ReturnAfter <= 20*every {
				h.t.Fatalf("breaker %+v: the test needs it open, with a ReturnAfter past 20 runs", b)
			}
		}, 2*(3*time.Hour+every) + 2*every},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			h.route.Records = false
			keys := keysOf("ORD-LW", 40)
			h.orders("LW", len(keys))
			c := &laneConsumer{h: h, applied: map[string]int{}}
			opts := func(o *replay.Options) {
				o.Health = func(context.Context) error { return nil } // says up throughout
				o.Completions = untouchable{t}
			}
			run := func() replay.Summary {
				s := h.run(h.engine(opts), replay.Request{})
				if n := s.Total.ParkedTotal(); n != 0 {
					t.Fatalf("parked %d good messages: %+v", n, countsOf(s.Total))
				}
				return s
			}
			tc.outage(h, run, func() { c.consume(false, false) })
			closed := time.Duration(-1)
			for i := range 24 * 12 { // a day after the recovery
				h.clock.Advance(every)
				if b := run().Routes[0].Breaker; closed < 0 && (b == nil || !b.Open) {
					closed = time.Duration(i+1) * every
				}
				c.consume(true, false)
				if closed >= 0 && len(c.applied) == len(keys) {
					break
				}
			}
			if closed < 0 || closed > tc.bound {
				t.Fatalf("the breaker closed %s after the recovery (-1ns: never), want within %s (the wait for a probe, and a pass that can judge it)", closed, tc.bound)
			}
			if visible, inFlight := h.depth(h.route.DLQURL); len(c.applied) != len(keys) || visible+inFlight != 0 {
				t.Fatalf("%d of %d keys took effect, DLQ holds %d", len(c.applied), len(keys), visible+inFlight)
			}
			for _, k := range keys {
				if c.applied[k] != 1 {
					t.Errorf("%s took effect %d times, want once", k, c.applied[k])
				}
			}
		})
	}
}
