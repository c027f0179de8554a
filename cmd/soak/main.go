// Command soak runs many orders through the stack deployed on the local
// emulator and accounts for every one of them (`make soak N=...` deploys the
// stack first and stops the emulator after). It is a benchmark of the
// promises, not a test of `make test`:
//
//  1. outage: the tax service is down while the first third of the orders is
//     published; valid orders fail until SQS moves them to the DLQ, invalid
//     ones go to the invalid queue at once;
//  2. flaky, with crashed replays: the tax service fails a share of its
//     calls; the replay engine runs in this process against the deployed
//     queues and ledger, configured as the replay function is, and crashes
//     after a batch's sends and ledger marks (its delete fails and the run
//     is cancelled there); `dlq replay` is started and killed (SIGKILL) at a
//     random moment, a few times; the second third is published;
//  3. recovery: the tax service is up; the last third is published;
//  4. quiescence: the source queue and the DLQ are empty (bounded by a
//     timeout), and the accounting table is printed.
//
// Producers' duplicates (the same payload again), conflicting duplicates
// (the same orderId with another payload), orders the tax service refuses
// and invalid orders of every reason are mixed in. The exit status is 1 on
// any loss or double effect: a valid order not invoiced exactly once, an
// invalid order invoiced, an invalid reason miscounted, a message left in
// the DLQ.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/sample/taxstub"
	"github.com/homingdlq/homing/internal/tools/drill"
	"github.com/homingdlq/homing/replay"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "\nsoak:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	orders    int
	seed      uint64
	errorRate float64
	flaky     time.Duration
	timeout   time.Duration
	dlq       string
	kills     int
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.IntVar(&o.orders, "n", 5000, "valid orders to publish")
	fs.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "shuffles the orders and times the kills (printed, to run the same soak again)")
	fs.Float64Var(&o.errorRate, "error-rate", 0.5, "share of tax calls that fail during the flaky phase")
	fs.DurationVar(&o.flaky, "flaky", 90*time.Second, "how long the flaky phase lasts after its orders are published")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "how long to wait for the stack to become quiet after the recovery")
	fs.StringVar(&o.dlq, "dlq", "bin/dlq", "the operator's command to start and kill (built by make build)")
	fs.IntVar(&o.kills, "kills", 2, "`dlq replay` runs to kill")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("flags: %w", err)
	}
	switch {
	case o.orders < phases:
		return o, fmt.Errorf("-n %d: want at least %d", o.orders, phases)
	case o.errorRate < 0 || o.errorRate > 1:
		return o, fmt.Errorf("-error-rate %g: want 0..1", o.errorRate)
	}
	return o, nil
}

// soak is one soak run on the deployed stack.
type soak struct {
	opts     options
	out      drill.Outputs
	sqs      *sqs.Client
	db       *dynamodb.Client
	lambda   *lambda.Client
	ledger   *dynamo.Ledger
	tax      *drill.TaxAdmin
	rng      *rand.Rand
	plan     plan
	started  time.Time
	phase    map[string]time.Duration // how long each step took
	order    []string                 // the steps, in order
	injected []string                 // what each injected crash did
}

func run(ctx context.Context, args []string) error {
	opts, err := parse(args)
	if err != nil {
		return err
	}
	out, err := drill.LoadOutputs(os.Getenv, drill.SourceQueueURL, drill.DeadLetterQueueURL, drill.InvalidQueueURL,
		drill.ParkingQueueURL, drill.LedgerTableName, drill.ReplayFunctionName, drill.TaxServiceAdminURL)
	if err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	s := &soak{
		opts: opts, out: out, sqs: sqs.NewFromConfig(cfg), db: dynamodb.NewFromConfig(cfg), lambda: lambda.NewFromConfig(cfg),
		tax: drill.NewTaxAdmin(out[drill.TaxServiceAdminURL]), rng: rand.New(rand.NewPCG(opts.seed, opts.seed^0x9e3779b97f4a7c15)),
		started: time.Now(), phase: map[string]time.Duration{},
	}
	s.ledger = dynamo.NewLedger(s.db, out[drill.LedgerTableName], nil)
	s.plan = newPlan(strconv.FormatInt(time.Now().Unix()%100000, 10), opts.orders, s.rng)
	fmt.Printf("soak: %d valid orders, %d messages, orderIds %s*, seed %d\n", len(s.plan.valid), s.plan.messages(), s.plan.prefix(), opts.seed)
	if err := s.baseline(ctx); err != nil {
		return err
	}
	defer func() {
		// Leave the stand-in up for whoever comes next.
		_ = s.tax.SetMode(context.WithoutCancel(ctx), taxstub.Mode{Mode: "up"})
	}()

	steps := []struct {
		name string
		do   func(context.Context) error
	}{
		{"outage", s.outage},
		{"flaky, with crashed replays", s.flaky},
		{"recovery", s.recovery},
		{"quiescence", s.quiesce},
	}
	for i, st := range steps {
		fmt.Printf("\n[%d/%d] %s\n", i+1, len(steps), st.name)
		start := time.Now()
		if err := st.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
		s.phase[st.name] = time.Since(start)
		s.order = append(s.order, st.name)
	}
	return s.account(ctx)
}

// baseline says what the queues hold before the soak: the soak counts only
// its own messages, but a busy stack slows it down.
func (s *soak) baseline(ctx context.Context) error {
	for _, k := range []string{drill.SourceQueueURL, drill.DeadLetterQueueURL} {
		d, err := drill.QueueDepth(ctx, s.sqs, s.out[k])
		if err != nil {
			return err
		}
		if d.Total() > 0 {
			fmt.Printf("      note: %s already holds %d messages (not this soak's)\n", k, d.Total())
		}
	}
	return nil
}

func (s *soak) outage(ctx context.Context) error {
	if err := s.tax.SetMode(ctx, taxstub.Mode{Mode: "down"}); err != nil {
		return err
	}
	if err := s.publish(ctx, phaseOutage); err != nil {
		return err
	}
	// Every valid order fails maxReceiveCount times and SQS moves it.
	return s.wait(ctx, "the source queue drains into the DLQ and the invalid queue", 10*time.Minute, func() (bool, string, error) {
		src, err := drill.QueueDepth(ctx, s.sqs, s.out[drill.SourceQueueURL])
		if err != nil {
			return false, "", err
		}
		dlq, err := drill.QueueDepth(ctx, s.sqs, s.out[drill.DeadLetterQueueURL])
		return src.Total() == 0, fmt.Sprintf("source %d, DLQ %d", src.Total(), dlq.Total()), err
	})
}

func (s *soak) flaky(ctx context.Context) error {
	if err := s.tax.SetMode(ctx, taxstub.Mode{Mode: "flaky", ErrorRate: s.opts.errorRate}); err != nil {
		return err
	}
	// The DLQ holds the outage's dead letters and the tax service answers
	// again: replays have work to crash in.
	if err := s.crashes(ctx); err != nil {
		return err
	}
	if err := s.publish(ctx, phaseFlaky); err != nil {
		return err
	}
	fmt.Printf("      the tax service fails %.0f%% of its calls for %s\n", 100*s.opts.errorRate, s.opts.flaky)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.opts.flaky):
		return nil
	}
}

func (s *soak) recovery(ctx context.Context) error {
	if err := s.tax.SetMode(ctx, taxstub.Mode{Mode: "up"}); err != nil {
		return err
	}
	return s.publish(ctx, phaseRecovery)
}

// quiesce waits until the source queue and the DLQ have been empty for two
// polls in a row: every message invoiced, acknowledged, invalid or parked.
func (s *soak) quiesce(ctx context.Context) error {
	quiet := 0
	err := s.wait(ctx, "the source queue and the DLQ empty", s.opts.timeout, func() (bool, string, error) {
		src, err := drill.QueueDepth(ctx, s.sqs, s.out[drill.SourceQueueURL])
		if err != nil {
			return false, "", err
		}
		dlq, err := drill.QueueDepth(ctx, s.sqs, s.out[drill.DeadLetterQueueURL])
		if err != nil {
			return false, "", err
		}
		invoiced, err := s.tax.Invoices(ctx, s.plan.prefix())
		if err != nil {
			return false, "", err
		}
		if src.Total()+dlq.Total() == 0 {
			quiet++
		} else {
			quiet = 0
		}
		return quiet >= 2, fmt.Sprintf("source %d, DLQ %d (%d hidden), invoiced %d/%d", src.Total(), dlq.Total(), dlq.InFlight, len(invoiced), len(s.plan.valid)), nil
	})
	if err != nil {
		fmt.Printf("      %v: accounting for what is there\n", err)
	}
	return nil
}

func (s *soak) publish(ctx context.Context, phase int) error {
	start := time.Now()
	bodies := s.plan.bodies[phase]
	if err := drill.Publish(ctx, s.sqs, s.out[drill.SourceQueueURL], bodies); err != nil {
		return err
	}
	fmt.Printf("      published %d messages in %s\n", len(bodies), time.Since(start).Round(time.Millisecond))
	return nil
}

// wait polls cond every 5 s, printing its state every 30 s, until it holds
// or timeout passes (an error then).
func (s *soak) wait(ctx context.Context, what string, timeout time.Duration, cond func() (bool, string, error)) error {
	start := time.Now()
	var printed time.Time
	for {
		ok, state, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok || time.Since(printed) >= 30*time.Second {
			fmt.Printf("      %-60s %-50s %5.0fs\n", what, state, time.Since(start).Seconds())
			printed = time.Now()
		}
		if ok {
			return nil
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("%s: not done after %s (%s)", what, timeout, state)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(5 * time.Second):
		}
	}
}

// replayRuns sums the replay runs that started since the soak did, from
// the ledger (the scheduled ones, the operator's and the crashed ones).
func (s *soak) replayRuns(ctx context.Context) (runs int, total replay.Counts, err error) {
	sums, err := s.ledger.Runs(ctx, 500)
	if err != nil {
		return 0, total, fmt.Errorf("read the replay runs: %w", err)
	}
	total.Parked = map[string]int{}
	for _, sum := range sums {
		if sum.StartedAt.Before(s.started) || sum.DryRun {
			continue
		}
		runs++
		c := sum.Total
		total.Examined += c.Examined
		total.Replayed += c.Replayed
		total.Recovered += c.Recovered
		total.Applied += c.Applied
		total.Errors += c.Errors
		for r, n := range c.Parked {
			total.Parked[r] += n
		}
	}
	return runs, total, nil
}
