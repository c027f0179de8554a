package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/order"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// quiet is a scenario's starting point: no random faults, no trouble at the
// tax service, a deduplicating service, standard queues.
func quiet(seed uint64) Config {
	c := RandomConfig(seed, 0)
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
	describe(p)
	if p.OrderID == "" {
		p.OrderID = replay.OrderID(p.Body)
	}
	p.Group = fmt.Sprintf("g-%02d", p.N%4)
	b.pubs = append(b.pubs, p)
	return p
}

// valid adds n valid orders published from at, a second apart.
func (b *builder) valid(n int, at time.Duration) []*Publication {
	var out []*Publication
	for i := range n {
		id := fmt.Sprintf("ORD-S-%05d", len(b.pubs))
		out = append(out, b.add(&Publication{Kind: KindValid, Body: b.w.validBody(id, 0), At: at + time.Duration(i)*time.Second}))
	}
	return out
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
}

// TestScenario reproduces each path of the issue "Nothing lost, nothing
// applied twice, and proven" as a named simulation; every one must keep the
// invariants.
func TestScenario(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			rep, err := Run(sc.cfg())
			if err != nil {
				t.Fatal(err)
			}
			check(t, rep, fmt.Sprintf("go test ./internal/sim -run 'TestScenario/%s$'  (path: %s)", sc.name, sc.issue))
			if sc.check != nil {
				sc.check(t, rep)
			}
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
	return []scenario{
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
				p.Attrs = map[string]types.MessageAttributeValue{replay.AttributeName: {DataType: aws.String("String"), StringValue: aws.String("{not json")}}
				c.Publications = b.pubs
				c.Phases = []Phase{{From: 0, To: 20 * time.Minute, Mode: "down"}}
				c.Actions = []Action{{At: 40 * time.Minute, Do: func(s *Sim) {
					s.replayRun("operator", replay.Request{Routes: []replay.Route{s.sqs.route()}, Filter: replay.Filter{OrderIDs: []string{b.pubs[0].OrderID}}}, crashPlan{}, nil)
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
				describe(p)
				q := b.invalidOrder(`"ORD-S-FORGED-2"`, 3*time.Minute, order.ReasonMissingTaxID)
				q.Body = strings.Replace(q.Body, `"taxId"`, `"taxIdX"`, 1)
				q.Attrs = forged(invalid.AttributeName, `{"meta":{},"overflow":{"AWSTraceHeader":{"t":"String","s":"forged"}}}`)
				describe(q)
				r := b.valid(1, 4*time.Minute)[0]
				r.Attrs = forged(replay.AttributeName, "{malformed")
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
}
