package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/payload"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// keyedLane is a lane as its route configures it: the key and payload-hash
// expressions, and the bodies its producer writes.
type keyedLane struct {
	name string
	key  string // replay.Route.Key
	hash string // replay.Route.PayloadHash
	body func(key string) string
}

// keyedLanes are the lanes every protection is tested on: the sample's
// orders, keyed by orderId, and a lane keyed by a nested field whose bodies
// also carry an orderId that is not their key (a decoy: an engine that read
// orderId would read the wrong key), hashing a part of the body.
var keyedLanes = []keyedLane{
	{name: "orderId", key: "orderId", body: order},
	{name: "shipment.id", key: "shipment.id", hash: "shipment", body: func(key string) string {
		return fmt.Sprintf(`{"eventType":"shipment.requested","shipment":{"id":%q,"carrier":"c-1"},"orderId":"decoy-%s"}`, key, key)
	}},
}

// lane returns the harness with its route keyed as l.
func (l keyedLane) harness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, false, nil)
	h.route.Key = l.key
	h.route.PayloadHash = l.hash
	return h
}

// keyOf is the lane's key of a body.
func (l keyedLane) keyOf(t *testing.T, body string) string {
	t.Helper()
	k, err := payload.NewKey(l.key)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := k.Of([]byte(body))
	return key
}

// deadLetters puts one dead letter per key in the harness's DLQ.
func (l keyedLane) deadLetters(h *harness, keys ...string) {
	for _, k := range keys {
		h.deadLetter(h.route, msg{body: l.body(k)})
	}
}

func keysOf(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// complete writes the consumer's completion record of key with the
// payload hash of body on h's route, as a consumer built on package
// idempotency does.
func complete(t *testing.T, h *harness, store *idempotency.MemoryStore, key, body string) {
	t.Helper()
	r := &idempotency.Receiver{Store: store, Scope: "invoice"}
	if _, err := r.Do(context.Background(), key, sumOf(t, h.route, body), func(context.Context) (string, error) { return "done", nil }); err != nil {
		t.Fatal(err)
	}
}

// The canary reads the completions of the keys the previous run replayed,
// by the route's key: keys a run replays are its route's, and a run after
// one whose replays did not complete replays CanaryLimit messages only.
func TestCanaryOnEveryKey(t *testing.T) {
	for _, l := range keyedLanes {
		t.Run(l.name, func(t *testing.T) {
			h := l.harness(t)
			store := idempotency.NewMemoryStore()
			opts := func(o *replay.Options) { o.Completions = &replaytest.MemoryCompletions{Store: store, Scope: "invoice"} }

			first := keysOf("K", 8)
			l.deadLetters(h, first...)
			h.clock.Advance(due)
			s := h.run(h.engine(opts), replay.Request{})
			if got := slices.Sorted(slices.Values(s.Routes[0].ReplayedKeys)); s.Total.Replayed != 8 || !slices.Equal(got, first) {
				t.Fatalf("replayed %d, keys %v; want the 8 keys of the route %v", s.Total.Replayed, got, first)
			}
			h.drainQueue(h.route.SourceURL) // the consumer fails them: no completion

			l.deadLetters(h, keysOf("L", 8)...)
			h.clock.Advance(due)
			s = h.run(h.engine(opts), replay.Request{})
			if g := s.Routes[0].Gates[1]; g.Decision != replay.GateLimited || s.Total.Replayed != replay.DefaultCanaryLimit {
				t.Fatalf("canary %+v, replayed %d; want limited to %d", g, s.Total.Replayed, replay.DefaultCanaryLimit)
			}
			for _, m := range h.stored(h.route.SourceURL) {
				complete(t, h, store, l.keyOf(t, m.body), m.body)
			}
			h.drainQueue(h.route.SourceURL)

			h.clock.Advance(due)
			s = h.run(h.engine(opts), replay.Request{})
			if g := s.Routes[0].Gates[1]; g.Decision != replay.GateOpen || s.Total.Replayed != 8+8-8-replay.DefaultCanaryLimit {
				t.Fatalf("canary %+v, replayed %d; want open after the previous replays completed", g, s.Total.Replayed)
			}
		})
	}
}

// An outage the health probe does not see, on every key: the breaker opens
// on the replays that come back, and closes when a probe's replays
// complete (read by the route's key), so that everything goes home.
func TestBreakerOnEveryKey(t *testing.T) {
	for _, l := range keyedLanes {
		t.Run(l.name, func(t *testing.T) {
			h := l.harness(t)
			l.deadLetters(h, keysOf("OUT", 20)...)
			done := setCompletions{}
			opts := func(o *replay.Options) {
				o.Health = func(context.Context) error { return nil } // says up throughout
				o.Completions = done
				o.CanaryLimit = 2
			}
			// consume plays the consumer: up completes every message
			// (its key, the lane's), else each comes back to the DLQ.
			consume := func(up bool) {
				for _, m := range h.stored(h.route.SourceURL) {
					if up {
						done[l.keyOf(t, m.body)] = true
						continue
					}
					h.deadLetter(h.route, msg{body: m.body, attrs: m.raw.MessageAttributes})
				}
				h.drainQueue(h.route.SourceURL)
			}
			sent, opened := 0, false
			for range 12 {
				h.clock.Advance(15 * time.Minute)
				s := h.run(h.engine(opts), replay.Request{})
				sent += s.Total.Replayed
				if n := s.Total.Parked[replay.ReasonReplayExhausted]; n != 0 {
					t.Fatalf("parked %d good messages as exhausted during the outage", n)
				}
				opened = opened || s.Routes[0].Breaker != nil && s.Routes[0].Breaker.Open
				consume(false)
			}
			if !opened || sent > 20+2*6 {
				t.Fatalf("opened %v, %d replays sent into the outage: the breaker did not hold", opened, sent)
			}
			closed := false
			for range 40 {
				h.clock.Advance(15 * time.Minute)
				s := h.run(h.engine(opts), replay.Request{})
				if n := s.Total.ParkedTotal(); n != 0 {
					t.Fatalf("parked %d after the recovery: %+v", n, countsOf(s.Total))
				}
				closed = closed || s.Routes[0].Breaker == nil || !s.Routes[0].Breaker.Open
				consume(true)
				if len(done) == 20 {
					break
				}
			}
			if !closed || len(done) != 20 {
				t.Fatalf("breaker closed %v, %d of 20 keys completed after the recovery", closed, len(done))
			}
		})
	}
}

// A dead letter whose key the consumer completed with the same payload (by
// the route's payload hash) is removed, on every key; one whose key
// completed with another payload, or whose key did not complete, goes back.
func TestAlreadyAppliedOnEveryKey(t *testing.T) {
	for _, l := range keyedLanes {
		t.Run(l.name, func(t *testing.T) {
			h := l.harness(t)
			store := idempotency.NewMemoryStore()
			complete(t, h, store, "A-SAME", l.body("A-SAME"))
			complete(t, h, store, "A-OTHER", strings.Replace(l.body("A-OTHER"), `"A-OTHER"`, `"A-OTHER","changed":1`, 1))
			l.deadLetters(h, "A-SAME", "A-OTHER", "A-NEW")
			h.clock.Advance(due)
			s := h.run(h.engine(func(o *replay.Options) { o.Completions = &replaytest.MemoryCompletions{Store: store, Scope: "invoice"} }), replay.Request{})
			checkCounts(t, s.Total, counts{Examined: 3, DeadLettered: 3, Replayed: 2, Applied: 1})
			hist, err := h.ledger.History(context.Background(), record.HistoryKey("A-SAME", ""))
			if err != nil || len(hist) != 1 || hist[0].State != record.Resolved || hist[0].Key != "A-SAME" {
				t.Fatalf("history of A-SAME = %+v, %v", hist, err)
			}
			var back []string
			for _, m := range h.stored(h.route.SourceURL) {
				back = append(back, l.keyOf(t, m.body))
			}
			if slices.Sort(back); !slices.Equal(back, []string{"A-NEW", "A-OTHER"}) {
				t.Fatalf("replayed %v, want A-NEW and A-OTHER", back)
			}
		})
	}
}

// A part hash compares the part only: a body that differs elsewhere is the
// same payload.
func TestAlreadyAppliedComparesThePartTheRouteHashes(t *testing.T) {
	l := keyedLanes[1]
	h := l.harness(t)
	store := idempotency.NewMemoryStore()
	complete(t, h, store, "P-1", l.body("P-1"))
	h.deadLetter(h.route, msg{body: strings.Replace(l.body("P-1"), `"eventType":"shipment.requested"`, `"eventType":"shipment.requested","traceId":"t-9"`, 1)})
	h.clock.Advance(due)
	s := h.run(h.engine(func(o *replay.Options) { o.Completions = &replaytest.MemoryCompletions{Store: store, Scope: "invoice"} }), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 1, Applied: 1})
}

// A record whose hash this version does not compute (an earlier version's,
// unversioned) is never the same payload: the dead letter goes back for the
// consumer to decide.
func TestAlreadyAppliedNeedsAComparableHash(t *testing.T) {
	h := newHarness(t, false, nil)
	h.deadLetter(h.route, msg{body: order("U-1")})
	h.clock.Advance(due)
	s := h.run(h.engine(func(o *replay.Options) { o.Completions = hashCompletions{"U-1": "0123abcd"} }), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 1, Replayed: 1})
}

// untouchable is a Completions that fails the test when it is read.
type untouchable struct{ t *testing.T }

func (u untouchable) Completed(context.Context, []string) (map[string]string, error) {
	u.t.Error("Completions read on a route whose consumer writes no completion records")
	return nil, errors.New("not to be read")
}

// A lane whose consumer writes no completion records: nothing reads them,
// the canary gate says it is skipped and why, no dead letter is removed as
// applied, and the lane is never held at the canary (before, a lane whose
// consumer wrote no records was held at CanaryLimit replays a run forever).
func TestRouteWithoutRecordsReadsNoCompletions(t *testing.T) {
	h := newHarness(t, false, nil)
	h.route.Records = false
	opts := func(o *replay.Options) {
		o.Completions = untouchable{t}
		o.Health = func(context.Context) error { return nil }
	}
	for run := range 3 {
		keys := keysOf(fmt.Sprintf("NR%d", run), 20)
		for _, k := range keys {
			h.deadLetter(h.route, msg{body: order(k)})
		}
		h.clock.Advance(due)
		s := h.run(h.engine(opts), replay.Request{})
		rs := s.Routes[0]
		g := rs.Gates[1]
		if g.Name != replay.GateCanary || g.Decision != replay.GateSkipped || g.Detail != "the lane's consumer writes no completion records" {
			t.Fatalf("run %d: canary gate %+v", run, g)
		}
		if s.Total.Replayed != 20 || s.Total.Applied != 0 || len(rs.ReplayedKeys) != 20 {
			t.Fatalf("run %d: %+v, %d replayed keys; want the 20 new dead letters replayed", run, countsOf(s.Total), len(rs.ReplayedKeys))
		}
		if visible, inFlight := h.depth(h.route.DLQURL); visible+inFlight != 0 {
			t.Fatalf("run %d: the DLQ holds %d", run, visible+inFlight)
		}
		h.drainQueue(h.route.SourceURL) // never recorded as completed
	}
	lines := h.logLines("replay gate")
	if !slices.ContainsFunc(lines, func(m map[string]any) bool {
		return m["gate"] == replay.GateCanary && m["decision"] == string(replay.GateSkipped) && m["reason"] == "the lane's consumer writes no completion records"
	}) {
		t.Fatalf("no gate line says the canary is skipped: %v", lines)
	}
}

func TestRouteValidateChecksTheExpressions(t *testing.T) {
	base := replay.Route{Name: "shipments", DLQURL: "https://q/dlq", SourceURL: "https://q/src", ParkingURL: "https://q/park"}
	with := func(f func(*replay.Route)) replay.Route { r := base; f(&r); return r }
	tests := []struct {
		name  string
		route replay.Route
		want  []string // in the error; none: valid
		expr  bool     // the error wraps ErrExpression
	}{
		{"no key, no records", base, nil, false},
		{"a nested key, a part hash, records", with(func(r *replay.Route) { r.Key, r.PayloadHash, r.Records = "shipment.id", "shipment", true }), nil, false},
		{"a key that does not compile", with(func(r *replay.Route) { r.Key = "shipment.[" }), []string{`route "shipments": key "shipment.["`, "not a JMESPath expression"}, true},
		{"a payload hash that does not compile", with(func(r *replay.Route) { r.PayloadHash = "{a: " }), []string{`route "shipments": payloadHash "{a: "`, "not a JMESPath expression"}, true},
		{"records without a key", with(func(r *replay.Route) { r.Records = true }), []string{`route "shipments": records needs a key`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.route.Validate()
			if (err != nil) != (len(tt.want) > 0) {
				t.Fatalf("Validate() = %v, want an error: %v", err, len(tt.want) > 0)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if errors.Is(err, replay.ErrExpression) != tt.expr {
				t.Errorf("errors.Is(%v, ErrExpression) = %v, want %v", err, !tt.expr, tt.expr)
			}
			if err == nil {
				return
			}
			// A run refuses it before it does anything.
			h := newHarness(t, false, nil)
			if _, err := h.engine().Run(context.Background(), replay.Request{Routes: []replay.Route{tt.route}}); !errors.Is(err, replay.ErrInvalidRequest) {
				t.Fatalf("Run = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

// REPLAY_ROUTES is JSON: the route's fields under their documented names.
func TestRouteJSON(t *testing.T) {
	var routes []replay.Route
	doc := `[{"name":"shipments","dlqUrl":"d","sourceUrl":"s","parkingUrl":"p","key":"shipment.id","payloadHash":"shipment","records":true}]`
	if err := json.Unmarshal([]byte(doc), &routes); err != nil {
		t.Fatal(err)
	}
	want := replay.Route{Name: "shipments", DLQURL: "d", SourceURL: "s", ParkingURL: "p", Key: "shipment.id", PayloadHash: "shipment", Records: true}
	if len(routes) != 1 || routes[0] != want {
		t.Fatalf("routes = %+v", routes)
	}
	b, err := json.Marshal(want)
	if err != nil || string(b) != strings.TrimSuffix(strings.TrimPrefix(doc, "["), "]") {
		t.Fatalf("marshal = %s, %v", b, err)
	}
}

func TestFilterKeysAndTheirDeprecatedName(t *testing.T) {
	tests := []struct {
		doc     string
		want    []string
		wantErr string
	}{
		{`{"keys":["K-1","K-2"]}`, []string{"K-1", "K-2"}, ""},
		{`{"orderIds":["ORD-1"]}`, []string{"ORD-1"}, ""},
		{`{"keys":["K-1"],"orderIds":["ORD-1"]}`, nil, "both given"},
	}
	for _, tt := range tests {
		var f replay.Filter
		err := json.Unmarshal([]byte(tt.doc), &f)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want %q", tt.doc, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(f.Keys, tt.want) {
			t.Errorf("%s: keys %v, %v; want %v", tt.doc, f.Keys, err, tt.want)
		}
		if b, _ := json.Marshal(f); !strings.Contains(string(b), `"keys":`) || strings.Contains(string(b), "orderIds") {
			t.Errorf("%s: written back as %s, want keys only", tt.doc, b)
		}
	}
}

// A run summary stored by an earlier version names its replayed keys
// "replayedOrders": the next run's canary still reads them.
func TestRouteSummaryReadsReplayedOrders(t *testing.T) {
	for doc, want := range map[string][]string{
		`{"route":"orders","replayedOrders":["ORD-1","ORD-2"],"replayed":2}`: {"ORD-1", "ORD-2"},
		`{"route":"orders","replayedKeys":["K-1"],"replayed":1}`:             {"K-1"},
	} {
		var rs replay.RouteSummary
		if err := json.Unmarshal([]byte(doc), &rs); err != nil || !slices.Equal(rs.ReplayedKeys, want) || rs.Replayed != len(want) || rs.Route != "orders" {
			t.Errorf("%s: %+v, %v", doc, rs, err)
		}
	}
}
