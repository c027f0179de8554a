package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/tools/drill"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// where is the terminal place of one message the soak found.
type where struct {
	orderID string // "" when the body has none
	reason  string
}

// orderOf returns the orderId a message of this soak names: the body's
// orderId, or the id every invalid body carries.
func (p plan) orderOf(body string) string {
	i := strings.Index(body, p.prefix())
	if i < 0 {
		return ""
	}
	j := i + len(p.prefix())
	for j < len(body) && (body[j] == '-' || body[j] >= '0' && body[j] <= '9' || body[j] >= 'A' && body[j] <= 'Z') {
		j++
	}
	return body[i:j]
}

func (p plan) mine(m types.Message) bool { return strings.Contains(aws.ToString(m.Body), p.prefix()) }

// account takes this soak's messages from the invalid and parking queues,
// counts what is left in the DLQ, reads the invoices, prints the table and
// returns an error listing every loss and double effect.
func (s *soak) account(ctx context.Context) error {
	p := s.plan
	invalids, err := s.take(ctx, drill.InvalidQueueURL, func(m types.Message) (string, error) {
		meta, _, _, err := invalid.Read(m.MessageAttributes)
		return meta.Reason, err
	})
	if err != nil {
		return err
	}
	parked, err := s.take(ctx, drill.ParkingQueueURL, func(m types.Message) (string, error) {
		meta, _, _, err := replay.Read(m.MessageAttributes)
		return meta.Reason, err
	})
	if err != nil {
		return err
	}
	var leftIDs []string
	left, err := drill.Count(ctx, s.sqs, s.out[drill.DeadLetterQueueURL], 60, 0, func(m types.Message) bool {
		if p.mine(m) {
			leftIDs = append(leftIDs, p.orderOf(aws.ToString(m.Body)))
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	invoices, err := s.tax.Invoices(ctx, p.prefix())
	if err != nil {
		return err
	}
	runs, replays, err := s.replayRuns(ctx)
	if err != nil {
		return err
	}

	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	parkedOrders := map[string]string{}
	for _, w := range parked {
		parkedOrders[w.orderID] = w.reason
	}
	once, twice := 0, 0
	var missing []string
	for _, id := range p.valid {
		switch n := invoices[id]; {
		case n == 1:
			once++
		case n > 1:
			twice++
			problem("%s invoiced %d times", id, n)
		default:
			missing = append(missing, id)
			place := "nowhere: lost"
			switch {
			case parkedOrders[id] != "":
				place = "parked (" + parkedOrders[id] + ")"
			case slices.Contains(leftIDs, id):
				place = "still in the DLQ"
			}
			problem("%s not invoiced: %s", id, place)
		}
	}
	wrongly := 0
	for id := range invoices {
		if _, ok := p.never[id]; ok {
			wrongly++
			problem("%s invoiced but must not be", id)
		}
	}
	byReason := map[string]int{}
	for _, w := range invalids {
		byReason[w.reason]++
	}
	for _, r := range sortedKeys(p.invalid, byReason) {
		if byReason[r] != p.invalid[r] {
			problem("invalid queue: %d %s, want %d", byReason[r], r, p.invalid[r])
		}
	}
	if left > 0 {
		problem("%d messages left in the DLQ", left)
	}

	row := func(label string, value any) { fmt.Printf("  %-44s %12v\n", label, value) }
	fmt.Println()
	row("messages published", p.messages())
	row("  valid orders", len(p.valid))
	row("  producer duplicates (same payload)", p.duplicates)
	row("  conflicting duplicates (same orderId)", p.conflicts)
	row("  refused by the tax service (422)", len(p.rejects))
	row("  invalid orders", total(p.invalid)-p.conflicts-len(p.rejects))
	row("invoiced exactly once", fmt.Sprintf("%d of %d", once, len(p.valid)))
	row("invoiced twice or more", twice)
	row("not invoiced (valid orders)", len(missing))
	row("invoiced but invalid or refused", wrongly)
	row("invalid, by reason", fmt.Sprintf("%d of %d", len(invalids), total(p.invalid)))
	for _, r := range sortedKeys(p.invalid, byReason) {
		row("  "+r, fmt.Sprintf("%d of %d", byReason[r], p.invalid[r]))
	}
	parkedBy := map[string]int{}
	for _, w := range parked {
		parkedBy[w.reason]++
	}
	row("parked, by reason", len(parked))
	for _, r := range sortedKeys(parkedBy) {
		row("  "+r, parkedBy[r])
	}
	row("left in the DLQ", left)
	row("replay runs (scheduled, operator's, crashed)", runs)
	row("  replayed", replays.Replayed)
	row("  recovered (sent before a crash, deleted)", replays.Recovered)
	row("  applied already (removed unsent)", replays.Applied)
	row("  parked", replays.ParkedTotal())
	row("  errors", replays.Errors)
	row("crashes injected", len(s.injected))
	for _, name := range s.order {
		row("time: "+name, s.phase[name].Round(time.Second))
	}
	row("time: total", time.Since(s.started).Round(time.Second))
	if len(problems) > 0 {
		const most = 30
		if len(problems) > most {
			problems = append(problems[:most], fmt.Sprintf("... and %d more", len(problems)-most))
		}
		return errors.New("losses or double effects:\n  " + strings.Join(problems, "\n  "))
	}
	fmt.Println("\nEvery order is accounted for: each valid one invoiced exactly once, nothing invalid invoiced, nothing left behind.")
	return nil
}

// take removes this soak's messages from the queue of output key and
// returns each one's order and reason.
func (s *soak) take(ctx context.Context, key string, reason func(types.Message) (string, error)) ([]where, error) {
	msgs, err := drill.Take(ctx, s.sqs, s.out[key], s.plan.mine)
	if err != nil {
		return nil, err
	}
	out := make([]where, 0, len(msgs))
	for _, m := range msgs {
		r, err := reason(m)
		if err != nil {
			return nil, fmt.Errorf("%s: message %s: %w", key, aws.ToString(m.MessageId), err)
		}
		out = append(out, where{orderID: s.plan.orderOf(aws.ToString(m.Body)), reason: r})
	}
	return out, nil
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// sortedKeys returns the keys of every map, sorted, once each.
func sortedKeys(ms ...map[string]int) []string {
	seen := map[string]int{}
	for _, m := range ms {
		maps.Copy(seen, m)
	}
	return slices.Sorted(maps.Keys(seen))
}
