package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/internal/settings"
)

// groupsReport is the output of dlq groups.
type groupsReport struct {
	Groups []parkedGroup `json:"groups"`
	// FailureRecords says whether the heads' failure records were read,
	// and why not or why none was found.
	FailureRecords failureStatus `json:"failureRecords"`
}

// parkedGroup is one parked message group (a fifo.Park) as dlq shows it.
type parkedGroup struct {
	Group  string    `json:"group"`  // the MessageGroupId
	Reason string    `json:"reason"` // why its head can never succeed
	Head   string    `json:"head"`   // the head's message id
	Queue  string    `json:"queue"`  // where the head is: invalid or parking
	Since  time.Time `json:"since"`  // when the group was parked
	// Waiting counts the group's records in the parking queue (fifo.Park.Waiting).
	Waiting int `json:"waiting"`
	// Releasing says a release is in progress; Pending counts its records
	// back in the source that the consumer has not applied yet.
	Releasing bool `json:"releasing"`
	Pending   int  `json:"pending"`
	// HeadFailure is the failure record of the head, by its message id in
	// the source (the park's, which the consumer wrote in the ledger):
	// why it failed; absent without one.
	HeadFailure *failureRecord `json:"headFailure,omitempty"`
}

func parkedOf(p fifo.Park) parkedGroup {
	g := parkedGroup{Group: p.Group, Reason: p.Reason, Head: p.Head, Queue: p.Queue, Since: p.Since, Waiting: p.Waiting(), Releasing: p.Releasing != ""}
	if g.Releasing {
		g.Pending = max(p.Sent-p.Settled, 0)
	}
	return g
}

// releaseReport is the output of dlq groups release.
type releaseReport struct {
	Group  string      `json:"group"`
	DryRun bool        `json:"dryRun,omitempty"`
	Park   parkedGroup `json:"park"`   // the park as it was before the release
	Source string      `json:"source"` // where the parked records go back
	// Moved counts the records this command sent back to the source.
	Moved int `json:"moved"`
	// Pending counts the records back in the source that the consumer
	// had not applied when the command ended.
	Pending int `json:"pending"`
	// Done says the park is gone: the group goes on. A release not done
	// is in progress: run the command again.
	Done bool `json:"done"`
	// ParkedAgain is the park after a record sent back parked the group
	// again: the release is over.
	ParkedAgain *parkedGroup `json:"parkedAgain,omitempty"`
}

// groupsFlags are the flags of dlq groups release.
type groupsFlags struct {
	yes, dryRun bool
	wait        time.Duration
}

// Release's wait: the default of --wait, and how often it looks again.
const (
	defaultReleaseWait = 5 * time.Minute
	releasePoll        = 2 * time.Second
)

func (a *app) groupsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List the parked message groups of a FIFO lane; release one with groups release GROUP",
		Long: `groups lists the message groups a FIFO lane's consumer has parked. A record that
fails stays in the source queue and holds its group there, in sequence, with a
backoff; a head that can never succeed (invalid, about to expire, delivered
too often) parks its group: the head goes to the invalid or parking queue with
its reason, and the group's later records go to the parking queue, in sequence,
until an operator releases the group (on a lane whose consumer skips, no group
is parked).

For each group: why it is parked, its head (the message id) and the queue it
is in, the error class of the head's failure record (the consumer's, by the
head's message id: docs/CONTRACT.md#failure-records; -o json has its message,
failures and times), when it was parked, how many of its records wait in the parking queue,
and a release in progress with the records it sent back that the consumer has
not applied yet.

The parks are read from the lane's ledger table (its LedgerTableName output,
or --ledger-table).`,
		Example: `  dlq groups
  dlq groups -o json | jq -r '.groups[] | select(.queue == "invalid") | .group'
  dlq groups release GROUP`,
		RunE: runE(func(cmd *cobra.Command) error {
			rep, err := a.groups(cmd.Context())
			return show(a, rep, err, func(w io.Writer, rep groupsReport) error { return writeGroups(w, rep, a.now()) })
		}),
	}
	cmd.AddCommand(a.releaseCommand())
	return cmd
}

func (a *app) releaseCommand() *cobra.Command {
	var f groupsFlags
	cmd := &cobra.Command{
		Use:   "release GROUP",
		Short: "Let a parked message group go on: its parked records go back to the source, in sequence",
		Long: `release lets a parked group go on: its records in the parking queue (the head
too, when it went there) go back to the source queue in sequence, marked so that
the consumer applies them before any later record of the group, and the park
ends once the consumer has applied them all. A head in the invalid queue stays
there: the group goes on without it (fix it at the producer).

Release a group once the cause of its head's failure is fixed: a head that
fails again parks the group again.

release sends the records back, then waits for the consumer, looking again
every 2s, for at most --wait. A release still in progress then (the consumer
has not applied every record yet) is said so, with exit code 4: run the
command again to finish it. --dry-run shows the park and what a release would
do. On a terminal it asks for confirmation unless --yes (or --dry-run, or a
release already in progress); without a terminal it needs --yes. A group
that is not parked is refused (exit code 3).

It reads the parks in the lane's ledger table (--ledger-table) and moves the
records from its parking queue (--parking-url) to its source queue
(--source-url).`,
		Example: `  dlq groups release GROUP --dry-run
  dlq groups release GROUP
  dlq groups release GROUP --yes --wait 10m -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("%s takes one message group, got %d arguments (dlq groups lists the parked groups)", cmd.CommandPath(), len(args))
			}
			if err := checkGroup(args[0]); err != nil {
				return err
			}
			if f.wait < 0 {
				return usageError("--wait %s: want a duration of 0 or more", f.wait)
			}
			rep, err := a.release(cmd.Context(), args[0], f)
			if err != nil {
				return typed(err)
			}
			if err := show(a, rep, nil, writeRelease); err != nil {
				return typed(err)
			}
			if rep.ParkedAgain != nil {
				return &codedError{code: exitIncomplete, err: fmt.Errorf("group %s parked again behind %s: see dlq groups, then release it again",
					printable.String(rep.Group), printable.String(rep.ParkedAgain.Head))}
			}
			if !rep.Done && !rep.DryRun {
				return &codedError{code: exitIncomplete, err: fmt.Errorf("the release of group %s is still in progress: run dlq groups release %s again (--wait to wait longer)",
					printable.String(rep.Group), printable.String(rep.Group))}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	fl.BoolVar(&f.dryRun, "dry-run", false, "show the park and what a release would do; change nothing")
	fl.DurationVar(&f.wait, "wait", defaultReleaseWait, "how long to wait for the consumer to apply the records sent back (0: send them, do not wait)")
	return cmd
}

// maxGroupBytes is SQS's bound on a MessageGroupId.
const maxGroupBytes = 128

// checkGroup refuses what is no MessageGroupId: SQS's are 1..128
// characters, letters, digits and ASCII punctuation.
func checkGroup(g string) error {
	ok := len(g) >= 1 && len(g) <= maxGroupBytes && strings.IndexFunc(g, func(r rune) bool {
		return r <= ' ' || r > '~'
	}) < 0
	if !ok {
		return usageError("group %q: not a message group (want 1..%d letters, digits and ASCII punctuation, as SQS's MessageGroupId)", g, maxGroupBytes)
	}
	return nil
}

// needsGroups is the need (see open) of the groups commands: keys, on a
// lane that is not known to be standard (only a FIFO lane parks groups).
func needsGroups(keys ...string) func(*resources) error {
	return func(r *resources) error {
		if err := needs(keys...)(r); err != nil {
			return err
		}
		for _, k := range []string{outSource, outDLQ} {
			if v := r.optional(k); v != "" && !settings.IsFIFO(v) {
				lane := "the lane"
				if r.lane != "" {
					lane = "lane " + r.lane
				}
				return fmt.Errorf("%s is not a FIFO lane: %s is a standard queue (%s), and only a FIFO lane's consumer parks message groups", lane, shown(v), r.origin(k))
			}
		}
		return nil
	}
}

// parks is the lane's store of parks, in its ledger table, and where
// errors say it is.
func (s *session) parks() (fifo.Store, string, error) {
	table, err := s.res.get(outLedger)
	if err != nil {
		return nil, "", err
	}
	return s.groupStore(table), "ledger table " + shown(table), nil
}

func (a *app) groups(ctx context.Context) (groupsReport, error) {
	rep := groupsReport{Groups: []parkedGroup{}}
	s, err := a.open(ctx, needsGroups(outLedger))
	if err != nil {
		return rep, err
	}
	store, where, err := s.parks()
	if err != nil {
		return rep, err
	}
	parks, err := store.List(ctx)
	if err != nil {
		return rep, fmt.Errorf("list the parked groups in %s: %w", where, err)
	}
	heads := make([]string, 0, len(parks))
	for _, p := range parks {
		rep.Groups = append(rep.Groups, parkedOf(p))
		heads = append(heads, p.Head)
	}
	if len(parks) == 0 {
		return rep, nil
	}
	src := failureSource{}
	if lc, err := s.laneConfig(ctx, "", false, s.res.optional(outDLQ)); err != nil {
		src.why = err.Error()
	} else {
		src = s.failureSource(lc, "")
	}
	got, st := src.read(ctx, heads)
	for i := range rep.Groups {
		if f, ok := got[rep.Groups[i].Head]; ok {
			r := recordOf(f)
			rep.Groups[i].HeadFailure = &r
			st.Found++
		}
	}
	if st.Read && st.Found == 0 {
		st.Detail = "no failure records for the heads: the lane's consumer writes none (" + settings.FailureRecords.Env + "=off, or a consumer older than failure records), or they expired"
	}
	rep.FailureRecords = st
	return rep, nil
}

func writeGroups(w io.Writer, rep groupsReport, now time.Time) error {
	if len(rep.Groups) == 0 {
		_, err := fmt.Fprintln(w, "No parked groups.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tREASON\tHEAD\tHEAD FAILED\tIN\tWAITING\tSINCE\tRELEASE")
	for _, g := range rep.Groups {
		release := ""
		if g.Releasing {
			release = fmt.Sprintf("in progress, %d pending", g.Pending)
		}
		failed := "-"
		if f := g.HeadFailure; f != nil {
			failed = fmt.Sprintf("%s (%d failures)", printable.String(f.Class), f.Failures)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s ago\t%s\n", printable.String(g.Group), printable.String(g.Reason), printable.String(g.Head),
			failed, printable.String(g.Queue), g.Waiting, duration(now.Sub(g.Since)), release)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d := rep.FailureRecords.Detail; d != "" {
		fmt.Fprintf(w, "\nHead failures: %s.\n", printable.String(d))
	}
	_, err := fmt.Fprintf(w, "\n%d parked group(s): dlq groups release GROUP sends one's parked records back to the source, in sequence, and lets it go on.\n", len(rep.Groups))
	return err
}

// release releases group (fifo.Releaser), waiting for the consumer for at
// most f.wait; a dry run reads the park and changes nothing.
func (a *app) release(ctx context.Context, group string, f groupsFlags) (releaseReport, error) {
	rep := releaseReport{Group: group, DryRun: f.dryRun}
	s, err := a.open(ctx, needsGroups(outLedger, outParking, outSource))
	if err != nil {
		return rep, err
	}
	store, where, err := s.parks()
	if err != nil {
		return rep, err
	}
	r := &fifo.Releaser{Store: store, Queue: s.releaseQueue, Now: a.now}
	if r.ParkingURL, r.SourceURL, err = releaseQueues(s.res); err != nil {
		return rep, err
	}
	rep.Source = r.SourceURL
	got, err := store.Parked(ctx, []string{group})
	if err != nil {
		return rep, fmt.Errorf("read the park of group %q in %s: %w", group, where, err)
	}
	p, ok := got[group]
	if !ok {
		return rep, refused("group %q is not parked (no park in %s): nothing to release — dlq groups lists the parked groups", group, where)
	}
	rep.Park = parkedOf(p)
	rep.Pending = rep.Park.Pending
	if f.dryRun {
		return rep, nil
	}
	if !rep.Park.Releasing {
		if err := a.confirmRelease(rep.Park, f.yes); err != nil {
			return rep, err
		}
	}
	deadline := a.now().Add(f.wait)
	for {
		step, err := r.Release(ctx, group)
		rep.Moved += step.Moved
		rep.Pending = step.Pending
		rep.Done = step.Done
		if err != nil {
			return rep, fmt.Errorf("release group %q (%d record(s) sent back so far): %w — run dlq groups release again", group, rep.Moved, err)
		}
		if step.Stopped {
			got, err := store.Parked(ctx, []string{group})
			if err != nil {
				return rep, fmt.Errorf("read the park of group %q in %s: %w", group, where, err)
			}
			if p, ok := got[group]; ok {
				again := parkedOf(p)
				rep.ParkedAgain = &again
			}
			return rep, nil
		}
		if step.Done || !a.now().Before(deadline) {
			return rep, nil
		}
		if err := a.sleep(ctx, releasePoll); err != nil {
			return rep, fmt.Errorf("release group %q: %w — run dlq groups release again", group, err)
		}
	}
}

// releaseQueues are the lane's parking and source queues, which a release
// moves records between: both FIFO, in one account and region.
func releaseQueues(r *resources) (parking, source string, err error) {
	if parking, err = r.get(outParking); err != nil {
		return "", "", err
	}
	if source, err = r.get(outSource); err != nil {
		return "", "", err
	}
	for _, k := range []string{outParking, outSource} {
		if v := r.values[k]; !settings.IsFIFO(v) {
			return "", "", fmt.Errorf("the %s %s (%s) is a standard queue: a release moves a FIFO lane's records", k, shown(v), r.origin(k))
		}
	}
	if p, q := placeOf(source), placeOf(parking); !p.within(q) {
		return "", "", fmt.Errorf("the source queue %s is in %s, and the parking queue %s in %s: dlq moves messages only within the account and region of the queue they leave",
			shown(source), p, shown(parking), q)
	}
	return parking, source, nil
}

func writeRelease(w io.Writer, rep releaseReport) error {
	g, p := printable.String(rep.Group), rep.Park
	head := fmt.Sprintf("head %s in the %s queue, %s", printable.String(p.Head), printable.String(p.Queue), printable.String(p.Reason))
	var err error
	switch {
	case rep.DryRun && p.Releasing:
		_, err = fmt.Fprintf(w, "Dry run: group %s is parked (%s), and a release is in progress: %d record(s) back in %s not applied yet, %d waiting in the parking queue. "+
			"A release would wait for the consumer, then send back any record parked since.\n", g, head, p.Pending, rep.Source, p.Waiting)
	case rep.DryRun:
		_, err = fmt.Fprintf(w, "Dry run: group %s is parked (%s). A release would send its %d waiting record(s) back to %s, in sequence, and end the park once the consumer has applied them.\n",
			g, head, p.Waiting, rep.Source)
	case rep.ParkedAgain != nil:
		a := rep.ParkedAgain
		_, err = fmt.Fprintf(w, "Group %s parked again: %d record(s) sent back to %s, in sequence, until head %s went to the %s queue (%s). The release is over; the records behind it wait in the parking queue.\n",
			g, rep.Moved, rep.Source, printable.String(a.Head), printable.String(a.Queue), printable.String(a.Reason))
		return err
	case rep.Done && rep.Moved == 0:
		_, err = fmt.Fprintf(w, "Released group %s: every record sent back applied; the park is gone and the group goes on.\n", g)
	case rep.Done:
		_, err = fmt.Fprintf(w, "Released group %s: %d record(s) sent back to %s, in sequence, and every record sent back applied; the park is gone and the group goes on.\n",
			g, rep.Moved, rep.Source)
	default:
		_, err = fmt.Fprintf(w, "Releasing group %s: %d record(s) sent back to %s, in sequence; %d not applied by the consumer yet. The park ends once they are.\n",
			g, rep.Moved, rep.Source, rep.Pending)
	}
	if err == nil && !rep.DryRun && p.Queue == "invalid" {
		_, err = fmt.Fprintf(w, "Its head %s stays in the invalid queue (%s): the group goes on without it.\n", printable.String(p.Head), printable.String(p.Reason))
	}
	return err
}

// confirmRelease asks before a release: on a terminal, a y/N question on
// stderr; without a terminal it needs --yes.
func (a *app) confirmRelease(g parkedGroup, yes bool) error {
	if yes {
		return nil
	}
	if !a.isTerminal(a.stdin) {
		return refused("not releasing group %s without confirmation: stdin is not a terminal — pass --yes (or --dry-run)", g.Group)
	}
	without := ""
	if g.Queue == "invalid" {
		without = fmt.Sprintf(" without its head %s, which stays in the invalid queue", printable.String(g.Head))
	}
	fmt.Fprintf(a.stderr, "Release group %s (parked: %s), so that its %d waiting record(s) go back to the source, in sequence, and the group goes on%s? [y/N] ",
		printable.String(g.Group), printable.String(g.Reason), g.Waiting, without)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
		return refused("release not confirmed: group %s stays parked", g.Group)
	}
	return nil
}
