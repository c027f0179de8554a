package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// bucketPattern is an S3 bucket name: 3..63 lowercase letters, digits,
// '.' and '-', starting and ending with a letter or a digit.
var bucketPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func checkBucketName(name, v string) error {
	if !bucketPattern.MatchString(v) {
		return fmt.Errorf("%s %s: not an S3 bucket name (3..63 lowercase letters, digits, '.' and '-')", name, shown(v))
	}
	return nil
}

// archived is one archived message as ls and restore report it.
type archived struct {
	Object     string    `json:"object"` // its S3 key
	Queue      string    `json:"queue"`  // parking or invalid
	Key        string    `json:"key,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	MessageID  string    `json:"messageId"`
	SentAt     time.Time `json:"sentAt"`
	ArchivedAt time.Time `json:"archivedAt"`
}

func archivedOf(key string, o archive.Object) archived {
	return archived{Object: key, Queue: o.Queue, Key: o.Key, Reason: o.Reason, MessageID: o.MessageID, SentAt: o.SentAt, ArchivedAt: o.ArchivedAt}
}

// archiveSelection are the filters of ls and restore.
type archiveSelection struct {
	queue, day, key, reason string
	max                     int
}

func (sel *archiveSelection) flags(cmd *cobra.Command, maxDefault int) {
	fl := cmd.Flags()
	fl.StringVar(&sel.queue, "queue", "", "only the messages archived from this `QUEUE`: parking or invalid (default both)")
	fl.StringVar(&sel.day, "day", "", "only the messages sent to their queue on this `DAY` (yyyy-mm-dd, UTC)")
	fl.StringVar(&sel.key, "key", "", "only the messages of this business `KEY`")
	fl.StringVar(&sel.reason, "reason", "", "only the messages of this park or invalid `REASON`")
	fl.IntVarP(&sel.max, "max", "n", maxDefault, "at most this many messages")
}

// check refuses a selection dlq cannot apply.
func (sel archiveSelection) check() (day time.Time, err error) {
	if sel.queue != "" && sel.queue != archive.Parking && sel.queue != archive.Invalid {
		return day, usageError("--queue %q: want %s or %s", sel.queue, archive.Parking, archive.Invalid)
	}
	if sel.max < 1 {
		return day, usageError("--max %d: want at least 1", sel.max)
	}
	if sel.day != "" {
		if day, err = time.Parse(time.DateOnly, sel.day); err != nil {
			return day, usageError("--day %q: want yyyy-mm-dd", sel.day)
		}
	}
	return day, nil
}

// archiveLane is where a lane's objects are: its store and the lane name
// the replay function writes them under (its route's name).
type archiveLane struct {
	store *archive.Store
	lane  string
}

// openArchive opens the lane's archive.
func (a *app) openArchive(ctx context.Context) (*session, archiveLane, error) {
	s, err := a.open(ctx, func(r *resources) error { _, err := r.get(outArchive); return err })
	if err != nil {
		return nil, archiveLane{}, err
	}
	l, err := s.archiveLane(ctx)
	return s, l, err
}

// archiveLane is the lane's archive, in the bucket its resources name.
func (s *session) archiveLane(ctx context.Context) (archiveLane, error) {
	bucket, _ := s.res.get(outArchive)
	lc, err := s.laneConfig(ctx, "", false, s.res.optional(outDLQ))
	if err != nil {
		return archiveLane{}, err
	}
	lane := lc.route.Name
	if lane == "" {
		lane = s.res.lane
	}
	if lane == "" {
		return archiveLane{}, errors.New("the lane's name, under which its objects are archived, is unknown: no replay function route names it and the outputs do not — pass --lane NAME")
	}
	return archiveLane{store: s.archive(bucket), lane: lane}, nil
}

// each calls fn with the selected objects, in key order (a queue's, then
// the next's), until fn has taken max of them (it returns whether it took
// one).
func (l archiveLane) each(ctx context.Context, sel archiveSelection, day time.Time, fn func(key string, o archive.Object) bool) error {
	n := 0
	var errGet error
	visit := func(key string) bool {
		if object, ok := archive.ObjectOf(key); ok {
			key = object
		}
		o, err := l.store.Get(ctx, key)
		if err != nil {
			errGet = err
			return false
		}
		switch {
		case sel.queue != "" && o.Queue != sel.queue,
			!day.IsZero() && o.SentAt.UTC().Format(time.DateOnly) != sel.day,
			sel.reason != "" && o.Reason != sel.reason:
			return true
		}
		if fn(key, o) {
			n++
		}
		return n < sel.max
	}
	var prefixes []string
	switch {
	case sel.key != "":
		prefixes = []string{archive.KeyPrefix(l.lane, sel.key)}
	case sel.queue != "":
		prefixes = []string{archive.DayPrefix(l.lane, sel.queue, day)}
	default:
		prefixes = []string{archive.DayPrefix(l.lane, archive.Parking, day), archive.DayPrefix(l.lane, archive.Invalid, day)}
	}
	for _, p := range prefixes {
		if err := l.store.List(ctx, p, visit); err != nil {
			return err
		}
		if errGet != nil {
			return errGet
		}
		if n >= sel.max {
			return nil
		}
	}
	return nil
}

func (a *app) archiveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "archive",
		Short: "List, show and restore the parked and invalid messages kept past SQS's retention",
		Long: `The scheduled replay writes each message of the parking and invalid queues to
the lane's S3 archive before SQS's retention would delete it, one object per
message, then deletes it from its queue (docs/OPERATIONS.md#the-archive).

archive ls lists them, archive show prints one, archive restore sends them
back: to the parking queue, or home to the source (--to source).`,
		Example: `  dlq archive ls --queue parking --day 2026-12-03
  dlq archive ls --key KEY -o json
  dlq archive show LANE/parking/2026/12/03/NAME.json
  dlq archive restore --key KEY --dry-run
  dlq archive restore --queue parking --reason replay-exhausted --max 100 --rate 5 --yes
  dlq archive restore --key KEY --to source --reset-count --yes
  dlq archive restore --queue invalid --reason REASON --to source --yes`,
	}
	cmd.AddCommand(a.archiveListCommand(), a.archiveShowCommand(), a.archiveRestoreCommand())
	return cmd
}

func (a *app) archiveListCommand() *cobra.Command {
	var sel archiveSelection
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List archived messages, by queue, day, business key and reason",
		RunE: runE(func(cmd *cobra.Command) error {
			day, err := sel.check()
			if err != nil {
				return err
			}
			_, l, err := a.openArchive(cmd.Context())
			if err != nil {
				return err
			}
			list := []archived{}
			err = l.each(cmd.Context(), sel, day, func(key string, o archive.Object) bool {
				list = append(list, archivedOf(key, o))
				return true
			})
			return show(a, list, err, writeArchived)
		}),
	}
	sel.flags(cmd, 50)
	return cmd
}

func writeArchived(w io.Writer, list []archived) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SENT\tQUEUE\tKEY\tREASON\tOBJECT")
	for _, e := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.SentAt.UTC().Format(time.RFC3339), e.Queue, printable.String(e.Key), printable.String(e.Reason), printable.String(e.Object))
	}
	if len(list) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	return tw.Flush()
}

func (a *app) archiveShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show OBJECT",
		Short: "Print one archived message: its reasons, metadata, attributes and body",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, l, err := a.openArchive(cmd.Context())
			if err != nil {
				return typed(err)
			}
			o, err := l.store.Get(cmd.Context(), args[0])
			if errors.Is(err, archive.ErrNotFound) {
				return typed(refused("no archived message %s", args[0]))
			}
			return typed(show(a, o, err, writeObject))
		},
	}
}

func writeObject(w io.Writer, o archive.Object) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, printable.String(v)) }
	row("lane", o.Lane)
	row("queue", o.Queue)
	row("message id", o.MessageID)
	row("original id", o.OriginalMessageID())
	row("key", o.Key)
	row("reason", o.Reason)
	if o.Invalid != nil {
		row("detail", o.Invalid.Detail)
	}
	if o.Replay != nil {
		row("replays", fmt.Sprint(o.Replay.ReplayCount))
	}
	if f := o.Failure; f != nil {
		row("failure", fmt.Sprintf("%s (%d failures, last %s): %s", f.Class, f.Failures, f.LastAt.UTC().Format(time.RFC3339), f.Message))
	}
	row("sent", o.SentAt.UTC().Format(time.RFC3339))
	row("archived", o.ArchivedAt.UTC().Format(time.RFC3339))
	for name, v := range o.Attributes {
		val := aws.ToString(v.StringValue)
		if v.BinaryValue != nil {
			val = fmt.Sprintf("(%d bytes)", len(v.BinaryValue))
		}
		row("attribute "+name, val)
	}
	row("body", o.Body)
	return tw.Flush()
}

// restoreReport is the output of archive restore.
type restoreReport struct {
	DryRun   bool       `json:"dryRun"`
	To       string     `json:"to"`       // parking or source
	Restored []archived `json:"restored"` // sent back (with --dry-run: what would be)
	// Skipped are the selected parts of an invalid body split in several
	// messages: no part is a message on its own.
	Skipped []archived `json:"skipped,omitempty"`
	// ParkingIDs are the restored messages' ids in the parking queue (--to
	// source); Run is the engine's run over them, and LeftParked how many
	// it left there.
	ParkingIDs []string        `json:"parkingIds,omitempty"`
	Run        *replay.Summary `json:"run,omitempty"`
	LeftParked int             `json:"leftParked,omitempty"`
}

// restoreFlags are the flags of archive restore.
type restoreFlags struct {
	sel                          archiveSelection
	to                           string
	dryRun, yes, reset, noHealth bool
	rate                         float64
}

// The places archive restore sends to.
const (
	restoreToParking = "parking"
	restoreToSource  = "source"
)

// check refuses flags restore cannot apply, before any AWS call.
func (f *restoreFlags) check() (day time.Time, err error) {
	if day, err = f.sel.check(); err != nil {
		return day, err
	}
	switch {
	case f.to != restoreToParking && f.to != restoreToSource:
		return day, usageError("--to %q: want %s or %s", f.to, restoreToParking, restoreToSource)
	case f.to == restoreToParking && f.sel.queue == archive.Invalid:
		return day, usageError("--queue invalid --to parking: an invalid message goes back to the source (--to source --reset-count), after its producer or the consumer is fixed")
	case f.to == restoreToParking && f.reset:
		return day, usageError("--reset-count works only with --to source (or later: dlq replay --from parking --reset-count)")
	case f.to == restoreToParking && f.noHealth:
		return day, usageError("--no-health-gate works only with --to source: a restore to the parking queue replays nothing")
	case f.to == restoreToSource && !f.reset:
		return day, usageError("--to source needs --reset-count: the run restarts each message's replay count (a parked message exhausted its replays; an invalid one has none)")
	case f.to == restoreToSource && f.sel.max > replay.MaxFilterValues:
		return day, usageError("--max %d --to source: want at most %d, one replay run's worth; run again for more (its gates see the first run's replays)", f.sel.max, replay.MaxFilterValues)
	case !(f.rate >= settings.MinRate && f.rate <= settings.MaxRate):
		return day, usageError("--rate %s: want %s", settings.FormatFloat(f.rate), settings.Rate.Want())
	}
	if f.to == restoreToParking {
		f.sel.queue = archive.Parking
	}
	return day, nil
}

func (a *app) archiveRestoreCommand() *cobra.Command {
	f := restoreFlags{}
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Send archived messages back to the parking queue, or home to the source",
		Long: `restore sends the selected archived messages back, body and attributes as they
were, in the sequence of their keys (a FIFO group's in its sequence, with its
group id), at most --max, at most --rate a second. Objects stay in the archive.

--to parking (the default) restores parked messages to the parking queue.

--to source --reset-count takes them home: restore sends them to the parking
queue, then runs the engine of dlq replay --from parking --reset-count over
exactly those messages, with the replay function's policy and gates, at most
100. An invalid message (--queue invalid) goes home too, after its producer
or the consumer is fixed. The idempotent consumer applies each once. What a
gate holds stays in the parking queue, and the exit status is 4.`,
		RunE: runE(func(cmd *cobra.Command) error {
			day, err := f.check()
			if err != nil {
				return err
			}
			return a.restore(cmd.Context(), f, day)
		}),
	}
	f.sel.flags(cmd, 100)
	fl := cmd.Flags()
	fl.StringVar(&f.to, "to", restoreToParking, "where to: parking, or source (with --reset-count for parked messages)")
	fl.BoolVar(&f.reset, "reset-count", false, "restart the replay count of the messages restored to the source (needed with --to source)")
	fl.BoolVar(&f.noHealth, "no-health-gate", false, "skip the health gate of the run to the source (when the downstream's /health is not reachable from here)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "list what would be restored; send nothing")
	fl.BoolVar(&f.yes, "yes", false, "do not ask for confirmation")
	fl.Float64Var(&f.rate, "rate", 10, "send at most this many messages per second")
	return cmd
}

// pick selects the objects to restore; the parts of a split invalid body
// are reported as skipped.
func (f restoreFlags) pick(ctx context.Context, l archiveLane, day time.Time) (restoreReport, []archive.Object, error) {
	rep := restoreReport{DryRun: f.dryRun, To: f.to, Restored: []archived{}}
	var picked []archive.Object
	err := l.each(ctx, f.sel, day, func(key string, o archive.Object) bool {
		if o.Invalid != nil && o.Invalid.Parts > 1 {
			rep.Skipped = append(rep.Skipped, archivedOf(key, o))
			return false
		}
		picked = append(picked, o)
		rep.Restored = append(rep.Restored, archivedOf(key, o))
		return true
	})
	return rep, picked, err
}

// restoreAll sends the objects to url at rate, in order, and returns the
// ids of the messages sent; it stops at the first that fails.
func (a *app) restoreAll(ctx context.Context, s *session, url string, objects []archive.Object, rate float64) ([]string, error) {
	ids := make([]string, 0, len(objects))
	restore := runID(a.now()) // a FIFO send's deduplication is this restore's
	for i, o := range objects {
		if i > 0 {
			if err := a.sleep(ctx, time.Duration(float64(time.Second)/rate)); err != nil {
				return ids, err
			}
		}
		id, err := archive.Restore(ctx, s.queue, url, restore, o)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// restore sends the selection to the parking queue; --to source, it then
// runs the engine from there with a reset count, over exactly the
// messages restored.
func (a *app) restore(ctx context.Context, f restoreFlags, day time.Time) error {
	home := replayFlags{from: roleParking, resetCount: true, noHealth: f.noHealth, rate: f.rate}
	s, err := a.open(ctx, func(r *resources) error {
		if _, err := r.get(outArchive); err != nil || f.to != restoreToSource {
			return err
		}
		return home.need(r)
	})
	if err != nil {
		return err
	}
	l, err := s.archiveLane(ctx)
	if err != nil {
		return err
	}
	parking, err := s.res.get(outParking)
	if err != nil {
		return err
	}
	var cfg handler.Config
	if f.to == restoreToSource {
		if cfg, err = a.replayConfig(ctx, s, home); err != nil {
			return err
		}
		parking = cfg.Routes[0].DLQURL
	}
	rep, picked, err := f.pick(ctx, l, day)
	if err != nil || f.dryRun || len(picked) == 0 {
		return show(a, rep, err, writeRestore)
	}
	if err := a.confirmRestore(len(picked), f.to, f.yes); err != nil {
		return err
	}
	ids, err := a.restoreAll(ctx, s, parking, picked, f.rate)
	rep.Restored = rep.Restored[:len(ids)]
	if f.to == restoreToSource && len(ids) > 0 {
		// What was sent goes home even when a later send failed.
		rep.ParkingIDs, rep.LeftParked = ids, len(ids)
		req := replay.Request{Routes: cfg.Routes, Max: len(ids), Rate: f.rate, ResetCount: true,
			Filter: replay.Filter{MessageIDs: ids}, RunID: runID(a.now())}
		sum, runErr := a.runEngine(ctx, s, cfg, req)
		if sum.RunID != "" {
			rep.Run = &sum
			rep.LeftParked = max(0, len(ids)-sum.Total.Replayed-sum.Total.Recovered-sum.Total.Applied)
		}
		if runErr == nil && rep.LeftParked > 0 {
			runErr = &codedError{code: exitIncomplete, err: fmt.Errorf("%d restored message(s) stay in the parking queue", rep.LeftParked)}
		}
		err = cmp.Or(err, runErr)
	}
	if showErr := show(a, rep, nil, writeRestore); err == nil {
		err = showErr
	}
	return err
}

// confirmRestore asks on a terminal, unless yes.
func (a *app) confirmRestore(n int, to string, yes bool) error {
	if yes {
		return nil
	}
	if !a.isTerminal(a.stdin) {
		return refused("not restoring without confirmation: stdin is not a terminal — pass --yes (or --dry-run)")
	}
	where := "the parking queue"
	if to == restoreToSource {
		where = "the source (through the parking queue)"
	}
	fmt.Fprintf(a.stderr, "Restore %d archived message(s) to %s? [y/N] ", n, where)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
		return refused("restore not confirmed: nothing sent")
	}
	return nil
}

func writeRestore(w io.Writer, rep restoreReport) error {
	verb := "restored"
	if rep.DryRun {
		verb = "would restore (dry run)"
	}
	where := "to the parking queue"
	if rep.To == restoreToSource {
		where = "to the source, through the parking queue"
	}
	fmt.Fprintf(w, "%s %d message(s) %s\n", verb, len(rep.Restored), where)
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "skipped %d part(s) of invalid bodies split in several messages: no part is a message on its own (archive show prints each)\n", len(rep.Skipped))
	}
	if len(rep.Restored) > 0 {
		if err := writeArchived(w, rep.Restored); err != nil {
			return err
		}
	}
	if rep.Run != nil {
		fmt.Fprintln(w)
		if err := writeSummary(w, *rep.Run); err != nil {
			return err
		}
	}
	if rep.LeftParked > 0 {
		fmt.Fprintf(w, "\n%d restored message(s) stay in the parking queue; once the gate or the group ahead lets them, this takes them on:\n  dlq replay --from parking --reset-count --message-id %s\n",
			rep.LeftParked, strings.Join(rep.ParkingIDs, " --message-id "))
	}
	return nil
}

// archiveQueueStats is what the lane's archive holds of one queue.
type archiveQueueStats struct {
	Queue   string `json:"queue"`            // parking or invalid
	Objects int    `json:"objects"`          // its archived messages, counted up to maxArchiveCount
	More    bool   `json:"more,omitempty"`   // the count stopped at maxArchiveCount
	Newest  string `json:"newest,omitempty"` // the key of its newest object, by the day and order its message was sent
}

// maxArchiveCount bounds the objects inspect counts per queue: one LIST
// call per 1,000.
const maxArchiveCount = 100000

// stats counts the archive's objects of each queue and names the newest.
func (l archiveLane) stats(ctx context.Context) ([]archiveQueueStats, error) {
	var out []archiveQueueStats
	for _, q := range []string{archive.Parking, archive.Invalid} {
		st := archiveQueueStats{Queue: q}
		err := l.store.List(ctx, archive.DayPrefix(l.lane, q, time.Time{}), func(key string) bool {
			if st.Objects == maxArchiveCount {
				st.More = true
				return false
			}
			st.Objects++
			st.Newest = key
			return true
		})
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}
