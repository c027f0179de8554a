package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// quiet is a scenario's starting point: no random faults, no trouble at the
// tax service, a deduplicating service, standard queues, the sample's lane
// (a scenario of another sets it, and its builder's: see appliedRemoval).
func quiet(seed uint64) Config {
	c := RandomConfig(seed, 0)
	c.Lane = Lane{}
	c.Window = 30 * time.Minute
	c.Mix = Mix{}
	c.Faults = Faults{}
	c.ServiceFaults = ServiceFaults{}
	c.Phases = nil
	c.Service = Deduplicating
	c.Queues.FIFO = false
	c.Queues.DLQRetention = 4 * 24 * time.Hour
	c.Queues.MaxReceiveCount = 3
	c.Replay.Options.BackoffBase = time.Minute
	c.Replay.Options.BackoffMax = 30 * time.Minute
	c.Replay.Options.ExpiryRescueWindow = time.Hour
	c.DrainLimit = 2 * 24 * time.Hour
	return c
}

// builder makes the publications of a scenario.
type builder struct {
	w    *workload
	pubs []*Publication
}

func newBuilder(seed uint64) *builder {
	return &builder{w: &workload{rng: rand.New(rand.NewPCG(seed, 1)), seed: seed}}
}

func (b *builder) add(p *Publication) *Publication {
	p.N = len(b.pubs)
	if p.Of == 0 && p.Kind != KindDuplicate && p.Kind != KindConflict {
		p.Of = -1
	}
	b.w.lane.describe(p)
	if p.OrderID == "" {
		p.OrderID = b.w.lane.keyOf(p.Body)
	}
	p.Group = b.w.lane.group(p, 4, b.pubs)
	b.pubs = append(b.pubs, p)
	return p
}

// valid adds n valid orders published from at, a second apart.
func (b *builder) valid(n int, at time.Duration) []*Publication {
	var out []*Publication
	for i := range n {
		id := b.w.key(fmt.Sprintf("ORD-S-%05d", len(b.pubs)))
		out = append(out, b.add(&Publication{Kind: KindValid, Body: b.w.validBody(id, 0), At: at + time.Duration(i)*time.Second}))
	}
	return out
}

// spread adds n valid orders published evenly over [from, from+over).
func (b *builder) spread(n int, from, over time.Duration) []*Publication {
	var out []*Publication
	for i := range n {
		id := b.w.key(fmt.Sprintf("ORD-S-%05d", len(b.pubs)))
		at := from + over*time.Duration(i)/time.Duration(n)
		out = append(out, b.add(&Publication{Kind: KindValid, Body: b.w.validBody(id, 0), At: at}))
	}
	return out
}

// poison adds an order the tax service fails for ever (KindPoison).
func (b *builder) poison(at time.Duration) *Publication {
	id := b.w.key(fmt.Sprintf("ORD-S-%05d-%s", len(b.pubs), poisonMark))
	return b.add(&Publication{Kind: KindPoison, Body: b.w.validBody(id, 0), At: at})
}

// forged adds a valid order published with forged replay metadata.
func (b *builder) forged(at time.Duration, f *Forgery) *Publication {
	p := b.valid(1, at)[0]
	p.Forge = f
	return p
}

// invalidOrder adds an order with orderId id (raw JSON bytes allowed) that
// must end in the invalid queue with reason.
func (b *builder) invalidOrder(id string, at time.Duration, reason order.Reason) *Publication {
	body := b.w.validBody("PLACEHOLDER-ID", 0)
	body = strings.Replace(body, `"PLACEHOLDER-ID"`, id, 1)
	return b.add(&Publication{Kind: KindInvalid, Body: body, At: at, WantReason: string(reason)})
}

// scenario is one path of the issue, as a configuration and the checks
// beyond the invariants.
type scenario struct {
	name  string
	issue string // the path it reproduces
	cfg   func() Config
	check func(t *testing.T, rep *Report)
	// deep marks a scenario of thousands of dead letters: too slow for
	// `go test ./...`, it runs in `make sim` (see runDeep).
	deep bool
	// pending names a known bug the scenario reproduces: TestScenario
	// skips it, with this reason, unless SIM_PENDING is set. Delete it
	// with the fix.
	pending string
}

// TestScenario reproduces each path of the issues that made this package
// grow (the first, "Nothing lost, nothing applied twice, and proven", and
// issue 15, "The net must reach this class") as a named simulation; every
// one must keep the invariants. The deep ones run in TestSim under
// `make sim`.
func TestScenario(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			if sc.deep {
				t.Skipf("thousands of dead letters: make sim runs it (SIM_SEEDS=1 go test ./internal/tools/sim -run 'TestSim/scenario=%s$')", sc.name)
			}
			if sc.pending != "" && os.Getenv("SIM_PENDING") == "" {
				t.Skipf("pending %s (SIM_PENDING=1 go test ./internal/tools/sim -run 'TestScenario/%s$' shows it)", sc.pending, sc.name)
			}
			t.Parallel()
			runScenario(t, sc, fmt.Sprintf("go test ./internal/tools/sim -run 'TestScenario/%s$'  (path: %s)", sc.name, sc.issue))
		})
	}
}

// runScenario runs sc and checks its invariants and its own checks.
func runScenario(t *testing.T, sc scenario, replay string) {
	rep, err := Run(sc.cfg())
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep, replay)
	if sc.check != nil {
		sc.check(t, rep)
	}
}

// runDeep runs the deep scenarios as subtests of t (TestSim under make sim).
func runDeep(t *testing.T) {
	for _, sc := range scenarios() {
		if !sc.deep {
			continue
		}
		t.Run("scenario="+sc.name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, sc, fmt.Sprintf("SIM_SEEDS=1 go test ./internal/tools/sim -run 'TestSim/scenario=%s$'  (path: %s)", sc.name, sc.issue))
		})
	}
}

// TestScenario/rate-nan is path 8: an engine whose Options.Rate is NaN or
// infinite refuses to run, or runs at a sane rate; it never computes a
// visibility or a wait from it.
func TestScenarioRateNaN(t *testing.T) {
	for _, rate := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			c := quiet(115)
			c.Replay.Options.Rate = rate
			b := newBuilder(115)
			b.valid(5, time.Minute)
			c.Publications = b.pubs
			c.Phases = []Phase{{From: 0, To: 20 * time.Minute, Mode: "down"}}
			c.DrainLimit = 2 * time.Hour
			s, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			sum := s.replayRun("operator", replay.Request{Routes: []replay.Route{s.sqs.route()}}, crashPlan{}, nil)
			refused := sum.RunID == "" || len(sum.Routes) == 0
			for _, r := range sum.Routes {
				refused = refused || strings.Contains(strings.ToLower(r.Error), "rate")
			}
			s.loop(s.start.Add(2 * time.Hour))
			if !refused && s.stats.Replays == 0 {
				t.Errorf("rate %v: the runs neither refused the rate nor replayed anything: %+v", rate, sum.Routes)
			}
		})
	}
}

func noParks(reason string) func(t *testing.T, rep *Report) {
	return func(t *testing.T, rep *Report) {
		if n := rep.Stats.Parked[reason]; n > 0 {
			t.Errorf("%d messages parked as %s; want none", n, reason)
		}
	}
}

func scenarios() []scenario {
	out := []scenario{
		{
			name: "gates-stop-rescue", issue: "1: gates hold replays, never the expiry rescue",
			cfg: func() Config {
				c := quiet(101)
				c.Queues.DLQRetention = 6 * time.Hour
				b := newBuilder(101)
				b.valid(30, time.Minute)
				c.Publications = b.pubs
				// The health probe reports the outage for longer than the
				// DLQ keeps messages: only the rescue can save them.
				c.Phases = []Phase{{From: 0, To: 9 * time.Hour, Mode: "down"}}
				return c
			},
		},
		{
			name: "hide-crosses-expiry", issue: "2: a hide never reaches past the start of the rescue window",
			cfg: func() Config {
				c := quiet(102)
				c.Queues.DLQRetention = 6 * time.Hour
				c.Replay.Options.BackoffBase = 12 * time.Hour
				c.Replay.Options.BackoffMax = 12 * time.Hour
				c.Replay.Options.ExpiryRescueWindow = time.Hour
				b := newBuilder(102)
				b.valid(30, time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 20 * time.Minute, Mode: "down"}}
				return c
			},
		},
		{
			name: "rescue-without-ledger", issue: "3: the rescue does not depend on the ledger",
			cfg: func() Config {
				c := quiet(103)
				c.Queues.DLQRetention = 6 * time.Hour
				c.Faults.LedgerOutage = 9 * time.Hour // every ledger call fails while the messages near their expiry
				b := newBuilder(103)
				b.valid(20, time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 9 * time.Hour, Mode: "down", LyingHealth: true}}
				return c
			},
		},
		{
			name: "long-order-id", issue: "3, 11: no key grows with input; an over-long orderId is invalid",
			cfg: func() Config {
				c := quiet(104)
				c.Queues.DLQRetention = 6 * time.Hour
				b := newBuilder(104)
				b.valid(5, time.Minute)
				b.invalidOrder(`"ORD-`+strings.Repeat("9", 3000)+`"`, 2*time.Minute, order.ReasonInvalidOrderID)
				c.Publications = b.pubs
				return c
			},
		},
		{
			name: "lease-runs-out", issue: "4: a run never sends a message whose lease it no longer holds",
			cfg: func() Config {
				c := quiet(105)
				c.Faults.RunOverlap = 0.5 // half the scheduled runs have a first send slower than the lease, and an operator run starts meanwhile
				b := newBuilder(105)
				b.valid(40, time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 20 * time.Minute, Mode: "down"}}
				return c
			},
		},
		{
			name: "fifo-reset-count-dedup", issue: "5: a FIFO --reset-count retry after a crash gets the same deduplication id",
			cfg: func() Config {
				c := quiet(106)
				c.Queues.FIFO = true
				c.Replay.Options.MaxReplays = 1
				c.OperatorRounds = 0
				b := newBuilder(106)
				b.valid(8, time.Minute)
				c.Publications = b.pubs
				// Nearly every call fails: the messages exhaust their one
				// replay and are parked.
				c.Phases = []Phase{{From: 0, To: 90 * time.Minute, Mode: "flaky", ErrorRate: 0.95}}
				reset := func(crash crashPlan) func(s *Sim) {
					return func(s *Sim) {
						s.replayRun("operator-reset", replay.Request{Routes: []replay.Route{s.sqs.parkingRoute()}, ResetCount: true}, crash, nil)
					}
				}
				c.Actions = []Action{
					{At: 3 * time.Hour, Do: reset(crashPlan{Op: "after-send", At: 1})},
					{At: 3*time.Hour + 2*time.Minute, Do: reset(crashPlan{})},
				}
				return c
			},
			check: func(t *testing.T, rep *Report) {
				if rep.Stats.ResetDuplicates > 0 {
					t.Errorf("%d messages reached the FIFO source twice from the reset runs; want the retry deduplicated by SQS", rep.Stats.ResetDuplicates)
				}
			},
		},
		{
			name: "budget-per-message", issue: "6: the replay budget belongs to the message, not the order",
			cfg: func() Config {
				c := quiet(107)
				b := newBuilder(107)
				for _, p := range b.valid(20, time.Minute) {
					b.add(&Publication{Kind: KindDuplicate, Body: p.Body, At: p.At + 30*time.Second, Of: p.N})
				}
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 20 * time.Minute, Mode: "down"}, {From: 20 * time.Minute, To: 3 * time.Hour, Mode: "flaky", ErrorRate: 0.7}}
				return c
			},
		},
		{
			name: "filters-before-corrupt", issue: "7: a filtered run leaves other orders' corrupt messages alone",
			cfg: func() Config {
				c := quiet(108)
				c.Replay.Schedule = 24 * time.Hour // only the operator's run reads the DLQ
				b := newBuilder(108)
				b.valid(3, time.Minute)
				p := b.valid(1, 2*time.Minute)[0]
				p.Attrs = map[string]types.MessageAttributeValue{envelope.ReplayAttributeName: {DataType: aws.String("String"), StringValue: aws.String("{not json")}}
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 20 * time.Minute, Mode: "down"}}
				c.Actions = []Action{{At: 40 * time.Minute, Do: func(s *Sim) {
					s.replayRun("operator", replay.Request{Routes: []replay.Route{s.sqs.route()}, Filter: replay.Filter{Keys: []string{b.pubs[0].OrderID}}}, crashPlan{}, nil)
				}}}
				return c
			},
			check: func(t *testing.T, rep *Report) {
				if rep.Stats.FilteredParks > 0 {
					t.Errorf("a run filtered to one order parked %d messages of other orders", rep.Stats.FilteredParks)
				}
			},
		},
		{
			name: "completion-hiccup-second-effect", issue: "9: after the effect, never redo it; resolve in-doubt takeovers with a lookup",
			cfg: func() Config {
				c := quiet(109)
				c.Service = Counting
				c.Faults.CompleteErrors = 0.5
				c.Faults.CrashAfterEffect = 0.2
				b := newBuilder(109)
				b.valid(60, time.Minute)
				c.Publications = b.pubs
				return c
			},
		},
		{
			name: "takeover-different-payload", issue: "10: a takeover compares the payload hash",
			cfg: func() Config {
				c := quiet(110)
				b := newBuilder(110)
				first := b.valid(1, time.Minute)[0]
				b.add(&Publication{Kind: KindConflict, Body: b.w.validBody(first.OrderID, 99), At: 2 * time.Minute, Of: first.N})
				c.Publications = b.pubs
				c.Faults.CrashFirstCompletion = []string{first.OrderID}
				return c
			},
		},
		{
			name: "orderid-grammar", issue: "11: control characters, invalid UTF-8, lone surrogates and over-long ids are invalid-order-id",
			cfg: func() Config {
				c := quiet(111)
				b := newBuilder(111)
				b.valid(3, time.Minute)
				b.invalidOrder(`"ORD-\u0007-1"`, 2*time.Minute, order.ReasonInvalidOrderID)
				b.invalidOrder("\"ORD-\xff-2\"", 3*time.Minute, order.ReasonInvalidOrderID)
				b.invalidOrder("\"ORD-\xfe-2\"", 4*time.Minute, order.ReasonInvalidOrderID)
				b.invalidOrder(`"ORD-\ud800-3"`, 5*time.Minute, order.ReasonInvalidOrderID)
				b.invalidOrder(`"`+strings.Repeat("A", 300)+`"`, 6*time.Minute, order.ReasonInvalidOrderID)
				c.Publications = b.pubs
				return c
			},
		},
		{
			name: "near-size-limit", issue: "12: any message the source accepted fits the invalid and parking queues",
			cfg: func() Config {
				c := quiet(112)
				c.Queues.MaxMessageBytes = 256 << 10
				b := newBuilder(112)
				b.valid(3, time.Minute)
				o := b.w.validOrder("ORD-S-BIG", 0)
				o.Customer.TaxID = "123.456.789-00" // invalid check digits
				body := encode(o)
				// as large as the source queue accepts
				o.Customer.Name = strings.Repeat("x", (256<<10)-envelope.MetadataReserveBytes-len(body)-8)
				b.add(&Publication{Kind: KindInvalid, Body: encode(o), At: 2 * time.Minute, WantReason: string(order.ReasonInvalidTaxID)})
				c.Publications = b.pubs
				return c
			},
		},
		{
			name: "forged-attributes", issue: "13: a producer's copy of our attribute names is never decoded as our metadata",
			cfg: func() Config {
				c := quiet(113)
				b := newBuilder(113)
				b.valid(3, time.Minute)
				forged := func(name, value string) map[string]types.MessageAttributeValue {
					return map[string]types.MessageAttributeValue{name: {DataType: aws.String("String"), StringValue: aws.String(value)}}
				}
				p := b.invalidOrder(`"ORD-S-FORGED-1"`, 2*time.Minute, order.ReasonMissingTaxID)
				p.Body = strings.Replace(p.Body, `"taxId"`, `"taxIdX"`, 1)
				p.Attrs = forged(invalid.AttributeName, "{malformed")
				b.w.lane.describe(p)
				q := b.invalidOrder(`"ORD-S-FORGED-2"`, 3*time.Minute, order.ReasonMissingTaxID)
				q.Body = strings.Replace(q.Body, `"taxId"`, `"taxIdX"`, 1)
				q.Attrs = forged(invalid.AttributeName, `{"meta":{},"overflow":{"AWSTraceHeader":{"t":"String","s":"forged"}}}`)
				b.w.lane.describe(q)
				r := b.valid(1, 4*time.Minute)[0]
				r.Attrs = forged(envelope.ReplayAttributeName, "{malformed")
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 3 * time.Minute, To: 30 * time.Minute, Mode: "down"}}
				return c
			},
			check: func(t *testing.T, rep *Report) {
				noParks(replay.ReasonCorruptMetadata)(t, rep)
				if rep.Stats.InjectedAttributes > 0 {
					t.Errorf("%d forwarded messages carry an attribute the producer did not send (forged overflow)", rep.Stats.InjectedAttributes)
				}
			},
		},
		{
			name: "lying-health-probe-parks-good-orders", issue: "14: an outage the health probe misses does not use up the messages' budgets",
			cfg: func() Config {
				c := quiet(114)
				b := newBuilder(114)
				b.valid(100, time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 3 * time.Hour, Mode: "down", LyingHealth: true}}
				return c
			},
			check: noParks(replay.ReasonReplayExhausted),
		},
	}
	out = append(out, issue15()...)
	return append(out, groupScenarios()...)
}

// depths are the DLQ depths of the coverage scenarios (15.2): past the 1,000
// messages a pass remembers to release (replay/hold.go), in `go test`; and
// five times that, in `make sim`.
var depths = []struct {
	n    int
	deep bool
}{{1200, false}, {5000, true}}

// issue15 are the paths of issue 15, "The net must reach this class":
// depths past every in-memory bound of the engine, metadata the engine did
// not write, messages that fail for ever, and slow rates with mixed
// batches.
func issue15() []scenario {
	var out []scenario
	for _, d := range depths {
		out = append(out,
			scenario{
				name: fmt.Sprintf("gate-closed-rescue-%d", d.n), issue: "15.2 coverage past 1,000 held", deep: d.deep,
				cfg: func() Config {
					// The health probe reports an outage longer than the
					// DLQ keeps messages: the pass holds every message
					// behind the closed gate, and each must be parked as
					// it reaches its rescue window, wherever it sits.
					c := quiet(1521)
					c.Queues.DLQRetention = 3 * time.Hour
					b := newBuilder(1521)
					b.spread(d.n, time.Minute, 30*time.Minute)
					c.Publications = b.pubs
					c.Phases = []Phase{{From: 0, To: 5 * time.Hour, Mode: "down"}}
					return c
				},
				check: func(t *testing.T, rep *Report) {
					if got := rep.Stats.ParkedUnattended; got[replay.ReasonExpiryRescue] != d.n || len(got) != 1 {
						t.Errorf("parked %v before the operator brought them back; want all %d as %s", got, d.n, replay.ReasonExpiryRescue)
					}
				},
			},
			scenario{
				name: fmt.Sprintf("filter-finds-the-last-%d", d.n), issue: "15.2 coverage past 1,000 held", deep: d.deep,
				cfg: func() Config {
					c, last := deepDLQ(1522, d.n)
					c.Actions = []Action{{At: 2 * time.Hour, Do: func(s *Sim) {
						s.replayRun("operator", replay.Request{Routes: []replay.Route{s.sqs.route()}, Filter: replay.Filter{Keys: []string{last.OrderID}}}, crashPlan{}, nil)
					}}}
					return c
				},
				check: func(t *testing.T, rep *Report) {
					run, ok := findRun(rep, "operator")
					if !ok {
						t.Fatal("no operator run")
					}
					last := rep.Config.Publications[d.n-1]
					if !slices.Equal(run.Replayed, []int{last.N}) {
						t.Errorf("the run filtered to %s (dead-lettered last of %d) replayed publications %v; want [%d] (stop %s, examined %d)",
							last.OrderID, run.DLQ, run.Replayed, last.N, stopReason(run), run.Summary.Total.Examined)
					}
				},
			},
			scenario{
				name: fmt.Sprintf("dry-run-counts-all-%d", d.n), issue: "15.2 coverage past 1,000 held", deep: d.deep,
				cfg: func() Config {
					c, _ := deepDLQ(1523, d.n)
					c.Actions = []Action{{At: 2 * time.Hour, Do: func(s *Sim) {
						s.replayRun("operator", replay.Request{Routes: []replay.Route{s.sqs.route()}, DryRun: true}, crashPlan{}, nil)
					}}}
					return c
				},
				check: func(t *testing.T, rep *Report) {
					run, ok := findRun(rep, "operator")
					if !ok {
						t.Fatal("no operator run")
					}
					if r := run.Summary.Routes; len(r) != 1 || r[0].Examined != run.DLQ || r[0].Depth != run.DLQ {
						t.Errorf("a dry run over a DLQ of %d: %+v; want examined = depth = %d (stop %s)", run.DLQ, run.Summary.Total, run.DLQ, stopReason(run))
					}
					if len(run.Replayed) > 0 {
						t.Errorf("a dry run replayed %d messages", len(run.Replayed))
					}
				},
			},
		)
	}
	out = append(out,
		scenario{
			name: "poison-after-outage", issue: "15.1 refunds bounded",
			cfg: func() Config {
				// An outage the health probe misses opens the breaker;
				// once it is over, only two orders that the service fails
				// for ever are left, and the breaker takes their failures
				// for the system's: their replays, refunds included, must
				// stay bounded and they must end parked.
				c := quiet(1511)
				b := newBuilder(1511)
				b.valid(30, time.Minute)
				b.poison(time.Minute + 10*time.Second)
				b.poison(time.Minute + 20*time.Second)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 90 * time.Minute, Mode: "down", LyingHealth: true}}
				return c
			},
		},
		scenario{
			name: "archive-past-retention", issue: "33 nothing expires",
			cfg: func() Config {
				// Poison orders end parked and invalid ones in the
				// invalid queue, and nobody reviews either: the archive
				// takes each before the queues' 14 days are up, and the
				// operator's restore brings the parked ones back for the
				// rounds (which park them again: they fail for ever).
				c := quiet(1513)
				c.Archive = true
				b := newBuilder(1513)
				b.valid(10, time.Minute)
				b.poison(time.Minute)
				b.poison(time.Minute + time.Second)
				b.invalid(2 * time.Minute)
				b.invalid(3 * time.Minute)
				c.Publications = b.pubs
				return c
			},
			check: func(t *testing.T, rep *Report) {
				if rep.Stats.Archived != 4 || rep.Stats.Simulated < 16*24*time.Hour {
					t.Errorf("%d messages archived after %s; want the 2 parked and the 2 invalid, past the queues' 14 days",
						rep.Stats.Archived, rep.Stats.Simulated)
				}
			},
		},
		scenario{
			name: "poison-only", issue: "15.1 refunds bounded",
			cfg: func() Config {
				// Two orders that fail for their own reason, replayed side
				// by side, after a plain outage: the breaker must not keep
				// them cycling.
				c := quiet(1512)
				b := newBuilder(1512)
				b.valid(10, time.Minute)
				b.poison(time.Minute)
				b.poison(time.Minute + time.Second)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 40 * time.Minute, Mode: "down"}}
				return c
			},
		},
		scenario{
			name: "outage-never-ends", issue: "15.1 refunds bounded",
			cfg: func() Config {
				// The service is down, and the probe says up, until long
				// after the messages would expire: the breaker probes and
				// gives replays back, but a message's replays stay bounded
				// and the system quiesces with everything parked. The
				// operator brings them back once the service works.
				c := quiet(1513)
				c.Queues.DLQRetention = 24 * time.Hour
				c.DrainLimit = 3 * 24 * time.Hour
				b := newBuilder(1513)
				b.spread(40, time.Minute, 20*time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: c.Window + c.DrainLimit - 6*time.Hour, Mode: "down", LyingHealth: true}}
				return c
			},
			check: func(t *testing.T, rep *Report) {
				got := rep.Stats.ParkedUnattended
				parked := 0
				for _, n := range got {
					parked += n
				}
				if parked != 40 {
					t.Errorf("parked %v before the service came back; want all 40", got)
				}
			},
		},
		scenario{
			name: "foreign-metadata", issue: "15.3 foreign metadata",
			cfg: func() Config { return foreignMetadata(1531, false) },
		},
		scenario{
			name: "foreign-metadata-fifo", issue: "15.3 foreign metadata",
			cfg: func() Config { return foreignMetadata(1532, true) },
		},
	)
	for _, sr := range []struct {
		name     string
		rate     float64
		workers  int
		lockstep bool
	}{
		{"slow-rate-mixed-lockstep-0.1", 0.1, 1, true},
		{"slow-rate-mixed-lockstep-0.5", 0.5, 1, true},
		{"slow-rate-mixed-pipelined-0.5", 0.5, 3, false},
		{"slow-rate-mixed-pipelined-1", 1, 2, false},
	} {
		out = append(out, scenario{
			name: sr.name, issue: "15.4 lease at slow rates, mixed batches",
			cfg: func() Config {
				// One replay each, and an outage the health probe misses
				// (no canary: the breaker reads the DLQ, so the replays go
				// out in its probes and fail): a first wave comes back
				// exhausted, to be parked, while a second wave reaches the
				// DLQ, to be replayed. Waves of 25: after the outage a run
				// at 0.1/s replays about 12, so four runs cover the DLQ
				// the breaker held (coverage). The batches
				// hold both, the rate limit spacing them over most of
				// their leases, and operator runs overlap the scheduled
				// ones. No message may be sent by two runs.
				c := quiet(1541)
				c.Replay.Options.Rate = sr.rate
				c.Replay.Options.Workers = sr.workers
				c.Replay.Options.Lockstep = sr.lockstep
				c.Replay.Options.MaxReplays = 1
				c.Replay.Canary = false
				c.Faults.RunOverlap = 0.5
				c.Faults.OperatorRuns = 4
				b := newBuilder(1541)
				b.spread(25, time.Minute, 10*time.Minute)
				b.spread(25, 15*time.Minute, 30*time.Minute)
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 2 * time.Hour, Mode: "down", LyingHealth: true}}
				return c
			},
		})
	}
	out = append(out, laneScenarios()...)
	return out
}

// deepDLQ is a DLQ of n dead letters behind an outage that ends before an
// operator's run at 2 h, with no scheduled run before a day: the last
// publication is dead-lettered last. A scheduled run then drains them in
// one pass.
func deepDLQ(seed uint64, n int) (Config, *Publication) {
	c := quiet(seed)
	c.Replay.Schedule = 24 * time.Hour
	c.Replay.Options.MaxPerRun = 2 * n
	c.Replay.Options.Rate = 500
	c.DrainLimit = 3 * 24 * time.Hour
	b := newBuilder(seed)
	pubs := b.spread(n, time.Minute, 30*time.Minute)
	c.Publications = b.pubs
	c.Phases = []Phase{{From: 0, To: 90 * time.Minute, Mode: "down"}}
	return c, pubs[n-1]
}

// foreignMetadata is 15.3: orders published with replay metadata the
// engine did not write, during an outage the health probe misses (so the
// breaker gives replays back): copies of a message the engine replayed
// (two orders with one copy) and of one it parked, a replay count of 99,
// 99 refunds, a last replay a year ahead, a 20 KiB original id. Each must
// be invoiced exactly once after the outage; no operator brings back what
// was parked.
func foreignMetadata(seed uint64, fifo bool) Config {
	c := quiet(seed)
	c.Queues.FIFO = fifo
	c.Queues.DLQRetention = 24 * time.Hour
	c.OperatorRounds = 0
	b := newBuilder(seed)
	// First an outage, so that the engine replays (and, for the poison
	// order, parks) messages a producer can copy from.
	b.valid(8, time.Minute)
	b.poison(time.Minute)
	at := 4 * time.Hour
	b.valid(10, at)
	b.forged(at+20*time.Second, forgeCopy(copyReplayed, "one copy", at))
	b.forged(at+21*time.Second, forgeCopy(copyReplayed, "one copy", at))
	b.forged(at+22*time.Second, forgeCopy(copyParked, "", at))
	b.forged(at+23*time.Second, forgeCount(at))
	b.forged(at+24*time.Second, forgeRefunds(at))
	b.forged(at+25*time.Second, forgeFuture(at))
	b.forged(at+26*time.Second, forgeBigID(at))
	c.Publications = b.pubs
	c.Phases = []Phase{
		{From: 0, To: 30 * time.Minute, Mode: "down"},
		{From: at - time.Minute, To: at + 90*time.Minute, Mode: "down", LyingHealth: true},
	}
	return c
}

// findRun returns the first run of kind.
func findRun(rep *Report, kind string) (RunRecord, bool) {
	for _, r := range rep.Runs {
		if r.Kind == kind {
			return r, true
		}
	}
	return RunRecord{}, false
}

// stopReason is the stop reason of a run's first route.
func stopReason(r RunRecord) replay.StopReason {
	if len(r.Summary.Routes) == 0 {
		return ""
	}
	return r.Summary.Routes[0].StopReason
}
