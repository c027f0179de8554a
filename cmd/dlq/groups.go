package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/settings"
)

// groupsReport is the output of dlq groups.
type groupsReport struct {
	// Mode is the lane's route's "groups" in its replay function's
	// configuration: hold or skip; "" when the lane does not hold its
	// groups or dlq could not read it (--consumer given).
	Mode   string      `json:"mode,omitempty"`
	Groups []heldGroup `json:"groups"`
	read   bool        // the replay function's configuration was read: Mode is the route's
}

// heldGroup is one held message group as dlq groups shows it.
type heldGroup struct {
	Group   string    `json:"group"`            // the MessageGroupId
	State   string    `json:"state"`            // held or draining
	Head    string    `json:"head"`             // the original message id of the record that holds the group
	Parked  string    `json:"parked,omitempty"` // why the head will not come back by itself ("invalid: ...", "parked: ...")
	Held    int       `json:"held"`             // records held behind the head
	Since   time.Time `json:"since"`            // when the group was held
	Updated time.Time `json:"updated"`          // when the hold last changed
}

// releaseReport is the output of dlq groups release.
type releaseReport struct {
	Group  string `json:"group"`
	Head   string `json:"head"` // the head the release skips
	Parked string `json:"parked,omitempty"`
	Held   int    `json:"held"` // records held behind it, applied next
	// Was is the hold's state before: held, or draining (released or its
	// head applied already: only a drain trigger was sent).
	Was          string `json:"was"`
	State        string `json:"state"`        // draining
	TriggerQueue string `json:"triggerQueue"` // where the drain trigger went: the source queue
}

// groupsFlags are the flags of dlq groups and dlq groups release.
type groupsFlags struct {
	consumer    string
	consumerSet bool
	yes         bool
}

func (a *app) groupsCommand() *cobra.Command {
	var f groupsFlags
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List the held message groups of a FIFO lane; release one with groups release GROUP",
		Long: `groups lists the message groups a FIFO lane holds (a lane whose consumer keeps
each group in sequence through failure: the construct's default on a FIFO
lane, "hold", or "skip"). A group is held when one of its records
fails: that record, the head, goes on as any failure does (redelivered,
dead-lettered, replayed under the lane's policy), and the group's later
records wait behind it in the lane's hold table, in sequence, costing no
receive and no replay. Once the head is applied, the hold turns draining and
the consumer applies the held records in sequence.

For each group: its state (held, or draining), its head (the original message
id), why the head will not come back by itself (parked: its replays are
exhausted or it neared expiry; invalid: the consumer rejected it), how many
records are held behind it, and how long ago it was held and last changed.

A held group whose head is parked or invalid stays held until an operator
releases it (unless the lane skips such heads):

  groups release GROUP   skips the head: the hold turns draining and a drain
                         trigger goes to the source queue, so the held
                         records apply next, in sequence, without it. If the
                         head is applied later (fixed and replayed from the
                         parking queue), its effect comes after theirs.

The holds are read from the lane's hold table (its HoldTableName output, or
--hold-table; a lane without one does not hold its groups) under the
consumer's scope, the replay function's CONSUMER_NAME unless --consumer names
it.`,
		Example: `  dlq groups
  dlq groups -o json | jq -r '.groups[] | select(.parked != null) | .group'
  dlq groups release GROUP`,
		RunE: runE(func(cmd *cobra.Command) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			rep, err := a.groups(cmd.Context(), f)
			return show(a, rep, err, func(w io.Writer, rep groupsReport) error { return writeGroups(w, rep, a.now()) })
		}),
	}
	cmd.PersistentFlags().StringVar(&f.consumer, "consumer", "", "the consumer's idempotency scope, under which its holds are kept (default: the replay function's "+settings.ConsumerName.Env+")")
	cmd.AddCommand(a.releaseCommand(&f))
	return cmd
}

func (a *app) releaseCommand(f *groupsFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release GROUP",
		Short: "Let a held message group go on past its head",
		Long: `release lets a held group go on without its head: the hold turns draining and
a drain trigger goes to the source queue, so that the consumer applies the
records held behind the head next, in sequence. The head is skipped: if it is
applied later (fixed and replayed from the parking queue), its effect comes
after theirs. Release a group whose head is parked or invalid once you know
its successors may go first; a head that is not parked is still being
retried, and releasing its group lets the successors overtake it.

A group already draining gets its drain trigger again (nothing else changes;
SQS drops it as a copy within five minutes of the last). A group that is not
held is refused (exit code 3). On a terminal it asks for confirmation unless
--yes; without a terminal it needs --yes.`,
		Example: `  dlq groups release GROUP
  dlq groups release GROUP --yes -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("%s takes one message group, got %d arguments (dlq groups lists the held groups)", cmd.CommandPath(), len(args))
			}
			if err := checkGroup(args[0]); err != nil {
				return err
			}
			if err := f.check(cmd); err != nil {
				return err
			}
			rep, err := a.release(cmd.Context(), args[0], *f)
			return typed(show(a, rep, err, writeRelease))
		},
	}
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// check validates the flags that need no resource.
func (f *groupsFlags) check(cmd *cobra.Command) error {
	if f.consumerSet = cmd.Flags().Changed("consumer"); f.consumerSet {
		return checkConsumer(f.consumer)
	}
	return nil
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

// holdSession is what the groups commands work on: the lane's holds, and
// its route's mode when known.
type holdSession struct {
	*session
	store hold.Store
	table string // the hold table
	scope string // the consumer's
	mode  string // the route's "groups"; "" when off or unknown
	read  bool   // the replay function's configuration was read (mode is known)
}

// openHolds opens a session, which needs keys and the lane's hold table
// (see holdTable), and the store of the lane's holds under the consumer's
// scope.
func (a *app) openHolds(ctx context.Context, f groupsFlags, keys ...string) (*holdSession, error) {
	need := func(r *resources) error {
		if err := needs(keys...)(r); err != nil {
			return err
		}
		_, err := r.holdTable()
		return err
	}
	s, err := a.open(ctx, need)
	if err != nil {
		return nil, err
	}
	hs := &holdSession{session: s, scope: f.consumer}
	if hs.table, err = s.res.holdTable(); err != nil {
		return nil, err
	}
	if !f.consumerSet {
		lc, err := s.laneConfig(ctx, "", false, s.res.optional(outDLQ))
		if err != nil {
			return nil, fmt.Errorf("%w — pass --consumer NAME", err)
		}
		if hs.scope = lc.consumer(); hs.scope == "" {
			return nil, usageError("no consumer scope: the lane has no replay function whose %s dlq can read — pass --consumer NAME", settings.ConsumerName.Env)
		}
		hs.mode = lc.route.Groups
		hs.read = lc.found
	}
	hs.store = s.holds(hs.table, hs.scope)
	return hs, nil
}

// where names the holds' place in errors.
func (hs *holdSession) where() string {
	return fmt.Sprintf("hold table %s (consumer %s)", hs.table, hs.scope)
}

func (a *app) groups(ctx context.Context, f groupsFlags) (groupsReport, error) {
	rep := groupsReport{Groups: []heldGroup{}}
	hs, err := a.openHolds(ctx, f)
	if err != nil {
		return rep, err
	}
	rep.Mode = hs.mode
	rep.read = hs.read
	holds, err := hs.store.List(ctx)
	if err != nil {
		return rep, fmt.Errorf("list the held groups in %s: %w", hs.where(), err)
	}
	for _, h := range holds {
		g, err := hs.describe(ctx, h)
		if err != nil {
			return rep, err
		}
		rep.Groups = append(rep.Groups, g)
	}
	return rep, nil
}

// describe is h as dlq shows it, with the count of its held records.
func (hs *holdSession) describe(ctx context.Context, h hold.Hold) (heldGroup, error) {
	n, err := hs.store.Count(ctx, h.Group)
	if err != nil {
		return heldGroup{}, fmt.Errorf("count the records held in group %q in %s: %w", h.Group, hs.where(), err)
	}
	return heldGroup{Group: h.Group, State: string(h.State), Head: h.Head, Parked: h.Parked, Held: n, Since: h.Since, Updated: h.Updated}, nil
}

// errNotHeld is the refusal of a release of a group without a hold.
func (hs *holdSession) errNotHeld(group string) error {
	return refused("group %q is not held (no hold in %s): nothing to release — dlq groups lists the held groups", group, hs.where())
}

func writeGroups(w io.Writer, rep groupsReport, now time.Time) error {
	if len(rep.Groups) == 0 {
		text := "No held groups."
		if rep.read && rep.Mode == "" {
			text = "No held groups (the lane's route does not hold them: only a FIFO lane's does, by the construct's default, hold, or with skip)."
		}
		_, err := fmt.Fprintln(w, text)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tHEAD\tHELD\tSINCE\tUPDATED\tPARKED")
	parked := 0
	for _, g := range rep.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s ago\t%s ago\t%s\n", printable.String(g.Group), printable.String(g.State), printable.String(g.Head), g.Held,
			duration(now.Sub(g.Since)), duration(now.Sub(g.Updated)), printable.String(g.Parked))
		if g.Parked != "" && g.State == string(hold.Held) {
			parked++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if parked > 0 && rep.Mode != string(hold.Skip) {
		_, err := fmt.Fprintf(w, "\n%d group(s) held behind a head that will not come back by itself: dlq groups release GROUP lets one go on without it.\n", parked)
		return err
	}
	return nil
}

func writeRelease(w io.Writer, rep releaseReport) error {
	if rep.Was == string(hold.Draining) {
		_, err := fmt.Fprintf(w, "Group %s was draining already (released, or its head applied): sent its drain trigger to %s again "+
			"(SQS drops it as a copy if the last one went less than five minutes ago).\n", printable.String(rep.Group), rep.TriggerQueue)
		return err
	}
	_, err := fmt.Fprintf(w, "Released group %s past its head %s%s: the hold is %s, a drain trigger went to %s, and its %d held record(s) apply next, in sequence. "+
		"If the head is applied later, its effect comes after theirs.\n", printable.String(rep.Group), printable.String(rep.Head), parkedNote(rep.Parked), rep.State, rep.TriggerQueue, rep.Held)
	return err
}

// parkedNote is why a head will not come back (shown by
// printable.String), or that it is still retried, in parentheses.
func parkedNote(parked string) string {
	if parked == "" {
		return " (not parked: still being retried)"
	}
	return " (" + printable.String(parked) + ")"
}

// errHoldChanged: the hold changed between the read and the release in a
// way that asks for a new look (another head, or the hold ended).
var errHoldChanged = errors.New("the hold changed since it was read")

// releaseAttempts bounds the tries of one release: a conflict is the
// consumer storing a record behind the hold between dlq's read and its
// write, and the next try reads the hold again.
const releaseAttempts = 3

func (a *app) release(ctx context.Context, group string, f groupsFlags) (releaseReport, error) {
	hs, err := a.openHolds(ctx, f, outSource)
	if err != nil {
		return releaseReport{}, err
	}
	source, err := hs.res.get(outSource)
	if err != nil {
		return releaseReport{}, err
	}
	h, err := hs.hold(ctx, group)
	if err != nil {
		return releaseReport{}, err
	}
	g, err := hs.describe(ctx, h)
	if err != nil {
		return releaseReport{}, err
	}
	rep := releaseReport{Group: group, Head: h.Head, Parked: h.Parked, Held: g.Held, Was: string(h.State), TriggerQueue: source}
	if h.State == hold.Held {
		if err := a.confirmRelease(g, f.yes); err != nil {
			return rep, err
		}
	}
	k := &hold.Keeper{Store: hs.store, Source: hs.sender, SourceURL: source}
	after, err := hs.releaseHold(ctx, k, h, a.now)
	rep.State = string(after.State)
	return rep, err
}

// hold reads the hold of group; a group without one is refused.
func (hs *holdSession) hold(ctx context.Context, group string) (hold.Hold, error) {
	got, err := hs.store.Holds(ctx, []string{group})
	if err != nil {
		return hold.Hold{}, fmt.Errorf("read the hold of group %q in %s: %w", group, hs.where(), err)
	}
	h, ok := got[group]
	if !ok {
		return hold.Hold{}, hs.errNotHeld(group)
	}
	return h, nil
}

// releaseHold releases h (hold.Keeper.Release), reading it again after a
// conflict as long as it has the same head and state: the consumer stored
// another record behind it meanwhile. A hold that changed otherwise is
// left for the operator to look at again.
func (hs *holdSession) releaseHold(ctx context.Context, k *hold.Keeper, h hold.Hold, now func() time.Time) (hold.Hold, error) {
	for attempt := 1; ; attempt++ {
		after, err := k.Release(ctx, h, now())
		switch {
		case err == nil:
			return after, nil
		case errors.Is(err, hold.ErrNotHeld):
			return after, hs.errNotHeld(h.Group)
		case after.State == hold.Draining: // written; its trigger failed
			return after, fmt.Errorf("group %q is draining, but %w — run dlq groups release again to resend the trigger", h.Group, err)
		case !errors.Is(err, hold.ErrConflict) || attempt == releaseAttempts:
			return after, fmt.Errorf("release group %q in %s: %w", h.Group, hs.where(), err)
		}
		cur, err := hs.hold(ctx, h.Group)
		if err != nil {
			return hold.Hold{}, err
		}
		if cur.Head != h.Head || cur.State != h.State {
			return cur, fmt.Errorf("release group %q: %w (head %s, %s; now head %s, %s): nothing released — look again with dlq groups",
				h.Group, errHoldChanged, h.Head, h.State, cur.Head, cur.State)
		}
		h = cur
	}
}

// confirmRelease asks before a release: on a terminal, a y/N question on
// stderr; without a terminal it needs --yes.
func (a *app) confirmRelease(g heldGroup, yes bool) error {
	if yes {
		return nil
	}
	if !a.isTerminal(a.stdin) {
		return refused("not releasing group %s without confirmation: stdin is not a terminal — pass --yes", g.Group)
	}
	fmt.Fprintf(a.stderr, "Release group %s past its head %s%s, so that its %d held record(s) apply next without it? [y/N] ", printable.String(g.Group), printable.String(g.Head), parkedNote(g.Parked), g.Held)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
		return refused("release not confirmed: group %s stays held", g.Group)
	}
	return nil
}
