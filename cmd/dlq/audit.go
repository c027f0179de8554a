package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/settings"
)

// orderAudit is the output of dlq audit --order.
type orderAudit struct {
	OrderID  string                 `json:"orderId"`
	OrderKey string                 `json:"orderKey"` // the ledger partition
	History  []replay.MessageRecord `json:"history"`  // one record per DLQ message of the order, first seen first
	Invoice  invoiceRecord          `json:"invoice"`
}

// invoiceRecord is the consumer's idempotency record of an order.
type invoiceRecord struct {
	Key           string    `json:"key"` // "<consumer>#<orderId>"
	Found         bool      `json:"found"`
	Status        string    `json:"status,omitempty"` // IN_PROGRESS or COMPLETED
	Invoiced      bool      `json:"invoiced"`         // COMPLETED and not expired
	InvoiceNumber string    `json:"invoiceNumber,omitempty"`
	ExpiresAt     time.Time `json:"expiresAt,omitzero"`
}

func (a *app) auditCommand() *cobra.Command {
	var (
		order    string
		runs     int
		consumer string
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "An order's history in the replay ledger and its invoice, or the last replay runs",
		Long: `audit --order ID shows what the replay ledger holds about an order: one record
per DLQ message of the order (SEEN: dead-lettered and seen by a run; INTENT: a
run is sending it; SENT: replayed, with its replay count, run id and time;
PARKED: sent to the parking queue, with the reason), and the consumer's
idempotency record "<consumer>#<orderId>": COMPLETED with the invoice number
means the order is invoiced. Ledger records live 30 days.

audit --runs N (the default, N=10) lists the last replay runs, scheduled and
on demand (run ids starting "dlq-" come from this command), with their counts,
gate decisions, duration and whether they were dry runs. Dry runs write no
record and do not appear.`,
		Example: `  dlq audit --order ORD-2026-000123
  dlq audit --runs 5
  dlq audit --runs 1 --json | jq '.[0].total'`,
		RunE: runE(func(cmd *cobra.Command) error {
			if runs < 1 {
				return usageError("--runs %d: want at least 1", runs)
			}
			if order == "" {
				sums, err := a.auditRuns(cmd.Context(), runs)
				return show(a, sums, err, writeRuns)
			}
			rep, err := a.auditOrder(cmd.Context(), order, consumer)
			return show(a, rep, err, writeOrderAudit)
		}),
	}
	cmd.Flags().StringVar(&order, "order", "", "the order id to audit")
	cmd.Flags().IntVar(&runs, "runs", 10, "list this many of the last runs (without --order)")
	cmd.Flags().StringVar(&consumer, "consumer", settings.ConsumerName.Default, "the consumer's idempotency scope ("+settings.ConsumerName.Env+")")
	cmd.MarkFlagsMutuallyExclusive("order", "runs")
	return cmd
}

// ledger opens a session and its ledger.
func (a *app) ledger(ctx context.Context) (*session, replay.Ledger, string, error) {
	s, err := a.open(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	table, err := s.res.get(outLedger)
	if err != nil {
		return nil, nil, "", err
	}
	return s, s.ledger(table), table, nil
}

func (a *app) auditRuns(ctx context.Context, n int) ([]replay.Summary, error) {
	_, ledger, table, err := a.ledger(ctx)
	if err != nil {
		return nil, err
	}
	sums, err := ledger.Runs(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("read the last runs from ledger table %s: %w", table, err)
	}
	return sums, nil
}

func (a *app) auditOrder(ctx context.Context, orderID, consumer string) (orderAudit, error) {
	rep := orderAudit{OrderID: orderID, OrderKey: replay.OrderKey(orderID, "")}
	s, ledger, _, err := a.ledger(ctx)
	if err != nil {
		return rep, err
	}
	idem, err := s.res.get(outIdempotency)
	if err != nil {
		return rep, err
	}
	history, err := ledger.OrderHistory(ctx, rep.OrderKey)
	if err != nil {
		return rep, fmt.Errorf("read the history of %s from the ledger: %w", rep.OrderKey, err)
	}
	slices.SortStableFunc(history, func(x, y replay.MessageRecord) int {
		return cmp.Or(x.FirstSeenAt.Compare(y.FirstSeenAt), x.At.Compare(y.At), cmp.Compare(x.MessageID, y.MessageID))
	})
	rep.History = append([]replay.MessageRecord{}, history...)
	rep.Invoice, err = readInvoice(ctx, s.items, idem, idempotency.Key(consumer, orderID), a.now())
	return rep, err
}

// readInvoice reads an order's idempotency record: invoiced when COMPLETED
// and not expired.
func readInvoice(ctx context.Context, items dynamo.ItemGetter, table, key string, now time.Time) (invoiceRecord, error) {
	rec := invoiceRecord{Key: key}
	got, found, err := dynamo.GetIdempotencyRecord(ctx, items, table, key)
	if err != nil {
		return rec, fmt.Errorf("read the idempotency record of the order: %w", err)
	}
	if !found {
		return rec, nil
	}
	rec.Found, rec.Status, rec.ExpiresAt = true, string(got.Status), got.ExpiresAt
	if got.Status == idempotency.Completed && got.ExpiresAt.After(now) {
		rec.Invoiced, rec.InvoiceNumber = true, got.Result
	}
	return rec, nil
}

func writeOrderAudit(w io.Writer, rep orderAudit) error {
	fmt.Fprintf(w, "Order %s (ledger %s)\n\n", rep.OrderID, rep.OrderKey)
	if len(rep.History) == 0 {
		fmt.Fprintln(w, "No ledger records: no replay run has seen this order in a DLQ (or its records expired after 30 days).")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FIRST SEEN\tDLQ MESSAGE\tSTATE\tREPLAY\tRUN\tAT\tROUTE\tREASON")
		for _, r := range rep.History {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.FirstSeenAt.Format(time.RFC3339), r.MessageID, stateText(r.State),
				r.ReplayCount, r.RunID, r.At.Format(time.RFC3339), r.Route, r.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	inv := rep.Invoice
	switch {
	case inv.Invoiced:
		fmt.Fprintf(w, "\nInvoiced: invoice %s (idempotency record %s, COMPLETED).\n", inv.InvoiceNumber, inv.Key)
	case inv.Found:
		fmt.Fprintf(w, "\nNot invoiced: idempotency record %s is %s (expires %s).\n", inv.Key, inv.Status, inv.ExpiresAt.Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "\nNot invoiced: no idempotency record %s.\n", inv.Key)
	}
	return nil
}

// stateText explains a ledger state in the operator's words.
func stateText(s replay.State) string {
	switch s {
	case replay.Seen:
		return "SEEN (dead-lettered)"
	case replay.Intent:
		return "INTENT (sending)"
	case replay.Sent:
		return "SENT (replayed)"
	case replay.Parked:
		return "PARKED"
	}
	return string(s)
}

func writeRuns(w io.Writer, sums []replay.Summary) error {
	if len(sums) == 0 {
		_, err := fmt.Fprintln(w, "No replay runs in the ledger (dry runs write none; records live 30 days).")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tRUN\tDRY\tDURATION\tEXAMINED\tREPLAYED\tPARKED\tDELAYED\tDEFERRED\tERRORS\tGATES")
	for _, s := range sums {
		dry := "no"
		if s.DryRun {
			dry = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\n", s.StartedAt.Format(time.RFC3339), s.RunID, dry,
			duration(time.Duration(s.DurationMS)*time.Millisecond), s.Total.Examined, s.Total.Replayed, parkedText(s.Total.Parked),
			s.Total.Delayed, s.Total.Deferred, s.Total.Errors, gatesText(s))
	}
	return tw.Flush()
}
