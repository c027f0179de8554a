package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/internal/sample/tax"
)

// The paths of issue 22, "A FIFO lane keeps each group's order through any
// failure of that group", as named scenarios (TestScenario/<name>), and the
// order checker fed the histories it must refuse.

// heldLane is a scenario's FIFO lane whose consumer holds its groups.
func heldLane(seed uint64, onError hold.OnError) (Config, *builder) {
	c := quiet(seed)
	c.Queues.FIFO = true
	c.Lane.Groups = onError
	b := newBuilder(seed)
	b.w.lane = c.Lane
	return c, b
}

// accounts publishes n orders in each of groups accounts ("acct-0", ...),
// in rounds a second apart from at: round r holds the r-th order of every
// account. It returns each account's orders in publication order.
func (b *builder) accounts(groups, n int, at time.Duration) [][]*Publication {
	out := make([][]*Publication, groups)
	for r := range n {
		for g := range groups {
			p := b.valid(1, at+time.Duration(r*groups+g)*time.Second)[0]
			p.Group = fmt.Sprintf("acct-%d", g)
			out[g] = append(out[g], p)
		}
	}
	return out
}

// orderIDs are the orders of pubs.
func orderIDs(pubs []*Publication) []string {
	out := make([]string, len(pubs))
	for i, p := range pubs {
		out[i] = p.OrderID
	}
	return out
}

// frozenAccounts is issue 22's trace: four accounts of fifteen orders; the
// tax service refuses acct-1's for twenty replay schedule periods and
// acct-2's for three, then serves them.
func frozenAccounts(seed uint64, onError hold.OnError) Config {
	c, b := heldLane(seed, onError)
	b.accounts(4, 15, time.Minute)
	c.Publications = b.pubs
	c.Freezes = []Freeze{
		{Group: "acct-1", From: 0, To: 20 * c.Replay.Schedule},
		{Group: "acct-2", From: 0, To: 3 * c.Replay.Schedule},
	}
	return c
}

// groupsAt checks what a scenario's lane counted of its held groups.
func groupsAt(t *testing.T, rep *Report, name string, got, least int) {
	t.Helper()
	if got < least {
		t.Errorf("%s = %d; want at least %d (groups: %+v)", name, got, least, rep.Stats.Groups)
	}
}

func groupScenarios() []scenario {
	return []scenario{
		{
			name: "group-frozen-many-periods", issue: "22: a group failing for many schedule periods keeps its order",
			cfg: func() Config { return frozenAccounts(2201, hold.KeepHeld) },
			check: func(t *testing.T, rep *Report) {
				g := rep.Stats.Groups
				groupsAt(t, rep, "groups held", g.Held, 2)
				groupsAt(t, rep, "records held", g.RecordsHeld, 14+14)
				if g.Releases > 0 || g.ReleasedHeads > 0 {
					t.Errorf("%d releases (%d heads released past); want none: a head that heals comes back by itself, or from the parking queue, before its group", g.Releases, g.ReleasedHeads)
				}
			},
		},
		{
			name: "poison-head-released", issue: "22: a poison head holds its group until the operator releases it",
			cfg: func() Config { return poisonHeadLane(2202, hold.KeepHeld) },
			check: func(t *testing.T, rep *Report) {
				g := rep.Stats.Groups
				groupsAt(t, rep, "records held behind the poison head", g.RecordsHeld, 5)
				groupsAt(t, rep, "operator releases", g.OperatorReleases, 1)
				groupsAt(t, rep, "records drained", g.Drained, 5)
			},
		},
		{
			name: "poison-head-skipped", issue: "22: a lane that skips goes on past a parked head without the operator",
			cfg: func() Config { return poisonHeadLane(2203, hold.Skip) },
			check: func(t *testing.T, rep *Report) {
				g := rep.Stats.Groups
				groupsAt(t, rep, "the engine's releases", g.Releases-g.OperatorReleases, 1)
				groupsAt(t, rep, "the engine's triggers", g.EngineTriggers, 1)
				if g.OperatorReleases > 0 {
					t.Errorf("the operator released %d groups on a lane that skips; want none", g.OperatorReleases)
				}
			},
		},
		{
			name: "held-record-fails-mid-drain", issue: "22: a held record that fails in a drain becomes its group's head",
			cfg: func() Config {
				c, b := heldLane(2204, hold.KeepHeld)
				accts := b.accounts(2, 6, time.Minute)
				c.Publications = b.pubs
				a := orderIDs(accts[0])
				c.Freezes = []Freeze{
					{Group: "acct-0", Orders: a[:1], From: 0, To: 4 * c.Replay.Schedule},
					{Group: "acct-0", Orders: a[2:3], From: 0, To: 12 * c.Replay.Schedule},
				}
				return c
			},
			check: func(t *testing.T, rep *Report) {
				g := rep.Stats.Groups
				groupsAt(t, rep, "held records sent back", g.SentBack, 1)
				if g.Releases > 0 {
					t.Errorf("%d releases; want none", g.Releases)
				}
			},
		},
		{
			name: "consumer-dies-mid-drain-swept", issue: "22: a drain its consumer died in is finished by the replay's sweep",
			cfg: consumerDiesMidDrain,
			check: func(t *testing.T, rep *Report) {
				g := rep.Stats.Groups
				groupsAt(t, rep, "the sweep's triggers", g.EngineTriggers, 1)
				groupsAt(t, rep, "records drained", g.Drained, 4)
				if rep.Stats.Applied == 0 {
					t.Errorf("no dead letter removed as already applied; want the head, applied before its drain died")
				}
			},
		},
		{
			name: "forged-origin-holds", issue: "22: metadata the engine did not write does not name a group's head",
			cfg: func() Config {
				// A producer publishes an order with replay metadata that
				// names another message (forgeRefunds), while the tax
				// service is down: the consumer holds its group behind the
				// name, the engine replays it under its own id (the
				// metadata is not sealed), and the group must still drain.
				c, b := heldLane(2206, hold.KeepHeld)
				p := b.forged(time.Minute, forgeRefunds(time.Minute))
				p.Group = "acct-0"
				for _, q := range b.valid(3, time.Minute+10*time.Second) {
					q.Group = "acct-0"
				}
				b.accounts(2, 2, 2*time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 20 * time.Minute, Mode: "down"}}
				return c
			},
		},
		{
			name: "copy-of-a-head-drains-past-the-next", issue: "22: two copies of a head never release its group past the next head",
			cfg: func() Config {
				// make sim SEEDS=300, seed 294. On a lane whose consumer
				// writes no records, nothing stops a copy of a head that a
				// second consumer receives while the first calls the tax
				// service: the copy applies a0, drains, finds a1 still
				// refused and makes it the head; the first consumer's move
				// of the hold to Draining conflicts, and its retry must not
				// drain the group past a1.
				c, b := heldLane(2207, hold.KeepHeld)
				c.Lane.NoRecords = true
				b.w.lane = c.Lane
				accts := b.accounts(1, 4, time.Minute)
				c.Publications = b.pubs
				a := orderIDs(accts[0])
				c.Freezes = []Freeze{
					{Group: "acct-0", Orders: a[:1], From: 0, To: 2 * c.Replay.Schedule},
					{Group: "acct-0", Orders: a[1:2], From: 0, To: 8 * c.Replay.Schedule},
				}
				c.Faults.ConcurrentCopy = 1
				return c
			},
		},
		{
			name: "slow-downstream-not-started", issue: "22: a record its invocation had no time to start keeps its group's order",
			cfg: func() Config {
				// The tax service answers after the client's budget (12 s
				// against 10) for half an hour: every invocation (30 s)
				// dies in its third call, and the same records of each
				// batch are never started on any receive until SQS
				// dead-letters them. Their groups were never held: the
				// next order of each goes first.
				c, b := heldLane(2208, hold.KeepHeld)
				b.accounts(10, 3, time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 30 * time.Minute, Mode: "slow", Latency: 12 * time.Second}}
				return c
			},
		},
		{
			name: "head-acknowledged-elsewhere-swept", issue: "22: a group held behind a head another invocation acknowledged is drained by the sweep",
			// make sim SEEDS=2000, seed 1751 (421 and 1814 alike). A batch is
			// delivered again while its first invocation applies the head
			// and drains the group; the second copy holds the group again
			// behind the head (a record delivered again holds its group
			// before it runs), and its write of the hold moving on fails.
			// The first copy's success deleted the head: no copy is left to
			// move the hold on, and only the sweep's read of the head's
			// completion record lets the group go on.
			cfg: func() Config { return RandomConfig(1751, 500) },
			check: func(t *testing.T, rep *Report) {
				swept := 0
				for _, r := range rep.Runs {
					for _, rs := range r.Summary.Routes {
						swept += rs.Holds.AppliedHeads
					}
				}
				if swept == 0 {
					t.Errorf("no run's sweep drained a group past an applied head; want the held group of seed 1751's race")
				}
			},
		},
		{
			name: "held-copy-sent-back-again", issue: "22: a held record sent back twice, its group released past the first copy, is a new head",
			// make sim SEEDS=2000, seed 1536. A drain sends a failed held
			// record back as the head and its Remove of the held copy
			// fails; the head's copy is routed as invalid and the operator
			// releases the group past it; the next drain runs the held copy,
			// which fails again and is sent back within five minutes of the
			// first send. Deduplicated by its origin and seq alone, SQS
			// dropped it, and the group waited for a head that never came.
			cfg: func() Config { return RandomConfig(1536, 500) },
			check: func(t *testing.T, rep *Report) {
				groupsAt(t, rep, "held records sent back twice, a new message each time", rep.Stats.Groups.Resent, 1)
			},
		},
	}
}

// consumerDiesMidDrain: acct-0's head a0 is refused for a while, so a1..a5
// are held behind it. It heals as the replayed head has its last delivery:
// the consumer applies it and dies in the drain (a1's first completion).
// The head is dead-lettered and the replay removes it as already applied:
// nothing of acct-0 is left to come, and only the replay's sweep (a
// trigger for a hold left draining, HoldStale after its last change)
// resumes the drain, whose consumer dies twice more (a2's and a3's first
// completions) before it ends.
func consumerDiesMidDrain() Config {
	c, b := heldLane(2205, hold.KeepHeld)
	accts := b.accounts(2, 6, time.Minute)
	c.Publications = b.pubs
	a := orderIDs(accts[0])
	c.Freezes = []Freeze{{Group: "acct-0", Orders: a[:1], From: 0, To: 4 * c.Replay.Schedule}}
	c.Faults.CrashFirstCompletion = a[1:4]
	return c
}

// TestCheckOrder: the order checker refuses a group whose later order was
// invoiced first, unless the earlier one is a head its group was released
// past; orders of other groups do not count.
func TestCheckOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		invoiced []int // the publications, in the order the service invoices them
		released []int
		want     int
	}{
		{"in order", []int{0, 1, 2, 3}, nil, 0},
		{"later first", []int{0, 2, 1, 3}, nil, 1},
		{"other groups interleaved", []int{3, 0, 1, 2}, nil, 0},
		{"a released head last", []int{1, 2, 0, 3}, []int{0}, 0},
		{"a released head never", []int{1, 2, 3}, []int{0}, 0},
		{"a later one first, past a released head", []int{2, 1, 3}, []int{0}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCheckSim(t)
			s.pubs = nil
			for i, g := range []string{"g-a", "g-a", "g-a", "g-b"} {
				s.pubs = append(s.pubs, &Publication{N: i, Kind: KindValid, OrderID: fmt.Sprintf("ORD-%d", i), Group: g})
			}
			s.next = len(s.pubs)
			for _, n := range tc.invoiced {
				s.tax.apply(s.pubs[n].OrderID, tax.InvoiceRequest{OrderID: s.pubs[n].OrderID})
			}
			for _, n := range tc.released {
				s.groups.released[n] = true
			}
			s.checkOrder()
			if got := kinds(s)["out-of-order"]; got != tc.want {
				t.Errorf("violations %v; want %d out-of-order", s.violations, tc.want)
			}
		})
	}
}

// TestOrderBreaksWithoutGroups runs issue 22's trace on a FIFO lane whose
// consumer does not hold its groups (batch.Options.Groups nil): a frozen
// account's first order dead-letters alone, the replay sends it back behind
// its successors, and they are invoiced first. The order checker must say
// so; with Groups, the same trace keeps its order
// (TestScenario/group-frozen-many-periods).
func TestOrderBreaksWithoutGroups(t *testing.T) {
	s, err := New(frozenAccounts(2201, ""))
	if err != nil {
		t.Fatal(err)
	}
	s.Run()
	s.checkOrder()
	if got := kinds(s)["out-of-order"]; got == 0 {
		t.Fatalf("no out-of-order violation without Groups; violations %v", s.violations)
	}
}

// TestCheckReplayedHeld: a replay of a record the consumer acknowledged
// into its group's hold is refused; one of a record stored behind the hold
// by an invocation that did not acknowledge it is counted, not refused;
// another message of the held record's publication is neither.
func TestCheckReplayedHeld(t *testing.T) {
	for _, tc := range []struct {
		name     string
		acked    bool
		replayed string
		want     int // held-replayed violations
		counted  int
	}{
		{"acknowledged into the hold", true, "m-1", 1, 0},
		{"held, not acknowledged", false, "m-1", 0, 1},
		{"another message of the publication", false, "m-2", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newCheckSim(t)
			g := s.groups
			g.held["g-a"] = map[string]heldRecord{"01": {id: "m-1", pub: 0}}
			g.heldPubs[0] = 1
			if tc.acked {
				g.acknowledgedHeld("m-1")
			}
			s.replayedHeld(newRunState("sched-0001"), tc.replayed)
			if got := kinds(s)["held-replayed"]; got != tc.want {
				t.Errorf("violations %v; want %d held-replayed", s.violations, tc.want)
			}
			if g.stats.HeldDeadLettered != tc.counted {
				t.Errorf("HeldDeadLettered = %d; want %d", g.stats.HeldDeadLettered, tc.counted)
			}
		})
	}
}

// poisonHeadLane is a lane whose group acct-0 has a poison order at its
// head and five valid ones behind it, beside two accounts of three orders.
func poisonHeadLane(seed uint64, onError hold.OnError) Config {
	c, b := heldLane(seed, onError)
	b.accounts(2, 3, time.Minute)
	p := b.poison(time.Minute + 10*time.Second)
	p.Group = "acct-0"
	for _, q := range b.valid(5, time.Minute+20*time.Second) {
		q.Group = "acct-0"
	}
	c.Publications = b.pubs
	return c
}
