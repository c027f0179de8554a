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
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// keyAudit is the output of dlq audit --key.
type keyAudit struct {
	Key        string           `json:"key"`        // the business key
	HistoryKey string           `json:"historyKey"` // the ledger partition
	History    []record.Message `json:"history"`    // one record per DLQ message of the key, first seen first
	// Failures are the failure records of the history's messages (their
	// ids and original ids): why each round failed, first failure first.
	Failures       []failureRecord  `json:"failures"`
	FailureRecords failureStatus    `json:"failureRecords"`
	Completion     completionRecord `json:"completion"`
}

// completionRecord is the consumer's completion record of a key: its
// idempotency record.
type completionRecord struct {
	Key       string    `json:"key"` // "<consumer>#<key>"
	Found     bool      `json:"found"`
	Status    string    `json:"status,omitempty"` // IN_PROGRESS or COMPLETED
	Completed bool      `json:"completed"`        // COMPLETED and not expired
	Result    string    `json:"result,omitempty"` // what the consumer recorded as the key's result
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

func (a *app) auditCommand() *cobra.Command {
	var (
		key, order string
		runs       int
		consumer   string
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "A key's history in the replay ledger, its failures and its completion record, or the last replay runs",
		Long: `audit --key KEY shows what the replay ledger holds about a business key (the
key that the key expression of the lane's route gives a message's body): one
record per DLQ message of the key (SEEN: dead-lettered and seen by a run;
INTENT: a run is sending it; SENT: replayed, with its replay count, run id and
time; PARKED: sent to the parking queue, with the reason), and the consumer's
idempotency record "<consumer>#<key>": COMPLETED with its result means the
consumer has applied the message. The consumer is the replay function's
CONSUMER_NAME unless --consumer names it. --order is an alias of --key.
Ledger records live 30 days.

audit --runs N (the default, N=10) lists the last replay runs, scheduled and
on demand (run ids starting "dlq-" come from this command), with their counts,
gate decisions, duration and whether they were dry runs. Dry runs write no
record and do not appear.`,
		Example: `  dlq audit --key KEY
  dlq audit --runs 5
  dlq audit --runs 1 --json | jq '.[0].total'`,
		RunE: runE(func(cmd *cobra.Command) error {
			if runs < 1 {
				return usageError("--runs %d: want at least 1", runs)
			}
			for _, name := range []string{"key", "order"} {
				if f := cmd.Flags().Lookup(name); f.Changed && f.Value.String() == "" {
					return usageError(`--%s "": want a business key (audit without --key lists the last runs)`, name)
				}
			}
			if cmd.Flags().Changed("consumer") {
				if err := checkConsumer(consumer); err != nil {
					return err
				}
			}
			k := cmp.Or(key, order)
			if k == "" {
				sums, err := a.auditRuns(cmd.Context(), runs)
				return show(a, sums, err, writeRuns)
			}
			rep, err := a.auditKey(cmd.Context(), k, consumer)
			return show(a, rep, err, writeKeyAudit)
		}),
	}
	cmd.Flags().StringVar(&key, "key", "", "the business key to audit")
	cmd.Flags().StringVar(&order, "order", "", "alias of --key")
	cmd.Flags().IntVar(&runs, "runs", 10, "list this many of the last runs (without --key)")
	cmd.Flags().StringVar(&consumer, "consumer", "", "the consumer's idempotency scope (default: the replay function's "+settings.ConsumerName.Env+")")
	cmd.MarkFlagsMutuallyExclusive("key", "order", "runs")
	return cmd
}

// ledger opens a session, which needs the ledger table and keys, and its
// ledger.
func (a *app) ledger(ctx context.Context, keys ...string) (*session, replay.Ledger, string, error) {
	keys = append(keys, outLedger)
	s, err := a.open(ctx, needs(keys...))
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

func (a *app) auditKey(ctx context.Context, key, consumer string) (keyAudit, error) {
	rep := keyAudit{Key: key, HistoryKey: record.HistoryKey(key, "")}
	s, ledger, _, err := a.ledger(ctx, outIdempotency)
	if err != nil {
		return rep, err
	}
	idem, err := s.res.get(outIdempotency)
	if err != nil {
		return rep, err
	}
	if consumer == "" {
		lc, err := s.laneConfig(ctx, "", false, s.res.optional(outDLQ))
		if err != nil {
			return rep, fmt.Errorf("%w — pass --consumer NAME", err)
		}
		if consumer = lc.consumer(); consumer == "" {
			return rep, usageError("no consumer scope: the lane has no replay function whose %s dlq can read — pass --consumer NAME", settings.ConsumerName.Env)
		}
	}
	history, err := ledger.History(ctx, rep.HistoryKey)
	if err != nil {
		return rep, fmt.Errorf("read the history of %s from the ledger: %w", rep.HistoryKey, err)
	}
	slices.SortStableFunc(history, func(x, y record.Message) int {
		return cmp.Or(x.FirstSeenAt.Compare(y.FirstSeenAt), x.At.Compare(y.At), cmp.Compare(x.MessageID, y.MessageID))
	})
	rep.History = append([]record.Message{}, history...)
	rep.Failures, rep.FailureRecords = historyFailures(ctx, failureSource{log: s.failures(idem, consumer)}, history)
	rep.Completion, err = readCompletion(ctx, s.idempotency(idem), idempotency.Key(consumer, key), a.now())
	return rep, err
}

// historyFailures reads the failure records of the messages of a key's
// ledger history, by their ids and original ids (the ledger holds only
// what the replay verified), first failure first.
func historyFailures(ctx context.Context, src failureSource, history []record.Message) ([]failureRecord, failureStatus) {
	var ids []string
	for _, r := range history {
		ids = append(ids, r.MessageID)
		if r.OriginalMessageID != "" {
			ids = append(ids, r.OriginalMessageID)
		}
	}
	got, st := src.read(ctx, ids)
	out := []failureRecord{}
	for _, f := range got {
		out = append(out, recordOf(f))
	}
	slices.SortFunc(out, func(x, y failureRecord) int {
		return cmp.Or(x.FirstAt.Compare(y.FirstAt), x.LastAt.Compare(y.LastAt), cmp.Compare(x.MessageID, y.MessageID))
	})
	st.Found = len(out)
	if st.Read && len(out) == 0 && len(history) > 0 {
		st.Detail = "no failure records for these messages: the lane's consumer writes none (" + settings.FailureRecords.Env + "=off, or a consumer older than failure records), or they expired"
	}
	return out, st
}

// readCompletion reads a key's idempotency record: completed when
// COMPLETED and not expired.
func readCompletion(ctx context.Context, store *dynamo.IdempotencyStore, key string, now time.Time) (completionRecord, error) {
	rec := completionRecord{Key: key}
	got, found, err := store.Get(ctx, key)
	if err != nil {
		return rec, fmt.Errorf("read the idempotency record %s: %w", key, err)
	}
	if !found {
		return rec, nil
	}
	rec.Found, rec.Status, rec.ExpiresAt = true, string(got.Status), got.ExpiresAt
	if got.Status == idempotency.Completed && got.ExpiresAt.After(now) {
		rec.Completed, rec.Result = true, got.Result
	}
	return rec, nil
}

func writeKeyAudit(w io.Writer, rep keyAudit) error {
	fmt.Fprintf(w, "Key %s (ledger %s)\n\n", printable.String(rep.Key), printable.String(rep.HistoryKey))
	if len(rep.History) == 0 {
		fmt.Fprintln(w, "No ledger records: no replay run has seen this key in a DLQ (or its records expired after 30 days).")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FIRST SEEN\tDLQ MESSAGE\tSTATE\tREPLAY\tRUN\tAT\tROUTE\tREASON")
		for _, r := range rep.History {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.FirstSeenAt.Format(time.RFC3339), printable.String(r.MessageID), stateText(r.State),
				r.ReplayCount, printable.String(r.RunID), r.At.Format(time.RFC3339), printable.String(r.Route), printable.String(r.Reason))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := writeFailureRecords(w, rep.Failures, rep.FailureRecords); err != nil {
		return err
	}
	c := rep.Completion
	switch {
	case c.Completed:
		fmt.Fprintf(w, "\nCompleted: result %s (idempotency record %s, COMPLETED).\n", printable.String(c.Result), printable.String(c.Key))
	case c.Found:
		fmt.Fprintf(w, "\nNot completed: idempotency record %s is %s (expires %s).\n", printable.String(c.Key), printable.String(c.Status), c.ExpiresAt.Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "\nNot completed: no idempotency record %s.\n", printable.String(c.Key))
	}
	return nil
}

// writeFailureRecords writes the failures of a key's messages, or why
// there are none to show.
func writeFailureRecords(w io.Writer, fs []failureRecord, st failureStatus) error {
	if st.Detail != "" {
		_, err := fmt.Fprintf(w, "\nFailures: %s.\n", printable.String(st.Detail))
		return err
	}
	if len(fs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nFAILED MESSAGE\tCLASS\tFAILURES\tFIRST\tLAST\tMESSAGE")
	for _, f := range fs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", printable.String(f.MessageID), printable.String(f.Class), f.Failures,
			f.FirstAt.Format(time.RFC3339), f.LastAt.Format(time.RFC3339), cutShown(f.Message, 120))
	}
	return tw.Flush()
}

// stateText explains a ledger state in the operator's words.
func stateText(s record.State) string {
	switch s {
	case record.Seen:
		return "SEEN (dead-lettered)"
	case record.Intent:
		return "INTENT (sending)"
	case record.Sent:
		return "SENT (replayed)"
	case record.Parked:
		return "PARKED"
	}
	return printable.String(string(s))
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\n", s.StartedAt.Format(time.RFC3339), printable.String(s.RunID), dry,
			duration(time.Duration(s.DurationMS)*time.Millisecond), s.Total.Examined, s.Total.Replayed, parkedText(s.Total.Parked),
			s.Total.Delayed, s.Total.Deferred, s.Total.Errors, gatesText(s))
	}
	return tw.Flush()
}
