// Command demo tells the project's story on the stack deployed to the local
// emulator (`make demo` deploys it first and tears it down after):
//
//  1. the tax service goes down; a realistic set of orders is published:
//     mostly valid, some of each invalid reason, some duplicate deliveries;
//  2. invalid orders go straight to the invalid queue with their reason;
//     valid ones fail, and SQS moves them to the DLQ after maxReceiveCount;
//  3. the tax service comes back; the scheduled replay (EventBridge, every
//     minute locally) brings the dead letters home, and the idempotent
//     consumer invoices every order exactly once;
//  4. a final table accounts for every order. The exit status is 0 only
//     when every order is accounted for.
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/sample/taxstub"
	"github.com/homingdlq/homing/internal/tools/drill"
	"github.com/homingdlq/homing/invalid"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo:", err)
		os.Exit(1)
	}
}

type demo struct {
	out     drill.Outputs
	sqs     *sqs.Client
	ledger  *dynamo.Ledger
	tax     *drill.TaxAdmin
	started time.Time
	show    progress
	// invalidSeen are the records (source message ids) whose verdict the
	// demo took from the invalid queue: a standard queue delivers at least
	// once, and an SDK retry of a send whose answer was lost leaves two
	// copies of one verdict, which is one invalid record.
	invalidSeen map[string]bool
}

func run(ctx context.Context) error {
	out, err := drill.LoadOutputs(os.Getenv, drill.SourceQueueURL, drill.DeadLetterQueueURL, drill.InvalidQueueURL,
		drill.LedgerTableName, drill.TaxServiceAdminURL)
	if err != nil {
		return err
	}
	d := &demo{out: out, started: time.Now(), show: newProgress(os.Stdout)}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	d.sqs = sqs.NewFromConfig(cfg)
	d.ledger = dynamo.NewLedger(dynamodb.NewFromConfig(cfg), d.out[drill.LedgerTableName], time.Now)
	d.tax = drill.NewTaxAdmin(d.out[drill.TaxServiceAdminURL])

	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	s := newStory(run, 30)

	d.step("1/4", "the tax service goes down")
	if err := d.tax.SetMode(ctx, taxstub.Mode{Mode: "down"}); err != nil {
		return err
	}
	d.step("2/4", fmt.Sprintf("publishing %d order messages (%d valid orders, %d duplicate deliveries, %d invalid)",
		len(s.messages), len(s.valid), s.duplicates, len(s.messages)-s.deadLettered+2))
	if err := drill.Publish(ctx, d.sqs, d.out[drill.SourceQueueURL], s.messages); err != nil {
		return err
	}
	invalidReasons := map[string]int{}
	wantEarly := 0
	for r, n := range s.invalid {
		if r != "conflicting-duplicate" && r != "rejected-by-tax-service" {
			wantEarly += n
		}
	}
	if err := d.wait(ctx, "invalid orders reach the invalid queue", 2*time.Minute, func() (bool, string, error) {
		if err := d.takeInvalid(ctx, run, invalidReasons); err != nil {
			return false, "", err
		}
		n := total(invalidReasons)
		return n >= wantEarly, fmt.Sprintf("%d/%d", n, wantEarly), nil
	}); err != nil {
		return err
	}
	if err := d.wait(ctx, "valid orders fail and SQS moves them to the DLQ", 5*time.Minute, func() (bool, string, error) {
		n, err := d.count(ctx, d.out[drill.DeadLetterQueueURL], run)
		return n >= s.deadLettered, fmt.Sprintf("%d/%d in the DLQ", n, s.deadLettered), err
	}); err != nil {
		return err
	}
	invoices, err := d.tax.Invoices(ctx, "-"+run+"-")
	if err != nil {
		return err
	}
	fmt.Printf("      dead-lettered: %d messages, invoiced so far: %d\n", s.deadLettered, len(invoices))

	d.step("3/4", "the tax service is back; waiting for the scheduled replay (every minute)")
	if err := d.tax.SetMode(ctx, taxstub.Mode{Mode: "up"}); err != nil {
		return err
	}
	if err := d.wait(ctx, "dead letters come home and are invoiced", 6*time.Minute, func() (bool, string, error) {
		if err := d.takeInvalid(ctx, run, invalidReasons); err != nil {
			return false, "", err
		}
		inv, err := d.tax.Invoices(ctx, "-"+run+"-")
		if err != nil {
			return false, "", err
		}
		left, err := d.count(ctx, d.out[drill.DeadLetterQueueURL], run)
		if err != nil {
			return false, "", err
		}
		done := len(inv) >= len(s.valid) && left == 0 && total(invalidReasons) >= total(s.invalid)
		return done, fmt.Sprintf("invoiced %d/%d, DLQ %d, invalid %d/%d", len(inv), len(s.valid), left, total(invalidReasons), total(s.invalid)), nil
	}); err != nil {
		return err
	}
	// Let in-flight duplicates settle, then account for everything.
	if err := d.wait(ctx, "the source queue drains", 2*time.Minute, func() (bool, string, error) {
		depth, err := drill.QueueDepth(ctx, d.sqs, d.out[drill.SourceQueueURL])
		return depth.Visible+depth.InFlight == 0, fmt.Sprintf("%d left", depth.Visible+depth.InFlight), err
	}); err != nil {
		return err
	}
	d.step("4/4", "accounting")
	return d.report(ctx, s, run, invalidReasons)
}

func (d *demo) step(n, what string) {
	fmt.Printf("\n[%s] %s\n", n, what)
}

// wait polls cond every 2 s until it holds or timeout passes, redrawing its
// progress on a terminal, one line at its end elsewhere.
func (d *demo) wait(ctx context.Context, what string, timeout time.Duration, cond func() (bool, string, error)) error {
	start := time.Now()
	for {
		ok, state, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			d.show.end(what, state, time.Since(start), true)
			return nil
		}
		if time.Since(start) > timeout {
			d.show.end(what, state, time.Since(start), false)
			return fmt.Errorf("%s: not done after %s (%s)", what, timeout, state)
		}
		d.show.poll(what, state, time.Since(start))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// takeInvalid moves this run's messages from the invalid queue into counts
// by reason (the demo owns them; an operator would fix and resend them).
func (d *demo) takeInvalid(ctx context.Context, run string, into map[string]int) error {
	mine, err := drill.Take(ctx, d.sqs, d.out[drill.InvalidQueueURL], func(m types.Message) bool { return strings.Contains(aws.ToString(m.Body), run) })
	if err != nil {
		return err
	}
	if d.invalidSeen == nil {
		d.invalidSeen = map[string]bool{}
	}
	for _, m := range mine {
		meta, _, _, err := invalid.Read(m.MessageAttributes)
		if err != nil {
			return err
		}
		if d.invalidSeen[meta.MessageID] {
			continue
		}
		d.invalidSeen[meta.MessageID] = true
		into[meta.Reason]++
	}
	return nil
}

// count browses url and counts this run's messages, leaving them in place
// (hidden for 2 s only, so the replay is barely delayed).
func (d *demo) count(ctx context.Context, url, run string) (int, error) {
	return drill.Count(ctx, d.sqs, url, 2, 0, func(m types.Message) bool { return strings.Contains(aws.ToString(m.Body), run) })
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func (d *demo) report(ctx context.Context, s story, run string, invalidReasons map[string]int) error {
	invoices, err := d.tax.Invoices(ctx, "-"+run+"-")
	if err != nil {
		return err
	}
	moved, applied, parked, err := d.replayTotals(ctx, s)
	if err != nil {
		return err
	}
	var problems []string
	once := 0
	for _, id := range s.valid {
		switch n := invoices[id]; n {
		case 1:
			once++
		default:
			problems = append(problems, fmt.Sprintf("%s invoiced %d times", id, n))
		}
	}
	for id := range invoices {
		if !slices.Contains(s.valid, id) {
			problems = append(problems, fmt.Sprintf("%s invoiced but should not be", id))
		}
	}
	for r, n := range s.invalid {
		if invalidReasons[r] != n {
			problems = append(problems, fmt.Sprintf("invalid reason %s: %d, want %d", r, invalidReasons[r], n))
		}
	}
	if moved+applied < s.deadLettered {
		problems = append(problems, fmt.Sprintf("replayed %d and removed as already applied %d, want at least %d", moved, applied, s.deadLettered))
	}
	absorbed := s.deadLettered - 2 - once // replayed valid deliveries that issued nothing

	row := func(label string, value any) { fmt.Printf("  %-36s %12v\n", label, value) }
	fmt.Println()
	row("messages published", len(s.messages))
	row("orders invoiced exactly once", fmt.Sprintf("%d of %d", once, len(s.valid)))
	reasons := make([]string, 0, len(invalidReasons))
	for r := range invalidReasons {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	row("invalid, by reason", total(invalidReasons))
	for _, r := range reasons {
		row("  "+r, invalidReasons[r])
	}
	row("dead-lettered during the outage", s.deadLettered)
	row("replayed by the schedule", moved)
	row("removed, already applied", applied)
	row("parked", parked)
	row("duplicates absorbed", absorbed)
	row("time", time.Since(d.started).Round(time.Second))
	if len(problems) > 0 {
		return fmt.Errorf("not every order is accounted for:\n  %s", strings.Join(problems, "\n  "))
	}
	fmt.Println("\nEvery order is accounted for.")
	// The local stack holds two lanes (orders, and the example's payments).
	look := fmt.Sprintf("export HOMING_LANE=orders; bin/dlq inspect; bin/dlq audit --runs 5; bin/dlq audit --key %s", s.valid[0])
	if os.Getenv("KEEP") != "" {
		fmt.Printf("The stack is still up. Look around with the operator's CLI:\n  %s\nand stop it with: make emulator-down\n", look)
	} else {
		fmt.Printf("To look around with the operator's CLI, run `make demo KEEP=1`, then:\n  %s\n", look)
	}
	return nil
}

// replayTotals reads the replay ledger, as an operator's audit would: each
// message of this run's orders that the replay sent home or parked has a
// record in its order's history.
func (d *demo) replayTotals(ctx context.Context, s story) (replayed, applied, parked int, err error) {
	orders := append(slices.Clone(s.valid), s.rejectID)
	for _, id := range orders {
		history, err := d.ledger.History(ctx, record.HistoryKey(id, ""))
		if err != nil {
			return 0, 0, 0, fmt.Errorf("history of %s: %w", id, err)
		}
		for _, r := range history {
			switch r.State {
			case record.Sent:
				replayed++
			case record.Resolved:
				applied++ // the other copy of a duplicate got there first
			case record.Parked:
				parked++
			}
		}
	}
	return replayed, applied, parked, nil
}
