package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/homingdlq/homing/internal/browse"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/payload"
	"github.com/homingdlq/homing/replay"
)

// peekReport is the output of dlq peek.
type peekReport struct {
	Queue    string          `json:"queue"` // dlq, parking or invalid
	URL      string          `json:"url"`
	Messages []peekedMessage `json:"messages"`
	// FailureRecords says whether the messages' failure records were read,
	// and why not or why none was found.
	FailureRecords failureStatus `json:"failureRecords"`
}

// peekedMessage is one message as peek shows it.
type peekedMessage struct {
	MessageID    string            `json:"messageId"`
	Key          string            `json:"key,omitempty"` // the business key, by the lane's route's key expression
	Reason       string            `json:"reason"`        // as the replay engine decides it
	ReplayCount  int               `json:"replayCount"`   // of verified metadata; 0 otherwise
	SentAt       time.Time         `json:"sentAt,omitzero"`
	ReceiveCount int               `json:"receiveCount"` // ApproximateReceiveCount, this peek included
	GroupID      string            `json:"groupId,omitempty"`
	Body         string            `json:"body"`                 // whole in JSON; cut to --width in the table
	Attributes   map[string]string `json:"attributes,omitempty"` // the producer's message attributes
	Replay       *replay.Metadata  `json:"replay,omitempty"`     // our replay metadata (homing-replay), as decoded
	Verified     bool              `json:"verified"`             // the replay function sealed Replay: only then is it history
	Invalid      *invalid.Metadata `json:"invalid,omitempty"`    // the invalid lane's metadata (homing-invalid)
	Problem      string            `json:"problem,omitempty"`    // metadata that could not be decoded
	Failure      *failureView      `json:"failure,omitempty"`    // why it failed: its failure records; absent without one
}

func (a *app) peekCommand() *cobra.Command {
	var (
		n        int
		width    int
		queue    string
		force    bool
		consumer string
	)
	cmd := &cobra.Command{
		Use:   "peek",
		Short: "Show messages with why they failed, their attributes and metadata, without deleting them",
		Long: `peek receives up to -n (--limit) messages of the DLQ (or --queue parking|invalid), shows
each one's id, business key (by the key expression of the lane's route in the
replay function's REPLAY_ROUTES), reason, replay count, sent time, body (cut to --width
characters in the table; whole with -o json), the producer's attributes and our
metadata (homing-replay: replay count, first dead-lettered, last replay, run;
homing-invalid: reason, detail, consumer), then releases them at once.

Each message's failure record says why it failed
(docs/CONTRACT.md#failure-records): its error class (http-503, timeout,
panic...), the error's message (control characters escaped, at most 515
bytes; cut to --width in the table),
its failed deliveries in its latest round, its replays before it (verified
metadata only), and the times of its first and last failure. The latest
round's record is found by the message's own id, the first round's by the
original id of its verified replay metadata. A message without one shows
"no failure record", and peek says why (FAILURE_RECORDS=off, an older
consumer, or expired after 30 days). The consumer's scope is the replay
function's CONSUMER_NAME unless --consumer names it.

Replay metadata whose seal does not verify under the lane's public seal key
(in the ledger) is shown "unverified": a producer's copy or a forgery, it is
not history, and the replay count and reason ignore it as the engine does. It
never deletes. Messages are invisible for a few seconds while peek runs, and each
peek adds one to their ApproximateReceiveCount.

peek refuses a queue that has a RedrivePolicy (a source queue: every receive
burns a delivery attempt) unless --force.`,
		Example: `  dlq peek
  dlq peek -n 20 --queue invalid --width 200
  dlq peek --queue parking -o json | jq -r '.messages[].key'
  dlq peek -n 50 -o json | jq -r '.messages[] | [.messageId, .failure.class] | @tsv'`,
		RunE: runE(func(cmd *cobra.Command) error {
			if n < 1 || width < 10 {
				return usageError("--limit %d, --width %d: want --limit >= 1 and --width >= 10", n, width)
			}
			if err := checkRole("queue", queue); err != nil {
				return err
			}
			if cmd.Flags().Changed("consumer") {
				if err := checkConsumer(consumer); err != nil {
					return err
				}
			}
			rep, err := a.peek(cmd.Context(), queue, n, force, consumer)
			return show(a, rep, err, func(w io.Writer, rep peekReport) error { return writePeek(w, rep, width, a.now()) })
		}),
	}
	cmd.Flags().IntVarP(&n, "limit", "n", 10, "show at most this many messages")
	cmd.Flags().IntVar(&n, "n", 10, "the same as --limit")
	_ = cmd.Flags().MarkHidden("n") // the flag's former long name, kept for scripts
	cmd.Flags().IntVar(&width, "width", 120, "cut bodies to this many characters in the table")
	cmd.Flags().StringVar(&queue, "queue", roleDLQ, "the queue to peek at: dlq, parking or invalid")
	cmd.Flags().BoolVar(&force, "force", false, "peek even at a queue with a RedrivePolicy (burns delivery attempts)")
	cmd.Flags().StringVar(&consumer, "consumer", "", "the consumer whose failure records to read (default: the replay function's "+settings.ConsumerName.Env+")")
	return cmd
}

func (a *app) peek(ctx context.Context, role string, n int, force bool, consumer string) (peekReport, error) {
	s, url, _, err := a.browsableRole(ctx, role, "peek at", force)
	if err != nil {
		return peekReport{}, err
	}
	key := a.laneKey(ctx, s)
	v := a.verifier(ctx, s, role, url)
	rep := peekReport{Queue: role, URL: url, Messages: []peekedMessage{}}
	var msgs []types.Message
	if _, err = browse.All(ctx, s.queue, url, browse.Options{Hide: browseHide, Max: n}, func(m types.Message) bool {
		msgs = append(msgs, m)
		rep.Messages = append(rep.Messages, describe(m, key, v))
		return false
	}); err != nil {
		return rep, err
	}
	var views []*failureView
	views, rep.FailureRecords = a.laneFailures(ctx, s, role, consumer, msgs, v)
	for i, fv := range views {
		rep.Messages[i].Failure = fv
	}
	return rep, nil
}

// laneKey is the business key of the lane's route in its replay function's
// configuration; the zero Key (no keys shown) when the lane has none or it
// cannot be read, which peek says on stderr: peek needs no more than the
// queue.
func (a *app) laneKey(ctx context.Context, s *session) payload.Key {
	lc, err := s.laneConfig(ctx, "", false, s.res.optional(outDLQ))
	if err == nil {
		var k payload.Key
		if k, err = payload.NewKey(lc.route.Key); err == nil {
			return k
		}
		err = fmt.Errorf("the key expression %q of replay function %s: %w", lc.route.Key, lc.function, err)
	}
	fmt.Fprintf(a.stderr, "dlq: keys not shown: %v\n", err)
	return payload.Key{}
}

// verifier tells, as the replay engine does, the metadata it sealed on the
// messages of the queue of role (at url); the zero one (all unverified)
// when the lane's public seal key cannot be read, which it says on stderr.
func (a *app) verifier(ctx context.Context, s *session, role, url string) replay.Verifier {
	rt := replay.Route{DLQURL: url, SourceURL: s.res.optional(outSource), Invalid: role == roleInvalid}
	err := errors.New("no ledger table (its output, or --ledger-table) to read the public seal key from")
	v, _ := replay.NewVerifier(ctx, nil, rt)
	if table := s.res.optional(outLedger); table != "" {
		if v, err = replay.NewVerifier(ctx, s.ledger(table), rt); err == nil {
			return v
		}
	}
	fmt.Fprintf(a.stderr, "dlq: replay metadata shown unverified: %v\n", err)
	return v
}

// describe decodes a message for peek; key evaluates its business key, v
// verifies its replay metadata.
func describe(m types.Message, key payload.Key, v replay.Verifier) peekedMessage {
	body := aws.ToString(m.Body)
	p := peekedMessage{
		MessageID: aws.ToString(m.MessageId),
		SentAt:    sentAt(m), GroupID: m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], Body: body,
	}
	p.Verified, p.Reason = v.Check(m)
	p.Key, _ = key.Of([]byte(body))
	p.ReceiveCount, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	var problems []string
	attrs := m.MessageAttributes
	if meta, producer, found, err := replay.Read(attrs); err != nil {
		problems = append(problems, err.Error())
	} else {
		attrs = producer
		if found {
			p.Replay = &meta
		}
		if p.Verified {
			p.ReplayCount = meta.ReplayCount
		}
	}
	if meta, producer, found, err := invalid.Read(attrs); err != nil {
		problems = append(problems, err.Error())
	} else {
		attrs = producer
		if found {
			p.Invalid = &meta
		}
	}
	p.Problem = strings.Join(problems, "; ")
	if len(attrs) > 0 {
		p.Attributes = make(map[string]string, len(attrs))
		for k, v := range attrs {
			switch {
			case v.StringValue != nil:
				p.Attributes[k] = aws.ToString(v.StringValue)
			default:
				p.Attributes[k] = "base64:" + base64.StdEncoding.EncodeToString(v.BinaryValue)
			}
		}
	}
	return p
}

func writePeek(w io.Writer, rep peekReport, width int, now time.Time) error {
	if len(rep.Messages) == 0 {
		_, err := fmt.Fprintf(w, "No visible messages in %s (%s).\n", rep.Queue, rep.URL)
		return err
	}
	fmt.Fprintf(w, "%d message(s) of %s (%s), released again:\n", len(rep.Messages), rep.Queue, rep.URL)
	if rep.FailureRecords.Detail != "" {
		fmt.Fprintf(w, "Failure records: %s.\n", printable.String(rep.FailureRecords.Detail))
	}
	for _, m := range rep.Messages {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "\nmessage\t%s\n", printable.String(m.MessageID))
		if m.Key != "" {
			fmt.Fprintf(tw, "key\t%s\n", printable.String(m.Key))
		}
		fmt.Fprintf(tw, "reason\t%s\n", printable.String(m.Reason))
		fmt.Fprintf(tw, "replays\t%d\n", m.ReplayCount)
		writeFailure(tw, m, rep.FailureRecords, width, now)
		if !m.SentAt.IsZero() {
			fmt.Fprintf(tw, "sent\t%s (%s ago), received %d time(s)\n", m.SentAt.Format(time.RFC3339), duration(now.Sub(m.SentAt)), m.ReceiveCount)
		}
		if m.GroupID != "" {
			fmt.Fprintf(tw, "group\t%s\n", printable.String(m.GroupID))
		}
		fmt.Fprintf(tw, "body\t%s\n", cut(m.Body, width))
		for _, k := range slices.Sorted(maps.Keys(m.Attributes)) {
			fmt.Fprintf(tw, "attribute\t%s=%s\n", printable.String(k), cut(m.Attributes[k], width))
		}
		if m.Replay != nil {
			b, _ := json.Marshal(m.Replay)
			name := envelope.ReplayAttributeName
			if !m.Verified {
				name += " (unverified)"
			}
			fmt.Fprintf(tw, "%s\t%s\n", name, b)
		}
		if m.Invalid != nil {
			b, _ := json.Marshal(m.Invalid)
			fmt.Fprintf(tw, "%s\t%s\n", invalid.AttributeName, b)
		}
		if m.Problem != "" {
			fmt.Fprintf(tw, "problem\t%s\n", printable.String(m.Problem))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// writeFailure writes the lines of m's failure record: its class, the
// error's message cut to width, its failures and their times.
func writeFailure(w io.Writer, m peekedMessage, st failureStatus, width int, now time.Time) {
	f := m.Failure
	switch {
	case f == nil && st.Read:
		fmt.Fprintln(w, "failed\tno failure record (class unknown)")
		return
	case f == nil:
		return
	}
	fmt.Fprintf(w, "failed\t%s: %s\n", printable.String(f.Class), cutShown(f.Message, width))
	rounds := ""
	if f.Replays > 0 {
		rounds = fmt.Sprintf(", after %d replay(s)", f.Replays)
	}
	fmt.Fprintf(w, "failures\t%d in its latest round%s; first %s (%s ago), last %s (%s ago)\n", f.Failures, rounds,
		f.FirstAt.Format(time.RFC3339), duration(now.Sub(f.FirstAt)), f.LastAt.Format(time.RFC3339), duration(now.Sub(f.LastAt)))
}

// cut puts s on one line, its white space folded, shows it by
// printable.String and cuts that to width characters, marking a cut with
// "…".
func cut(s string, width int) string {
	return cutShown(printable.String(strings.Join(strings.Fields(s), " ")), width)
}

// cutShown cuts s, already shown by printable.String (a failure record's
// message as dynamo.FailureLog reads it), to width characters, marking a
// cut with "…".
func cutShown(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}
