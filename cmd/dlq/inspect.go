package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/homingdlq/homing/internal/browse"
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// browseHide is how long a browsed message stays invisible: long enough
// for a bounded browse, short enough that the scheduled replay and the
// consumer barely notice.
const browseHide = 15

// inspectReport is the output of dlq inspect.
type inspectReport struct {
	Sampled string       `json:"sampled"` // the role of the sampled queue
	Queues  []queueStats `json:"queues"`  // the sampled queue first, then the other known lane queues
	Sample  sampleStats  `json:"sample"`
	// Routes are the lane's routes as the latest replay run that read each
	// left them (from the ledger's run records): the gates, the breaker's
	// signal, and whether the consumer's records are missing. Empty when
	// the lane has no ledger or no run has read a route yet.
	Routes []routeState `json:"routes"`
	// RoutesError says why Routes could not be read; the queues are
	// reported anyway.
	RoutesError string `json:"routesError,omitempty"`
	// FailureRecords says whether the sample's failure records were read
	// (sample.byClass), and why not or why none was found.
	FailureRecords failureStatus `json:"failureRecords"`
	// Archive is what the lane's archive holds, per queue; absent when
	// the lane names no archive bucket. ArchiveError says why it could not
	// be read.
	Archive      []archiveQueueStats `json:"archive,omitempty"`
	ArchiveError string              `json:"archiveError,omitempty"`
}

// routeState is a route as the latest replay run that read it left it.
type routeState struct {
	Route          string        `json:"route"`
	RunID          string        `json:"runId"`
	StartedAt      time.Time     `json:"startedAt"`
	Gates          []replay.Gate `json:"gates"`
	BreakerSignal  string        `json:"breakerSignal,omitempty"`
	BreakerOpen    bool          `json:"breakerOpen"`
	RecordsMissing bool          `json:"recordsMissing"`
	Detail         string        `json:"detail,omitempty"` // why the records are missing, and what to check
}

// inspectRuns is how many of the latest runs inspect reads for the routes'
// state: the replay's own look-back.
const inspectRuns = 20

// sampleStats describe a bounded sample of a queue: approximate by nature.
type sampleStats struct {
	Approximate      bool           `json:"approximate"` // always true: at most Limit messages, visible ones only
	Limit            int            `json:"limit"`
	Size             int            `json:"size"`
	OldestSentAt     time.Time      `json:"oldestSentAt,omitzero"`
	OldestAgeSeconds int64          `json:"oldestAgeSeconds"`
	ExpiresInSeconds int64          `json:"expiresInSeconds"` // until the oldest sampled message expires by the queue's retention; 0 when the sample is empty
	ByReplayCount    map[string]int `json:"byReplayCount"`    // replay count (our verified metadata; 0 without) -> messages; unverified ones apart
	ByReason         map[string]int `json:"byReason"`         // reason, as the replay engine decides it -> messages
	Unverified       int            `json:"unverified"`       // messages whose replay metadata did not verify: no replay count
	// ByClass counts the messages by the error class of their failure
	// records, the most first; "unknown" (last) counts those without one.
	ByClass []classCount `json:"byClass"`
}

func (a *app) inspectCommand() *cobra.Command {
	var (
		sample   int
		queue    string
		force    bool
		consumer string
	)
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Depth, age of the oldest message, time to expiry, and counts by error class, reason and replay count",
		Long: `inspect reports on the DLQ (or --queue parking|invalid): its depth (visible,
in flight, delayed), the age of its oldest message and the time left before
that message expires by the queue's MessageRetentionPeriod, and counts by
replay count and by reason (the parking reason or the invalid lane's reason in
the message metadata, "dead-lettered" when there is none). Replay metadata
whose seal does not verify under the lane's public seal key is not counted
by replay count or by its reason (the engine ignores it): such messages
are counted apart as unverified. It also shows the
depths of the other lane queues, and each route as the latest replay run left
it (from the ledger): its gates, its breaker and the signal it reads
(completions, or the replays that come back to the DLQ), and MISSING when the
route's consumer consumes its replays without writing completion records,
with what to check.

Error classes: each sampled message is counted under the error class of its
failure record (why the consumer failed it: http-503, timeout, throttled,
panic...; docs/CONTRACT.md#failure-records), with the oldest first failure of
each class ("412 http-503 since 09:12, 3 panic"). A dead letter's own message
id finds its latest round's record; the original message id of its verified
replay metadata finds its first round's, whose first failure it keeps. Messages without a record count as "unknown", and
inspect says why none was found (FAILURE_RECORDS=off, an older consumer, or
expired after 30 days). The consumer's scope is the replay function's
CONSUMER_NAME unless --consumer names it. The invalid queue has no failure
records: its messages carry their reason.

Age, expiry and counts come from a sample of at most --sample visible messages
(the oldest SentTimestamp among them): they are approximate. The sample is
received without deleting anything and released at once; the messages are
invisible for a few seconds meanwhile.

inspect refuses to sample a queue that has a RedrivePolicy (a source queue:
every receive burns a delivery attempt) unless --force.`,
		Example: `  dlq inspect
  dlq inspect --queue parking --sample 500
  dlq inspect -o json | jq .sample.byReason
  dlq inspect -o json | jq '.sample.byClass[] | "\(.messages) \(.class)"'`,
		RunE: runE(func(cmd *cobra.Command) error {
			if sample < 1 {
				return usageError("--sample %d: want at least 1", sample)
			}
			if err := checkRole("queue", queue); err != nil {
				return err
			}
			if cmd.Flags().Changed("consumer") {
				if err := checkConsumer(consumer); err != nil {
					return err
				}
			}
			rep, err := a.inspect(cmd.Context(), queue, sample, force, consumer)
			return show(a, rep, err, func(w io.Writer, rep inspectReport) error { return writeInspect(w, rep, a.now()) })
		}),
	}
	cmd.Flags().IntVar(&sample, "sample", 100, "sample at most this many messages")
	cmd.Flags().StringVar(&queue, "queue", roleDLQ, "the queue to sample: dlq, parking or invalid")
	cmd.Flags().BoolVar(&force, "force", false, "sample even a queue with a RedrivePolicy (burns delivery attempts)")
	cmd.Flags().StringVar(&consumer, "consumer", "", "the consumer whose failure records to read (default: the replay function's "+settings.ConsumerName.Env+")")
	return cmd
}

func (a *app) inspect(ctx context.Context, role string, limit int, force bool, consumer string) (inspectReport, error) {
	s, url, attrs, err := a.browsableRole(ctx, role, "sample", force)
	if err != nil {
		return inspectReport{}, err
	}
	rep := inspectReport{Sampled: role, Queues: []queueStats{statsOf(role, url, attrs)}}
	for _, other := range []string{roleDLQ, roleParking, roleInvalid} {
		if u := s.res.optional(roleOutputs[other]); other != role && u != "" {
			attrs, err := attributes(ctx, s.queue, u)
			if err != nil {
				return inspectReport{}, err
			}
			rep.Queues = append(rep.Queues, statsOf(other, u, attrs))
		}
	}
	msgs := make([]types.Message, 0, min(limit, 1000))
	if _, err := browse.All(ctx, s.queue, url, browse.Options{Hide: browseHide, Max: limit}, func(m types.Message) bool {
		msgs = append(msgs, m)
		return false
	}); err != nil {
		return inspectReport{}, err
	}
	v := a.verifier(ctx, s, role, url)
	rep.Sample = summarize(msgs, v, limit, time.Duration(rep.Queues[0].RetentionSeconds)*time.Second, a.now())
	var views []*failureView
	views, rep.FailureRecords = a.laneFailures(ctx, s, role, consumer, msgs, v)
	rep.Sample.ByClass = byClass(views)
	if s.res.optional(outArchive) != "" {
		l, err := s.archiveLane(ctx)
		if err == nil {
			rep.Archive, err = l.stats(ctx)
		}
		if err != nil {
			rep.ArchiveError = fmt.Sprintf("read the archive: %v", err)
		}
	}
	rep.Routes = []routeState{}
	if table := s.res.optional(outLedger); table != "" {
		sums, err := s.ledger(table).Runs(ctx, inspectRuns)
		if err != nil {
			rep.RoutesError = fmt.Sprintf("read the last runs from ledger table %s: %v", table, err)
		} else {
			rep.Routes = routeStates(sums)
		}
	}
	return rep, nil
}

// routeStates returns each route of sums (latest first) as the latest run
// that read it (evaluated its gates) left it, in the order first met.
func routeStates(sums []replay.Summary) []routeState {
	var out []routeState
	for _, s := range sums {
		for _, r := range s.Routes {
			if len(r.Gates) == 0 || slices.ContainsFunc(out, func(x routeState) bool { return x.Route == r.Route }) {
				continue
			}
			out = append(out, routeState{Route: r.Route, RunID: s.RunID, StartedAt: s.StartedAt, Gates: append(slices.Clone(s.Gates), r.Gates...),
				BreakerSignal: r.BreakerSignal, BreakerOpen: r.Breaker != nil && r.Breaker.Open, RecordsMissing: r.RecordsMissing, Detail: r.RecordsMissingDetail})
		}
	}
	return out
}

// summarize computes the sample statistics of msgs, whose replay metadata
// v verifies.
func summarize(msgs []types.Message, v replay.Verifier, limit int, retention time.Duration, now time.Time) sampleStats {
	st := sampleStats{Approximate: true, Limit: limit, Size: len(msgs), ByReplayCount: map[string]int{}, ByReason: map[string]int{}}
	for _, m := range msgs {
		meta, _, found, _ := replay.Read(m.MessageAttributes) // zero when absent or undecodable
		verified, reason := v.Check(m)
		switch {
		case verified:
			st.ByReplayCount[strconv.Itoa(meta.ReplayCount)]++
		case found:
			st.Unverified++
		default:
			st.ByReplayCount["0"]++
		}
		st.ByReason[reason]++
		if sent := sentAt(m); !sent.IsZero() && (st.OldestSentAt.IsZero() || sent.Before(st.OldestSentAt)) {
			st.OldestSentAt = sent
		}
	}
	if !st.OldestSentAt.IsZero() {
		age := now.Sub(st.OldestSentAt)
		st.OldestAgeSeconds = int64(age / time.Second)
		st.ExpiresInSeconds = max(0, int64((retention-age)/time.Second))
	}
	return st
}

// sentAt is a message's SentTimestamp; zero when absent.
func sentAt(m types.Message) time.Time {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func writeInspect(w io.Writer, rep inspectReport, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tVISIBLE\tIN FLIGHT\tDELAYED\tRETENTION\tURL")
	for _, q := range rep.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", q.Role, q.Visible, q.InFlight, q.Delayed, duration(time.Duration(q.RetentionSeconds)*time.Second), q.URL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeArchiveStats(w, rep)
	st := rep.Sample
	fmt.Fprintf(w, "\nSample of %s: %d message(s), at most %d (approximate).\n", rep.Sampled, st.Size, st.Limit)
	if st.Size == 0 {
		_, err := fmt.Fprintln(w, "No visible messages.")
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if st.OldestSentAt.IsZero() {
		fmt.Fprintln(tw, "oldest message\tunknown (no SentTimestamp)")
	} else {
		fmt.Fprintf(tw, "oldest message\tsent %s (%s ago)\n", st.OldestSentAt.Format(time.RFC3339), duration(now.Sub(st.OldestSentAt)))
		fmt.Fprintf(tw, "expires in\t%s (by retention %s)\n", duration(time.Duration(st.ExpiresInSeconds)*time.Second), duration(time.Duration(rep.Queues[0].RetentionSeconds)*time.Second))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	byCount := slices.SortedFunc(maps.Keys(st.ByReplayCount), func(x, y string) int {
		a, _ := strconv.Atoi(x)
		b, _ := strconv.Atoi(y)
		return a - b
	})
	counts := st.ByReplayCount
	if st.Unverified > 0 {
		// Metadata the replay function did not seal: no replay count.
		counts = maps.Clone(counts)
		counts["unverified"] = st.Unverified
		byCount = append(byCount, "unverified")
	}
	if err := writeCounts(w, "REPLAY COUNT", byCount, counts); err != nil {
		return err
	}
	if err := writeCounts(w, "REASON", slices.Sorted(maps.Keys(st.ByReason)), st.ByReason); err != nil {
		return err
	}
	if err := writeClasses(w, rep, now); err != nil {
		return err
	}
	return writeRoutes(w, rep)
}

// writeClasses writes the sample's counts by error class, with the oldest
// first failure of each, and why records are missing when they are.
func writeClasses(w io.Writer, rep inspectReport, now time.Time) error {
	fr := rep.FailureRecords
	if fr.Read && fr.Found > 0 {
		fmt.Fprintf(w, "\nBy error class: %s.\n", classLine(rep.Sample.ByClass, now))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ERROR CLASS\tMESSAGES\tOLDEST FIRST FAILURE")
		for _, c := range rep.Sample.ByClass {
			oldest := "no failure record"
			if !c.OldestFailedAt.IsZero() {
				oldest = fmt.Sprintf("%s (%s ago)", c.OldestFailedAt.Format(time.RFC3339), duration(now.Sub(c.OldestFailedAt)))
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", printable.String(c.Class), c.Messages, oldest)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if fr.Detail != "" {
		_, err := fmt.Fprintf(w, "\nError classes: %s.\n", printable.String(fr.Detail))
		return err
	}
	return nil
}

// writeRoutes writes the routes as the latest runs left them, and under
// the table a warning for each route whose records are missing.
func writeRoutes(w io.Writer, rep inspectReport) error {
	if rep.RoutesError != "" {
		_, err := fmt.Fprintf(w, "\nReplay runs: %s\n", printable.String(rep.RoutesError))
		return err
	}
	if len(rep.Routes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nROUTE\tLAST RUN\tGATES\tBREAKER\tRECORDS")
	for _, r := range rep.Routes {
		breaker := "closed"
		if r.BreakerOpen {
			breaker = "open"
		}
		if r.BreakerSignal != "" {
			breaker += " (" + printable.String(r.BreakerSignal) + ")"
		}
		records := "ok"
		if r.RecordsMissing {
			records = "MISSING"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable.String(r.Route), r.StartedAt.Format(time.RFC3339), gateList(r.Gates), breaker, records)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Routes {
		if r.RecordsMissing {
			if _, err := fmt.Fprintf(w, "\nRoute %s: %s\n", printable.String(r.Route), printable.String(r.Detail)); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeCounts writes a blank line and a two-column table of counts, its
// keys shown by printable.String (a reason is a producer's to write).
func writeCounts(w io.Writer, title string, keys []string, counts map[string]int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\n%s\tMESSAGES\n", title)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%d\n", printable.String(k), counts[k])
	}
	return tw.Flush()
}

// duration prints d rounded for people: 3d4h, 2h5m, 4m10s, 12s.
func duration(d time.Duration) string {
	switch d = d.Round(time.Second); {
	case d >= 24*time.Hour:
		days := d / (24 * time.Hour)
		return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, (d%time.Hour)/time.Minute)
	default:
		return d.String()
	}
}

// writeArchiveStats writes what the lane's archive holds, when it has one.
func writeArchiveStats(w io.Writer, rep inspectReport) {
	if rep.ArchiveError != "" {
		fmt.Fprintf(w, "\nArchive: %s\n", printable.String(rep.ArchiveError))
	}
	for _, a := range rep.Archive {
		more := ""
		if a.More {
			more = " or more"
		}
		newest := ""
		if a.Newest != "" {
			newest = ", newest " + printable.String(a.Newest)
		}
		fmt.Fprintf(w, "Archived from %s: %d%s%s\n", a.Queue, a.Objects, more, newest)
	}
}
