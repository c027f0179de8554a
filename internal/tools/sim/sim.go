package sim

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// Config is one simulation. [RandomConfig] derives one from a seed;
// scenarios start from it and change what they need.
type Config struct {
	Seed          uint64
	Orders        int           // publications to generate (when Publications is nil)
	Window        time.Duration // the producer publishes within this time after the start
	Mix           Mix
	Queues        Queues
	Lane          Lane
	Consumer      Consumer
	Replay        Replay
	Service       ServiceMode
	Phases        []Phase
	Freezes       []Freeze // failures of the tax service confined to one message group
	ServiceFaults ServiceFaults
	Faults        Faults
	// DrainLimit bounds the simulated time after the window for the system
	// to quiesce; a system still busy then fails the invariants.
	DrainLimit time.Duration
	// OperatorRounds is how many times, once quiet, an operator brings the
	// parking queue back to the source (a reset-count run) and waits for
	// quiet again. Zero: none.
	OperatorRounds int
	// ReleaseEvery, on a lane with Groups, is how often during the run the
	// operator looks at the parked groups (dlq groups) and releases each
	// whose head was routed to the invalid queue; zero: only at the end
	// (see groups.go, lookAtParks and releaseParked).
	ReleaseEvery time.Duration
	// Archive runs the lane's archive (issue 33) before each scheduled
	// run, over an in-memory S3, in place of the operator's review of the
	// invalid queue; the operator restores what it holds of the parking
	// queue before each round, and at the end the clock runs on past the
	// queues' 14-day retention (see archive.go).
	Archive bool
	// Publications, when set, is the workload (a scenario's); else it is
	// generated.
	Publications []*Publication
	// Actions run at their time (a scenario's operator runs, crashes,
	// clock jumps).
	Actions []Action
}

// Action is something a scenario does at a time after the start.
type Action struct {
	At time.Duration
	Do func(s *Sim)
}

// Start is the simulated time every simulation starts at.
var Start = time.Date(2030, 11, 30, 8, 0, 0, 0, time.UTC)

// RandomConfig returns the configuration of seed with orders publications:
// the settings, the tax service's trouble and the fault rates are drawn
// from the seed, within what the configuration validation accepts.
func RandomConfig(seed uint64, orders int) Config {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pick := func(ds ...time.Duration) time.Duration { return ds[rng.IntN(len(ds))] }
	c := Config{
		Seed: seed, Orders: orders, Window: 2 * time.Hour,
		Mix: Mix{Duplicate: 0.05, Conflict: 0.02, Invalid: 0.08, Rejected: 0.01, Poison: 0.004, Forged: 0.01},
		Queues: Queues{
			FIFO:            fifoSeed(seed),
			SourceRetention: 4 * 24 * time.Hour,
			DLQRetention:    pick(14*24*time.Hour, 4*24*time.Hour, 24*time.Hour, 6*time.Hour),
			Visibility:      180 * time.Second,
			MaxReceiveCount: 3 + 2*rng.IntN(2),
		},
		Consumer: Consumer{Timeout: 30 * time.Second, BatchSize: 10},
		Replay: Replay{
			Options: replay.Options{
				Policy: replay.Policy{MaxReplays: 3, BackoffBase: pick(time.Minute, 5*time.Minute), BackoffMax: pick(30*time.Minute, time.Hour, 4*time.Hour, 12*time.Hour)},
				Rate:   50, MaxPerRun: 1000, CanaryLimit: 5, RefillThreshold: 100, DeadlineMargin: 5 * time.Second, DecisionWindow: 30 * time.Second,
				// One worker in lockstep: every call of a run in a fixed
				// order, so that a seed replays (see concurrentSeed).
				Workers: 1, Lockstep: true,
			},
			Schedule: 5 * time.Minute, Timeout: 2 * time.Minute, Health: true, Canary: true,
		},
		Service:       Deduplicating,
		ServiceFaults: ServiceFaults{Ambiguous: 0.01, Latency: 40 * time.Millisecond, Budget: 10 * time.Second},
		Faults: Faults{
			StoreErrors: 0.02, CompleteErrors: 0.01, CrashAfterEffect: 0.005, InvalidSendError: 0.02,
			ESMDeleteErrors: 0.01, DoubleInvoke: 0.01, ConcurrentCopy: 0.01, LedgerErrors: 0.02, ReplayQueueError: 0.01,
			RunCrash: 0.1, RunOverlap: 0.05, OperatorRuns: 3, ClockJumps: 2,
		},
		DrainLimit:     3 * 24 * time.Hour,
		OperatorRounds: 3,
	}
	if seed%2 == 1 {
		c.Service = Counting
	}
	c.Lane = Lane{RefKey: refKeySeed(seed), LongKey: longKeySeed(seed), IntKey: intKeySeed(seed), NoRecords: noRecordsSeed(seed)}
	if c.Lane.NoRecords {
		// Without the consumer's records, only a service that honours the
		// Idempotency-Key keeps the effect once (see Lane.NoRecords).
		c.Service = Deduplicating
	}
	if concurrentSeed(seed) {
		// The engine as it runs in production: several workers per
		// route, each finishing a batch beside the next receive. Such a
		// seed checks the same invariants, but its goroutines interleave
		// as the scheduler pleases: it may not replay event for event.
		c.Replay.Options.Workers = 2 + int(seed/3%3)
		c.Replay.Options.Lockstep = false
	}
	c.Replay.Options.ExpiryRescueWindow = min(pick(time.Hour, 2*time.Hour, 24*time.Hour), c.Queues.DLQRetention/3)
	groupsConfig(&c)
	c.Archive = archiveSeed(seed)
	outage := time.Duration(10+rng.IntN(50)) * time.Minute
	down := time.Duration(10+rng.IntN(80)) * time.Minute
	c.Phases = append(c.Phases, Phase{From: outage, To: outage + down, Mode: "down", LyingHealth: rng.IntN(10) < 3})
	tickFaults(&c, outage)
	flaky := c.Phases[0].To + time.Duration(rng.IntN(20))*time.Minute
	c.Phases = append(c.Phases, Phase{From: flaky, To: flaky + time.Duration(5+rng.IntN(30))*time.Minute, Mode: "flaky", ErrorRate: 0.2 + 0.6*rng.Float64()})
	if rng.IntN(10) < 3 {
		slow := c.Phases[1].To + 10*time.Minute
		c.Phases = append(c.Phases, Phase{From: slow, To: slow + 5*time.Minute, Mode: "slow", Latency: 12 * time.Second})
	}
	return c
}

// tickFaults gives the schedule of seed's replay its faults (Faults.Ticks),
// from a generator of its own, so that the other draws stay as they were:
// on one seed in three, ticks that come late (up to 40 minutes, past the
// breaker's next probe) or not at all; on one seed in four (pauseSeed), an
// outage that the health probe misses and that outlasts a pause of the
// schedule of 1 to 3 hours, which begins 20 to 60 minutes into it or
// right after the first probe of the lane's breaker: the first run after
// the pause judges the probe it finds.
func tickFaults(c *Config, outage time.Duration) {
	rng := rand.New(rand.NewPCG(c.Seed, 0x71c5))
	if c.Seed/5%3 == 0 {
		c.Faults.Ticks.Late, c.Faults.Ticks.LateBy, c.Faults.Ticks.Missed = 0.1, 40*time.Minute, 0.05
	}
	if !pauseSeed(c.Seed) {
		return
	}
	from := outage + time.Duration(20+rng.IntN(41))*time.Minute
	d := time.Duration(60+rng.IntN(121)) * time.Minute
	end := from + d
	if rng.IntN(2) == 0 {
		c.Faults.Ticks.Pauses = append(c.Faults.Ticks.Pauses, Window{From: from, To: end})
	} else {
		// Right after the first probe of the lane's breaker, wherever it
		// comes (its first probe is due within an hour of the outage).
		c.Faults.Ticks.PauseAfterProbe = d
		end += time.Hour
	}
	down := &c.Phases[0]
	down.LyingHealth = true
	down.To = max(down.To, end+time.Duration(10+rng.IntN(50))*time.Minute)
}

// pauseSeed reports whether seed's schedule pauses during its outage (one
// seed in four; see tickFaults).
func pauseSeed(seed uint64) bool { return seed/7%4 == 1 }

// fifoSeed reports whether seed's lane is FIFO (two seeds in five); every
// FIFO seed's consumer holds its groups (see groupsConfig).
func fifoSeed(seed uint64) bool { return seed%5 == 1 || seed%5 == 4 }

// archiveSeed reports whether seed's lane has an archive (one seed in two).
func archiveSeed(seed uint64) bool { return seed/11%2 == 0 }

// concurrentSeed reports whether seed runs the replay engine with several
// workers and overlapped batches (one seed in three) rather than one
// worker in lockstep.
func concurrentSeed(seed uint64) bool { return seed%3 == 2 }

// Stats are what a simulation counted.
type Stats struct {
	Publications        int
	ValidOrders         int
	Invoiced            int            // valid orders with an invoice
	InvalidQueued       int            // messages in the invalid queue at the end
	Parked              map[string]int // parks, by reason
	ParkedUnattended    map[string]int // parks before the operator's first round, by reason
	ParkedAtEnd         int
	InDoubtDoubles      int // counting service: invoices issued after an answer was lost
	ServiceCalls        int
	Takeovers           int
	Unrecorded          int // invoices acknowledged whose idempotency record could not be completed
	CrashesAfterEffect  int
	DoubleInvokes       int
	ConcurrentCopies    int
	Abandoned           int // consumer invocations that died or ran out of time
	Invocations         int
	Replays             int
	Applied             int // dead letters the engine removed as already applied (OutcomeApplied), from the runs' summaries
	RecordsMissing      int // route passes of the lane that reported its consumer's records missing (RouteSummary.RecordsMissing)
	ReplaysDeduplicated int // FIFO sends SQS dropped as duplicates
	DuplicateReplays    int // replays of a message with a count already sent
	ResetDuplicates     int // publications a reset-count operator replayed into the source more than once
	FilteredParks       int // parks by a filtered run of messages its filter did not select
	InjectedAttributes  int // forwarded messages with an attribute the producer did not send
	Forged              int // publications with replay metadata the engine did not write
	MostReplays         int // the most replays behind one message (its lineage, since a reset)
	Groups              GroupStats
	Archived            int // messages in the archive at the end (Config.Archive)
	Runs                int
	RunCrashes          int
	Simulated           time.Duration
}

// Violation is a broken invariant.
type Violation struct {
	Kind    string
	Subject string // message and order ids
	Detail  string
}

func (v Violation) String() string { return v.Kind + ": " + v.Subject + ": " + v.Detail }

// Report is the outcome of a simulation.
type Report struct {
	Config     Config
	Stats      Stats
	Violations []Violation
	Trace      *Trace
	Runs       []RunRecord // the replay runs, in the order they started
}

// Sim is one simulation in progress. Build it with [New]; it is not safe
// for concurrent use (the code under test calls it from its goroutines only
// through its locked parts).
type Sim struct {
	cfg    Config
	start  time.Time
	clock  *replaytest.Clock
	dice   *dice
	rng    *rand.Rand
	trace  *Trace
	sqs    *sqsModel
	store  *store
	ledger *replaytest.MemoryLedger
	// sealKey is the ledger's seal key: the simulation takes the metadata
	// of a message as the engine's when its seal verifies (see ours).
	sealKey []byte
	leases  *leases
	tax     *Service
	proc    *batch.Processor
	pubs    []*Publication

	next    int // the next publication to send
	actions []Action
	// The schedule (see schedule): the time of its next tick, the times
	// the runs of ticks drawn start at (sorted), how many ticks were
	// drawn, its pauses (Faults.Ticks, and the one PauseAfterProbe adds).
	tick        time.Time
	due         []time.Time
	ticks       int
	pauses      []Window
	probePaused bool
	notBefore   time.Time // the loop is not quiet before then
	// The operator's reviews of the invalid queue (see reviewInvalid).
	nextReview  time.Time
	reviewed    []types.Message
	runs        int
	invocations int
	extended    time.Duration // the time drain added past the drain limits
	copying     bool

	// book guards the bookkeeping the replay engine's goroutines write
	// through the port wrappers (stats, replayCounts, removed, ...); vmu
	// the violations.
	book         sync.Mutex
	vmu          sync.Mutex
	stats        Stats
	violations   []Violation
	seen         map[string]bool
	acked        map[string]string // orderId -> the payload hash the consumer first acknowledged
	ackedPubs    map[int]bool
	removed      map[int]bool // a replay run deleted a DLQ message of the publication
	replayCounts map[int]map[string]int
	replayRuns   map[int][]*runState // the runs that replayed each publication
	dupReplays   map[int]int
	failures     map[int]failures
	crashed      map[string]bool          // CrashFirstCompletion done
	resetSends   map[int]int              // replays of a publication by reset-count runs that SQS accepted
	sends        map[string][]sendRecord  // the sends of each message of a queue a run reads
	lastSent     map[string]sentAttribute // copyReplayed, copyParked -> our attribute on the latest such send
	shared       map[string]sentAttribute // Forgery.Share -> the copy
	cov          *coverage
	runRecords   []RunRecord
	// groups is the bookkeeping of a lane that keeps its message groups in
	// order (see groups.go); nextRelease is when the operator next looks
	// at the parks; setAsideMsgs the heads the operator took out of the
	// parking queue (see setAside).
	groups       *groupBook
	nextRelease  time.Time
	setAsideMsgs []types.Message
	arch         *archiveModel // nil: the lane has no archive
}

type failures struct{ replayed, outage int }

// New builds a simulation of cfg.
func New(cfg Config) (*Sim, error) {
	s := &Sim{
		cfg: cfg, start: Start, clock: replaytest.NewClock(Start), dice: newDice(cfg.Seed),
		rng: rand.New(rand.NewPCG(cfg.Seed, 0xfa17)), trace: newTrace(Start),
		leases: &leases{holder: map[string]lease{}}, seen: map[string]bool{}, acked: map[string]string{},
		ackedPubs: map[int]bool{}, removed: map[int]bool{}, replayCounts: map[int]map[string]int{}, replayRuns: map[int][]*runState{},
		dupReplays: map[int]int{}, failures: map[int]failures{}, crashed: map[string]bool{}, resetSends: map[int]int{},
		sends: map[string][]sendRecord{}, lastSent: map[string]sentAttribute{}, shared: map[string]sentAttribute{}, cov: newCoverage(),
	}
	s.stats.Parked = map[string]int{}
	if err := cfg.Lane.check(); err != nil {
		return nil, err
	}
	if cfg.Lane.NoRecords && cfg.Service != Deduplicating {
		return nil, fmt.Errorf("a lane whose consumer writes no records needs a deduplicating service: with %s, nothing keeps its effect once", cfg.Service)
	}
	if cfg.Lane.Groups != "" && !cfg.Queues.FIFO {
		return nil, fmt.Errorf("a lane that keeps its message groups in order (Groups %q) needs FIFO queues", cfg.Lane.Groups)
	}
	s.groups = newGroupBook()
	var err error
	if s.sqs, err = newSQS(s.clock, cfg.Queues); err != nil {
		return nil, err
	}
	s.sqs.lane = cfg.Lane
	s.store = &store{MemoryStore: idempotency.NewMemoryStore(), s: s}
	s.ledger = replaytest.NewMemoryLedger(s.clock.Now)
	if s.sealKey, err = replay.SealKey(context.Background(), s.ledger, Start); err != nil {
		return nil, err
	}
	s.tax = newService(cfg.Service, cfg.Phases, cfg.ServiceFaults, Start, s.clock, s.dice, s.trace)
	s.tax.duringCall = s.copyDuringCall
	s.tax.violation = s.violate
	s.proc = s.newProcessor()
	s.pubs = cfg.Publications
	if s.pubs == nil {
		s.pubs = generate(rand.New(rand.NewPCG(cfg.Seed, 0x0d3e)), cfg.Seed, cfg.Orders, cfg.Window, cfg.Mix, cfg.Lane)
	}
	for i, p := range s.pubs {
		p.N = i
		if p.Hash == "" {
			cfg.Lane.describe(p)
		}
	}
	if cfg.Archive {
		if s.arch, err = s.newArchive(); err != nil {
			return nil, err
		}
	}
	s.tax.freeze(cfg.Freezes, s.pubs)
	if cfg.ReleaseEvery > 0 && cfg.Lane.Groups != "" {
		s.nextRelease = Start.Add(cfg.ReleaseEvery)
	}
	s.actions = append(s.actions, cfg.Actions...)
	for range cfg.Faults.OperatorRuns {
		at := time.Duration(s.rng.Int64N(int64(cfg.Window + 6*time.Hour)))
		s.actions = append(s.actions, Action{At: at, Do: (*Sim).operatorRun})
	}
	for range cfg.Faults.ClockJumps {
		at := time.Duration(s.rng.Int64N(int64(cfg.Window + 6*time.Hour)))
		d := time.Duration(1+s.rng.IntN(15)) * time.Minute
		s.actions = append(s.actions, Action{At: at, Do: func(s *Sim) { s.jump(d) }})
	}
	slices.SortStableFunc(s.actions, func(a, b Action) int { return int(a.At - b.At) })
	s.tick = Start.Add(cfg.Replay.Schedule)
	s.pauses = slices.Clone(cfg.Faults.Ticks.Pauses)
	return s, nil
}

// Run runs cfg to the end and checks the invariants.
func Run(cfg Config) (*Report, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return s.Run(), nil
}

// Run runs the simulation to quiescence (or its time limit), lets the
// operator bring back what was parked, and checks the invariants.
func (s *Sim) Run() *Report {
	limit := s.start.Add(s.cfg.Window + s.cfg.DrainLimit)
	quiet := s.drain(limit)
	s.stats.ParkedUnattended = maps.Clone(s.stats.Parked)
	parked, _ := s.groups.mem.List(context.Background())
	if quiet && (s.sqs.total(s.sqs.parking) > 0 || len(parked) > 0) && (s.cfg.OperatorRounds > 0 || s.cfg.Lane.Groups != "") {
		s.trace.add(s.clock.Now(), "operator", "parked before the operator", "", fmt.Sprintf("%v, %d groups", s.stats.Parked, len(parked)))
		quiet = s.troubleOver()
	}
	if quiet {
		quiet = s.releaseParked()
	}
	retries := 0
	for round := 0; quiet && round < s.cfg.OperatorRounds; round++ {
		s.restoreArchived()
		req, ok := s.resetRequest()
		if !ok {
			break
		}
		sum := s.replayRun("operator-reset", req, crashPlan{}, nil)
		if injectedFault(sum) && retries < maxOperatorRetries {
			// The operator sees the run's error and runs it again: a
			// round an injected fault spoiled does not count.
			retries++
			round--
		}
		// A reset message waits out its first backoff in the parking
		// queue (hidden); the operator looks again after the longest.
		s.notBefore = s.clock.Now().Add(s.cfg.Replay.Options.BackoffMax + s.cfg.Replay.Schedule)
		quiet = s.drain(s.clock.Now().Add(s.cfg.DrainLimit))
		if quiet {
			quiet = s.releaseParked()
		}
	}
	if quiet {
		s.retentionTail()
	}
	s.stats.Simulated = s.clock.Now().Sub(s.start)
	s.check(quiet)
	return &Report{Config: s.cfg, Stats: s.stats, Violations: s.violations, Trace: s.trace, Runs: s.runRecords}
}

// troubleOver is the operator waiting, before bringing anything back, for
// the tax service's trouble to be over; it reports whether the system
// quiesced again.
func (s *Sim) troubleOver() bool {
	var over time.Time
	for _, p := range s.cfg.Phases {
		if end := s.start.Add(p.To); end.After(over) {
			over = end
		}
	}
	for _, f := range s.cfg.Freezes {
		if end := s.start.Add(f.To); end.After(over) {
			over = end
		}
	}
	gap := over.Sub(s.clock.Now())
	if gap <= 0 {
		return true
	}
	s.clock.Advance(gap)
	return s.drain(s.clock.Now().Add(s.cfg.DrainLimit))
}

// resetRequest is the operator's run that brings the parking queue back to
// the source with fresh counts, at the operator's rate (a lane's slow
// schedule is not theirs); ok is false when there is nothing to bring back.
// On a lane with Groups, the operator first sets aside what can never
// succeed (see setAsideHopeless), and brings back nothing while a group is
// parked: its records in the parking queue are the release's.
func (s *Sim) resetRequest() (replay.Request, bool) {
	rate := 50.0
	if r := s.cfg.Replay.Options.Rate; r > rate {
		rate = r
	}
	req := replay.Request{Routes: []replay.Route{s.sqs.parkingRoute()}, ResetCount: true, Max: 100000, Rate: rate}
	if s.cfg.Lane.Groups != "" {
		if parks, _ := s.groups.mem.List(context.Background()); len(parks) > 0 {
			return req, false
		}
		s.setAsideHopeless()
	}
	return req, s.sqs.total(s.sqs.parking) > 0
}

// maxOperatorRetries bounds the operator's rounds run again after an
// injected fault (see injectedFault).
const maxOperatorRetries = 3

// injectedFault reports whether an injected fault spoiled run sum: an
// error of a message or of a route, or a gate closed by one (the seal
// key or the ledger's runs unreadable).
func injectedFault(sum replay.Summary) bool {
	closed := func(gates []replay.Gate) bool {
		return slices.ContainsFunc(gates, func(g replay.Gate) bool {
			return g.Decision == replay.GateClosed && strings.Contains(g.Detail, "(injected)")
		})
	}
	if sum.Total.Errors > 0 || closed(sum.Gates) {
		return true
	}
	return slices.ContainsFunc(sum.Routes, func(r replay.RouteSummary) bool {
		return r.Error != "" || r.StopReason == replay.StopError || r.StopReason == replay.StopCanceled || closed(r.Gates)
	})
}

// drain runs the loop until the system is quiet or until. A system still
// busy then gets, once, the time the engine's documented pace allows for
// what is left (see paceBound): a DrainLimit drawn for the scenario is not
// the engine's bound, and poison messages held by an open breaker are
// replayed only in its probes.
func (s *Sim) drain(until time.Time) bool {
	if s.loop(until) {
		return true
	}
	more, why := s.paceBound()
	s.extended += more
	s.trace.add(s.clock.Now(), "sim", "drain limit", "", fmt.Sprintf("not quiet: %s more for %s", more, why))
	return s.loop(s.clock.Now().Add(more))
}

// paceBound is the longest the engine may take, by its documented bounds,
// to bring the messages left in the source queue and the DLQ to a terminal
// place, and what it is made of. Each message is replayed at most
// 2 x MaxReplays times since its publication or its count's reset (refunds
// included; replays it made count against it), then parked. While the
// breaker is open, replays go out only in its probes, of CanaryLimit
// messages each, at most BackoffMax apart (the wait doubles up to it);
// while it is closed, a message's next replay is due within BackoffMax.
// So each period of BackoffMax (plus a schedule, for the run that finds it
// due) replays at least min(CanaryLimit, left) messages, and a message
// needs its remaining replays one period apart, then a period for its
// park: at most ceil(left/CanaryLimit) + most + 1 periods, plus the time a
// replay takes to come back to the DLQ (MaxReceiveCount receives, a
// visibility timeout apart).
func (s *Sim) paceBound() (time.Duration, string) {
	o, q := s.cfg.Replay.Options, s.cfg.Queues
	maxReplays, backoffMax := o.MaxReplays, o.BackoffMax
	if maxReplays <= 0 {
		maxReplays = settings.DefaultMaxReplays
	}
	if backoffMax <= 0 {
		backoffMax = settings.DefaultBackoffMax
	}
	probe := o.CanaryLimit
	if probe <= 0 {
		probe = settings.DefaultCanaryLimit
	}
	msgs, left, most := 0, 0, 0
	for _, url := range []string{s.sqs.source, s.sqs.dlq} {
		for _, m := range s.sqs.q.Messages(url) {
			r := max(0, 2*maxReplays-s.sqs.replaysOf(aws.ToString(m.MessageId)))
			msgs++
			left += r
			most = max(most, r)
		}
	}
	periods := (left+probe-1)/probe + most + 1
	period := backoffMax + s.cfg.Replay.Schedule
	back := time.Duration(q.MaxReceiveCount) * q.Visibility
	if s.cfg.Lane.Groups != "" {
		// A head waits in the source at most until it would expire: the
		// consumer parks it before then.
		back = s.cfg.Queues.SourceRetention
	}
	d := time.Duration(periods)*period + back + s.cfg.Replay.Schedule
	return d, fmt.Sprintf("%d messages with at most %d replays left (at most %d for one; probes of %d): %d periods of BackoffMax %s + a schedule, and %s to come back",
		msgs, left, most, probe, periods, backoffMax, back)
}

// maxPollsPerStep bounds the consumer invocations in one step of the loop.
const maxPollsPerStep = 8

// loop advances the simulation until it is quiet (every publication sent,
// nothing in the source queue or the DLQ, no action pending) or until.
func (s *Sim) loop(until time.Time) bool {
	for {
		now := s.clock.Now()
		for s.next < len(s.pubs) && !s.start.Add(s.pubs[s.next].At).After(now) {
			s.publish(s.pubs[s.next])
			s.next++
		}
		for len(s.actions) > 0 && !s.start.Add(s.actions[0].At).After(now) {
			a := s.actions[0]
			s.actions = s.actions[1:]
			a.Do(s)
		}
		s.operatorDue(now)
		s.schedule(now)
		busy := 0
		for range maxPollsPerStep {
			n := s.poll()
			busy += n
			if n == 0 {
				break
			}
		}
		if s.next >= len(s.pubs) && len(s.actions) == 0 && !now.Before(s.notBefore) && s.quiet() {
			return true
		}
		now = s.clock.Now()
		if !now.Before(until) {
			return false
		}
		if busy > 0 {
			s.clock.Advance(time.Second)
			continue
		}
		next := s.tick
		if len(s.due) > 0 {
			next = earliest(next, s.due[0])
		}
		if s.next < len(s.pubs) {
			next = earliest(next, s.start.Add(s.pubs[s.next].At))
		}
		if len(s.actions) > 0 {
			next = earliest(next, s.start.Add(s.actions[0].At))
		}
		if now.Before(s.notBefore) {
			next = earliest(next, s.notBefore)
		}
		if !s.nextRelease.IsZero() {
			next = earliest(next, s.nextRelease)
		}
		if len(s.groups.jobs) > 0 {
			next = earliest(next, s.groups.step)
		}
		switch {
		case s.cfg.Lane.Groups != "":
			// A head in its backoff may hide its group for hours: the
			// mapping's next delivery is when a group is free again.
			if at, ok := s.sqs.nextDelivery(now); ok {
				next = earliest(next, later(at, now.Add(5*time.Second)))
			}
		default:
			if v, f := s.sqs.counts(s.sqs.source); v+f > 0 {
				next = earliest(next, now.Add(5*time.Second))
			}
		}
		s.clock.Advance(max(next.Sub(now), time.Second))
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// operatorDue runs the operator's rounds that are due at now: the review
// of the invalid queue, the look at the parked groups, and the steps of
// the releases under way.
func (s *Sim) operatorDue(now time.Time) {
	if !now.Before(s.nextReview) && s.arch == nil {
		s.reviewInvalid()
	}
	if !s.nextRelease.IsZero() && !now.Before(s.nextRelease) {
		s.lookAtParks()
		s.nextRelease = now.Add(s.cfg.ReleaseEvery)
	}
	s.releaseSteps(now)
}

// invalidReview is how often the operator, paged by InvalidDepthAlarm,
// takes what the invalid queue holds to the producer's owner
// (docs/OPERATIONS.md, "Invalid-queue depth"): well within the queue's
// 14-day retention, so that no invalid message expires unread. Without it,
// a seed that simulates more than 14 days (a long drain behind an open
// breaker) loses its first invalid messages to retention, which no
// deployment with the alarm does.
const invalidReview = 3 * 24 * time.Hour

// reviewInvalid is the operator's review: every message of the invalid
// queue is read (with its verdict) and deleted; check counts the messages
// read as it counts those still in the queue.
func (s *Sim) reviewInvalid() {
	s.nextReview = s.clock.Now().Add(invalidReview)
	ctx := context.Background()
	url := aws.String(s.sqs.invalid)
	n := 0
	for {
		out, err := s.sqs.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) == 0 {
			break
		}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		res, err := s.sqs.q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: entries})
		if err != nil || len(res.Failed) > 0 {
			s.violate("review-failed", "", fmt.Sprintf("delete from the invalid queue: %v %v", err, res))
			break
		}
		for _, m := range out.Messages {
			s.sqs.deleted("", aws.ToString(m.MessageId))
			s.reviewed = append(s.reviewed, m)
			n++
		}
	}
	if n > 0 {
		s.trace.add(s.clock.Now(), "operator", "review the invalid queue", "", fmt.Sprintf("%d messages to the producer's owner", n))
	}
}

// quiet reports whether nothing is left in the source queue or the DLQ,
// and no release of the operator's is under way.
func (s *Sim) quiet() bool {
	for _, url := range []string{s.sqs.source, s.sqs.dlq} {
		if v, f := s.sqs.counts(url); v+f > 0 {
			return false
		}
	}
	return len(s.groups.jobs) == 0
}

// publish sends p as the producer.
func (s *Sim) publish(p *Publication) {
	attrs, detail := p.Attrs, p.WantReason
	if p.Forge != nil {
		attrs, detail = s.forged(p)
		s.stats.Forged++
	}
	id, err := s.sqs.publish(p, attrs)
	if err != nil {
		s.violate("publish-failed", s.subject("", p.N), err.Error())
		return
	}
	s.stats.Publications++
	s.trace.add(s.clock.Now(), "producer", "publish "+string(p.Kind), s.subject(id, p.N), detail)
}

// expired returns an error when ctx's deadline, a simulated time, has
// passed: an SDK call with such a context fails before it leaves, as a real
// one does on the real clock. A deadline before the simulation's start was
// set on the real clock (context.WithTimeout around a call that must finish
// whatever the run's context says): it is not the simulation's.
func (s *Sim) expired(ctx context.Context) error {
	if dl, ok := ctx.Deadline(); ok && !dl.Before(s.start) && !s.clock.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// scheduledRun is EventBridge's replay invocation; some crash, some are
// overlapped by an operator run.
func (s *Sim) scheduledRun() {
	key := fmt.Sprint(s.runs + 1)
	var crash crashPlan
	if s.dice.chance("run-crash", key, s.cfg.Faults.RunCrash) {
		ops := []string{"after-send", "before-delete", "after-receive"}
		crash = crashPlan{Op: ops[int(s.dice.at("run-crash-op", key, 0)*3)], At: 1 + int(s.dice.at("run-crash-at", key, 0)*2)}
	}
	var overlap func(context.Context) error
	if s.dice.chance("run-overlap", key, s.cfg.Faults.RunOverlap) {
		overlap = s.slowSend
	}
	s.archivePass()
	s.replayRun("sched", replay.Request{Routes: []replay.Route{s.sqs.route()}}, crash, overlap)
}

// operatorRun is an operator's on-demand run: sometimes filtered to a few
// orders, sometimes capped.
func (s *Sim) operatorRun() {
	req := replay.Request{Routes: []replay.Route{s.sqs.route()}, Max: 20 + s.rng.IntN(200)}
	if s.rng.IntN(2) == 0 && s.next > 0 {
		for range 3 {
			if id := s.pubs[s.rng.IntN(s.next)].OrderID; id != "" {
				req.Filter.Keys = append(req.Filter.Keys, id)
			}
		}
	}
	s.replayRun("operator", req, crashPlan{}, nil)
}

// jump moves the clock forward by d at once (a paused VM, an NTP step).
func (s *Sim) jump(d time.Duration) {
	s.clock.Advance(d)
	s.trace.add(s.clock.Now(), "clock", "jump", "", d.String())
}

// violate records a broken invariant once per kind and subject.
func (s *Sim) violate(kind, subject, detail string) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	k := kind + "\x00" + subject
	if s.seen[k] {
		return
	}
	s.seen[k] = true
	s.violations = append(s.violations, Violation{Kind: kind, Subject: subject, Detail: detail})
	s.trace.add(s.clock.Now(), "invariant", kind, subject, detail)
}

// subject names a message and its publication (and order) for traces.
func (s *Sim) subject(id string, n int) string {
	var parts []string
	if id != "" {
		parts = append(parts, id)
	}
	if n >= 0 && n < len(s.pubs) {
		parts = append(parts, fmt.Sprintf("pub#%d", n))
		if id := s.pubs[n].OrderID; id != "" {
			parts = append(parts, clip(id, 60))
		}
	}
	return strings.Join(parts, " ")
}

// ids names the messages of a batch.
func (s *Sim) ids(msgs []types.Message) string {
	parts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		parts = append(parts, s.subject(aws.ToString(m.MessageId), s.sqs.pubOf(aws.ToString(m.MessageId))))
	}
	return strings.Join(parts, ", ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("...(%d bytes)", len(s))
}

// slowSend is a SendMessageBatch call that takes longer than the decision
// window (SDK retries of a throttled call): an operator's run starts
// meanwhile and finds the messages visible again. The call honours its
// context: it ends at the context's deadline, without sending, if that
// comes first.
func (s *Sim) slowSend(ctx context.Context) error {
	d := s.cfg.Replay.Options.DecisionWindow + 15*time.Second
	if dl, ok := ctx.Deadline(); ok && dl.Before(s.clock.Now().Add(d)) {
		d = max(dl.Sub(s.clock.Now()), 0)
		s.clock.Advance(d / 2)
		s.trace.add(s.clock.Now(), "operator", "overlapping run", "", "")
		s.replayRun("operator", replay.Request{Routes: []replay.Route{s.sqs.route()}, Max: 50}, crashPlan{}, nil)
		if rest := dl.Sub(s.clock.Now()); rest > 0 {
			s.clock.Advance(rest)
		}
		return context.DeadlineExceeded
	}
	end := s.clock.Now().Add(d)
	s.clock.Advance(d / 2)
	s.trace.add(s.clock.Now(), "operator", "overlapping run", "", "")
	s.replayRun("operator", replay.Request{Routes: []replay.Route{s.sqs.route()}, Max: 50}, crashPlan{}, nil)
	if rest := end.Sub(s.clock.Now()); rest > 0 {
		s.clock.Advance(rest)
	}
	// The operator's run took its own time: when it outlasted the call's
	// deadline, the call was cut off there, without sending.
	if err := s.expired(ctx); err != nil {
		return err
	}
	return ctx.Err()
}
