package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/holdtest"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// groupsHarness is a FIFO route whose consumer holds its groups, its holds
// in memory.
type groupsHarness struct {
	*harness
	store *holdtest.Memory
}

func newGroupsHarness(t *testing.T, onError string) *groupsHarness {
	t.Helper()
	g := &groupsHarness{harness: newHarness(t, true, nil), store: holdtest.NewMemory()}
	g.route.Groups = onError
	return g
}

// engine runs with the route's holds in store (the harness's by default).
func (g *groupsHarness) engine(store hold.Store, mod ...func(*replay.Options)) *replay.Engine {
	if store == nil {
		store = g.store
	}
	return g.harness.engine(append([]func(*replay.Options){func(o *replay.Options) { o.Holds = replay.HoldsOf(store, g.q) }}, mod...)...)
}

// begin holds group behind head, written at at.
func (g *groupsHarness) begin(group, head string, at time.Time) hold.Hold {
	g.t.Helper()
	h, err := g.store.Begin(context.Background(), hold.Hold{Group: group, Head: head}, at)
	if err != nil {
		g.t.Fatal(err)
	}
	return h
}

// drain turns the hold of group draining at at.
func (g *groupsHarness) drain(group string, at time.Time) {
	g.t.Helper()
	h := g.hold(group)
	h.State = hold.Draining
	if _, err := g.store.Update(context.Background(), h, at); err != nil {
		g.t.Fatal(err)
	}
}

// hold is the hold of group; the test fails when it has none.
func (g *groupsHarness) hold(group string) hold.Hold {
	g.t.Helper()
	hs, err := g.store.Holds(context.Background(), []string{group})
	if err != nil {
		g.t.Fatal(err)
	}
	h, ok := hs[group]
	if !ok {
		g.t.Fatalf("group %q is not held", group)
	}
	return h
}

// exhausted dead-letters an order of group whose replays are spent (it is
// parked as replay-exhausted), with extra attributes.
func (g *groupsHarness) exhausted(id, group, original string, attrs map[string]types.MessageAttributeValue) {
	g.deadLetter(g.route, msg{body: order(id), group: group, attrs: named(attrs, original),
		meta: &replay.Metadata{ReplayCount: replay.DefaultMaxReplays, OriginalMessageID: original}})
}

// named is attrs with the origin the consumer knows the message by
// (hold.OriginAttribute), as a replayed head carries it.
func named(attrs map[string]types.MessageAttributeValue, origin string) map[string]types.MessageAttributeValue {
	out := map[string]types.MessageAttributeValue{hold.Attribute: hold.OriginAttribute(origin)}
	for k, v := range attrs {
		out[k] = v
	}
	return out
}

// triggers returns the groups of the drain triggers in the source queue.
func (g *groupsHarness) triggers() []string {
	var out []string
	for _, m := range g.q.Messages(g.route.SourceURL) {
		a, ok := m.MessageAttributes[hold.Attribute]
		if aws.ToString(m.Body) != hold.TriggerBody || !ok || !strings.Contains(aws.ToString(a.StringValue), `"drain":true`) {
			g.t.Fatalf("source holds a message that is not a drain trigger: %+v", m)
		}
		out = append(out, m.Attributes["MessageGroupId"])
	}
	return out
}

func TestGroupsParkedHeadIsToldToItsHold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		onError  string
		attrs    map[string]types.MessageAttributeValue
		state    hold.State
		triggers int
	}{
		{name: "hold keeps the group held", onError: "hold", state: hold.Held},
		{name: "skip releases the group", onError: "skip", state: hold.Draining, triggers: 1},
		{
			// A held record the consumer sent back as its group's head
			// names its origin in the hold's attribute: that is the head,
			// whatever id the replay metadata carries.
			name: "a record sent back is named by its origin", onError: "hold", state: hold.Held,
			attrs: map[string]types.MessageAttributeValue{hold.Attribute: strAttr(`{"origin":"orig-head"}`)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroupsHarness(t, tc.onError)
			g.begin("acct-1", "orig-head", g.clock.Now())
			original := "orig-head"
			if tc.attrs != nil {
				original = "dlq-copy"
			}
			g.exhausted("ORD-1", "acct-1", original, tc.attrs)
			g.clock.Advance(due)
			s := g.run(g.engine(nil), replay.Request{})
			checkCounts(t, s.Total, counts{Examined: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}})
			if n := len(g.q.Messages(g.route.ParkingURL)); n != 1 {
				t.Fatalf("%d messages parked, want 1", n)
			}
			h := g.hold("acct-1")
			head := "orig-head"
			if tc.state == hold.Draining {
				head = "" // released past it (hold.Keeper.Release)
			}
			if h.Parked != "parked: "+replay.ReasonReplayExhausted || h.State != tc.state || h.Head != head {
				t.Fatalf("hold = %+v, want parked: %s, %s", h, replay.ReasonReplayExhausted, tc.state)
			}
			if got := g.triggers(); len(got) != tc.triggers || tc.triggers == 1 && got[0] != "acct-1" {
				t.Fatalf("drain triggers of groups %q, want %d of acct-1", got, tc.triggers)
			}
		})
	}
}

// Every park tells the hold, whatever its reason: here the expiry rescue
// of a head the health gate holds.
func TestGroupsRescuedHeadIsToldToItsHold(t *testing.T) {
	g := &groupsHarness{harness: newHarness(t, true, map[string]string{"MessageRetentionPeriod": "172800"}), store: holdtest.NewMemory()}
	g.route.Groups = "skip"
	id := g.deadLetter(g.route, msg{body: order("ORD-1"), group: "acct-1"})
	g.begin("acct-1", id, g.clock.Now())
	g.clock.Advance(36 * time.Hour) // 2 days' retention, a rescue window of 1
	s := g.run(g.engine(nil, func(o *replay.Options) { o.Health = func(context.Context) error { return errors.New("down") } }), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, DeadLettered: 1, Parked: map[string]int{replay.ReasonExpiryRescue: 1}})
	if h := g.hold("acct-1"); h.Parked != "parked: "+replay.ReasonExpiryRescue || h.State != hold.Draining {
		t.Fatalf("hold = %+v, want parked: %s, released", h, replay.ReasonExpiryRescue)
	}
	if got := g.triggers(); len(got) != 1 || got[0] != "acct-1" {
		t.Fatalf("drain triggers of groups %q, want one of acct-1", got)
	}
}

func TestGroupsParkOfAnotherThanTheHeadChangesNothing(t *testing.T) {
	g := newGroupsHarness(t, "skip")
	before := g.begin("acct-1", "orig-head", g.clock.Now().Add(-time.Hour))
	g.exhausted("ORD-2", "acct-1", "orig-later", nil)
	g.exhausted("ORD-3", "acct-2", "orig-head", nil) // the head's id, in a group that is not held
	g.clock.Advance(due)
	s := g.run(g.engine(nil), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 2, Parked: map[string]int{replay.ReasonReplayExhausted: 2}})
	if h := g.hold("acct-1"); h != before {
		t.Fatalf("hold = %+v, want it unchanged: %+v", h, before)
	}
	if hs, _ := g.store.List(context.Background()); len(hs) != 1 {
		t.Fatalf("holds = %+v, want acct-1's alone", hs)
	}
	if got := g.triggers(); len(got) != 0 {
		t.Fatalf("drain triggers of groups %q, want none", got)
	}
}

func TestGroupsSweepTriggersStaleDrainsAndReportsHolds(t *testing.T) {
	g := newGroupsHarness(t, "hold")
	now := g.clock.Now()
	g.begin("stale", "a", now.Add(-time.Hour))
	g.drain("stale", now.Add(-replay.DefaultHoldStale-time.Minute))
	g.begin("fresh", "b", now.Add(-time.Hour))
	g.drain("fresh", now.Add(-time.Minute))
	g.begin("held", "c", now.Add(-time.Hour))
	parked := g.begin("parked", "d", now.Add(-time.Hour))
	parked.Parked = "parked: " + replay.ReasonReplayExhausted
	if _, err := g.store.Update(context.Background(), parked, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}

	s := g.run(g.engine(nil), replay.Request{})
	if got := g.triggers(); len(got) != 1 || got[0] != "stale" {
		t.Fatalf("drain triggers of groups %q, want one of stale", got)
	}
	want := replay.GroupHolds{Held: 2, Draining: 2, ParkedHeads: 1}
	if got := s.Routes[0].Holds; got != want {
		t.Fatalf("summary holds = %+v, want %+v", got, want)
	}
	if p := g.hold("parked"); p.State != hold.Held {
		t.Fatalf("parked head's group = %+v: a lane that holds keeps it held", p)
	}
	if lines := g.logLines("replay holds"); len(lines) != 1 || lines[0]["held"] != 2.0 || lines[0]["draining"] != 2.0 || lines[0]["level"] != "INFO" {
		t.Fatalf("holds log lines = %v", lines)
	}

	// The next run within the deduplication window sends the same
	// trigger: SQS keeps one.
	g.clock.Advance(time.Second)
	g.run(g.engine(nil), replay.Request{})
	if got := g.triggers(); len(got) != 1 {
		t.Fatalf("drain triggers of groups %q after a second run, want one", got)
	}
}

func TestGroupsSweepOncePerRun(t *testing.T) {
	g := newGroupsHarness(t, "hold")
	lists := &countingStore{Store: g.store}
	for i := range 30 {
		g.exhausted(fmt.Sprintf("ORD-%d", i), fmt.Sprintf("acct-%d", i%5), fmt.Sprintf("orig-%d", i), nil)
	}
	g.clock.Advance(due)
	g.run(g.engine(lists, func(o *replay.Options) { o.Workers = 4 }), replay.Request{})
	if n := lists.lists.Load(); n != 1 {
		t.Fatalf("%d sweeps (List calls) in a run of 4 workers, want 1", n)
	}
}

func TestGroupsDryRunListsAndChangesNothing(t *testing.T) {
	g := newGroupsHarness(t, "skip")
	now := g.clock.Now()
	g.begin("stale", "a", now.Add(-time.Hour))
	g.drain("stale", now.Add(-time.Hour))
	head := g.begin("acct-1", "orig-head", now)
	g.exhausted("ORD-1", "acct-1", "orig-head", nil)
	g.clock.Advance(due)
	s := g.run(g.engine(nil), replay.Request{DryRun: true})
	if want := (replay.GroupHolds{Held: 1, Draining: 1}); s.Routes[0].Holds != want {
		t.Fatalf("summary holds = %+v, want %+v", s.Routes[0].Holds, want)
	}
	if got := g.triggers(); len(got) != 0 {
		t.Fatalf("a dry run sent drain triggers of groups %q", got)
	}
	if h := g.hold("acct-1"); h != head {
		t.Fatalf("a dry run changed the hold: %+v, want %+v", h, head)
	}
}

func TestGroupsNeedAFIFORoute(t *testing.T) {
	h := newHarness(t, false, nil)
	for _, tc := range []struct {
		groups string
		want   string
	}{
		{"hold", "needs a FIFO route"},
		{"skip", "needs a FIFO route"},
	} {
		rt := h.route
		rt.Groups = tc.groups
		_, err := h.engine().Run(context.Background(), replay.Request{Routes: []replay.Route{rt}})
		if !errors.Is(err, replay.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"orders"`) {
			t.Errorf("groups %q on a standard route: err = %v, want ErrInvalidRequest naming the route and %q", tc.groups, err, tc.want)
		}
	}
	fifo := newHarness(t, true, nil).route
	for groups, valid := range map[string]bool{"": true, "hold": true, "skip": true, "always": false, "HOLD": false} {
		fifo.Groups = groups
		if err := fifo.Validate(); (err == nil) != valid {
			t.Errorf("groups %q on a FIFO route: err = %v, want valid %v", groups, err, valid)
		}
	}
}

func TestGroupsWithoutAKeeperAreReported(t *testing.T) {
	for name, holds := range map[string]func(replay.Route) *hold.Keeper{
		"no Holds":         nil,
		"no keeper":        func(replay.Route) *hold.Keeper { return nil },
		"an invalid one":   func(replay.Route) *hold.Keeper { return &hold.Keeper{Store: holdtest.NewMemory()} },
		"no source sender": replay.HoldsOf(holdtest.NewMemory(), nil),
	} {
		t.Run(name, func(t *testing.T) {
			g := newGroupsHarness(t, "hold")
			g.exhausted("ORD-1", "acct-1", "orig-head", nil)
			g.clock.Advance(due)
			s := g.run(g.harness.engine(func(o *replay.Options) { o.Holds = holds }), replay.Request{})
			checkCounts(t, s.Total, counts{Examined: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}})
			if got := s.Routes[0].Holds; got.Error == "" || got.Held != 0 {
				t.Fatalf("summary holds = %+v, want an error saying why they were not swept", got)
			}
			if lines := g.logLines("replay holds"); len(lines) != 1 || lines[0]["level"] != "WARN" {
				t.Fatalf("holds log lines = %v, want one warning", lines)
			}
		})
	}
}

func TestGroupsFailuresAreWarningsNotOutcomes(t *testing.T) {
	down := errors.New("store down")
	g := newGroupsHarness(t, "hold")
	g.begin("acct-1", "orig-head", g.clock.Now())
	g.exhausted("ORD-1", "acct-1", "orig-head", nil)
	g.clock.Advance(due)
	s := g.run(g.engine(&failingStore{Store: g.store, holds: down, list: down}), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}, Errors: 1})
	if n := len(g.q.Messages(g.route.ParkingURL)); n != 1 {
		t.Fatalf("%d messages parked, want 1", n)
	}
	rs := s.Routes[0]
	if rs.Holds.ParkErrors != 1 || !strings.Contains(rs.Holds.Error, "store down") {
		t.Fatalf("summary holds = %+v, want a park error and the sweep's error", rs.Holds)
	}
	lines := g.logLines("replay message")
	if len(lines) != 1 || lines[0]["outcome"] != "parked" || !strings.Contains(lines[0]["warning"].(string), "store down") {
		t.Fatalf("message lines = %v, want parked with the hold's failure as warning", lines)
	}
	if h := g.hold("acct-1"); h.Parked != "" {
		t.Fatalf("hold = %+v, want it untold", h)
	}
}

func TestGroupsParkedRetriesAConflict(t *testing.T) {
	g := newGroupsHarness(t, "hold")
	g.begin("acct-1", "orig-head", g.clock.Now())
	g.exhausted("ORD-1", "acct-1", "orig-head", nil)
	g.clock.Advance(due)
	store := &failingStore{Store: g.store, conflicts: 1}
	s := g.run(g.engine(store), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}})
	if h := g.hold("acct-1"); h.Parked != "parked: "+replay.ReasonReplayExhausted || store.conflicts != 0 {
		t.Fatalf("hold = %+v after %d conflicts left, want told after one", h, store.conflicts)
	}
	if s.Routes[0].Holds.ParkErrors != 0 {
		t.Fatalf("summary holds = %+v, want no park error", s.Routes[0].Holds)
	}
}

// countingStore counts the List calls of a store.
type countingStore struct {
	hold.Store
	lists atomic.Int32
}

func (s *countingStore) List(ctx context.Context) ([]hold.Hold, error) {
	s.lists.Add(1)
	return s.Store.List(ctx)
}

// failingStore fails the calls of a store it is told to: Holds and List
// with their errors, and the first conflicts Updates with a conflict.
type failingStore struct {
	hold.Store
	holds, list error
	conflicts   int // used by one goroutine: the route's one worker
}

func (s *failingStore) Holds(ctx context.Context, groups []string) (map[string]hold.Hold, error) {
	if s.holds != nil {
		return nil, s.holds
	}
	return s.Store.Holds(ctx, groups)
}

func (s *failingStore) List(ctx context.Context) ([]hold.Hold, error) {
	if s.list != nil {
		return nil, s.list
	}
	return s.Store.List(ctx)
}

func (s *failingStore) Update(ctx context.Context, h hold.Hold, now time.Time) (hold.Hold, error) {
	if s.conflicts > 0 {
		s.conflicts--
		return hold.Hold{}, hold.ErrConflict
	}
	return s.Store.Update(ctx, h, now)
}

// A head whose consumer applied it but could not move its hold on before
// its last delivery dead-letters with its completion recorded: the replay
// removes it as already applied, and its group drains, since the head will
// never come back (nor needs to). A removed dead letter that is not the
// head changes nothing.
func TestGroupsAppliedHeadDrainsItsGroup(t *testing.T) {
	g := newGroupsHarness(t, "hold")
	store := idempotency.NewMemoryStore()
	rcv := &idempotency.Receiver{Store: store, Scope: "invoice"}
	for _, id := range []string{"ORD-1", "ORD-9"} {
		body := order(id)
		if _, err := rcv.Do(context.Background(), id, sumOf(t, g.route, body), func(context.Context) (string, error) { return "INV-" + id, nil }); err != nil {
			t.Fatal(err)
		}
	}
	g.begin("acct-1", "orig-1", g.clock.Now().Add(-time.Hour))
	other := g.begin("acct-2", "orig-2", g.clock.Now().Add(-time.Hour))
	g.deadLetter(g.route, msg{body: order("ORD-1"), group: "acct-1", attrs: named(nil, "orig-1"), meta: &replay.Metadata{ReplayCount: 1, OriginalMessageID: "orig-1"}})
	g.deadLetter(g.route, msg{body: order("ORD-9"), group: "acct-2", attrs: named(nil, "orig-9"), meta: &replay.Metadata{ReplayCount: 1, OriginalMessageID: "orig-9"}})
	g.clock.Advance(due)
	s := g.run(g.engine(nil, func(o *replay.Options) {
		o.Completions = &replaytest.MemoryCompletions{Store: store, Scope: "invoice"}
	}), replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 2, Applied: 2})
	if h := g.hold("acct-1"); h.State != hold.Draining {
		t.Fatalf("acct-1's hold = %+v, want draining: its head was applied", h)
	}
	if h := g.hold("acct-2"); h != other {
		t.Fatalf("acct-2's hold = %+v, want it unchanged (%+v): the removed dead letter is not its head", h, other)
	}
	if got := g.triggers(); len(got) != 1 || got[0] != "acct-1" {
		t.Fatalf("drain triggers of groups %q, want one of acct-1", got)
	}
}

// The sweep drains a group held behind a head (not parked) that the
// consumer's completion records say it applied with the same payload: a
// copy acknowledged by one invocation while another held the group, so
// that no copy of the head will come to move the hold on. A head completed
// with another payload, or not at all, or parked, or whose hold keeps no
// body, stays held; a route whose consumer writes no records, or a dry run,
// drains nothing.
func TestGroupsSweepDrainsAGroupHeldBehindAnAppliedHead(t *testing.T) {
	type held struct {
		group, head, body, parked string
		drains                    bool
	}
	groups := []held{
		{group: "applied", head: "m-1", body: order("ORD-1"), drains: true},
		{group: "other-payload", head: "m-2", body: strings.Replace(order("ORD-2"), "99.80", "10.00", 1)},
		{group: "not-applied", head: "m-3", body: order("ORD-3")},
		{group: "parked", head: "m-4", body: order("ORD-4"), parked: "invalid: total-mismatch"},
		{group: "no-body", head: "m-5"},
	}
	for _, tc := range []struct {
		name    string
		records bool
		dryRun  bool
	}{{name: "records", records: true}, {name: "no records"}, {name: "dry run", records: true, dryRun: true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroupsHarness(t, "hold")
			g.route.Records = tc.records
			store := idempotency.NewMemoryStore()
			rcv := &idempotency.Receiver{Store: store, Scope: "invoice"}
			for _, id := range []string{"ORD-1", "ORD-2", "ORD-4"} {
				if _, err := rcv.Do(context.Background(), id, sumOf(t, g.route, order(id)), func(context.Context) (string, error) { return "INV-" + id, nil }); err != nil {
					t.Fatal(err)
				}
			}
			for _, h := range groups {
				if _, err := g.store.Begin(context.Background(), hold.Hold{Group: h.group, Head: h.head, HeadBody: h.body, Parked: h.parked}, g.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
			s := g.run(g.engine(nil, func(o *replay.Options) {
				o.Completions = &replaytest.MemoryCompletions{Store: store, Scope: "invoice"}
			}), replay.Request{DryRun: tc.dryRun})
			drains := tc.records && !tc.dryRun
			var want []string
			for _, h := range groups {
				got := g.hold(h.group)
				if drained := got.State == hold.Draining; drained != (h.drains && drains) {
					t.Errorf("group %q: hold %+v, want it draining: %v", h.group, got, h.drains && drains)
				}
				if h.drains && drains {
					want = append(want, h.group)
				}
			}
			if got := g.triggers(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("drain triggers of groups %q, want %q", got, want)
			}
			rs := s.Routes[0].Holds
			if wantN := len(want); rs.AppliedHeads != wantN || rs.Held != len(groups) || rs.Error != "" {
				t.Errorf("summary holds %+v, want %d applied heads of %d held, no error", rs, wantN, len(groups))
			}
		})
	}
}

// A sweep that cannot read the completions says so in the summary, and
// drains nothing.
func TestGroupsSweepReportsUnreadCompletions(t *testing.T) {
	g := newGroupsHarness(t, "hold")
	if _, err := g.store.Begin(context.Background(), hold.Hold{Group: "acct-1", Head: "m-1", HeadBody: order("ORD-1")}, g.clock.Now()); err != nil {
		t.Fatal(err)
	}
	s := g.run(g.engine(nil, func(o *replay.Options) { o.Completions = failingCompletions{} }), replay.Request{})
	if rs := s.Routes[0].Holds; !strings.Contains(rs.Error, "completions") || rs.AppliedHeads != 0 {
		t.Fatalf("summary holds %+v, want the unread completions said", rs)
	}
	if h := g.hold("acct-1"); h.State != hold.Held {
		t.Fatalf("hold %+v, want it held", h)
	}
}
