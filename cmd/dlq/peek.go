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
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/payload"
	"github.com/homingdlq/homing/replay"
)

// peekReport is the output of dlq peek.
type peekReport struct {
	Queue    string          `json:"queue"` // dlq, parking or invalid
	URL      string          `json:"url"`
	Messages []peekedMessage `json:"messages"`
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
}

func (a *app) peekCommand() *cobra.Command {
	var (
		n     int
		width int
		queue string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "peek",
		Short: "Show messages with their attributes and metadata, without deleting them",
		Long: `peek receives up to -n (--limit) messages of the DLQ (or --queue parking|invalid), shows
each one's id, business key (by the key expression of the lane's route in the
replay function's REPLAY_ROUTES), reason, replay count, sent time, body (cut to --width
characters in the table; whole with -o json), the producer's attributes and our
metadata (homing-replay: replay count, first dead-lettered, last replay, run;
homing-invalid: reason, detail, consumer), then releases them at once. Replay
metadata whose seal does not verify under the lane's public seal key (in the
ledger) is shown "unverified": a producer's copy or a forgery, it is not
history, and the replay count and reason ignore it as the engine does. It never
deletes. Messages are invisible for a few seconds while peek runs, and each
peek adds one to their ApproximateReceiveCount.

peek refuses a queue that has a RedrivePolicy (a source queue: every receive
burns a delivery attempt) unless --force.`,
		Example: `  dlq peek
  dlq peek -n 20 --queue invalid --width 200
  dlq peek --queue parking -o json | jq -r '.messages[].key'`,
		RunE: runE(func(cmd *cobra.Command) error {
			if n < 1 || width < 10 {
				return usageError("--limit %d, --width %d: want --limit >= 1 and --width >= 10", n, width)
			}
			if err := checkRole("queue", queue); err != nil {
				return err
			}
			rep, err := a.peek(cmd.Context(), queue, n, force)
			return show(a, rep, err, func(w io.Writer, rep peekReport) error { return writePeek(w, rep, width, a.now()) })
		}),
	}
	cmd.Flags().IntVarP(&n, "limit", "n", 10, "show at most this many messages")
	cmd.Flags().IntVar(&n, "n", 10, "the same as --limit")
	_ = cmd.Flags().MarkHidden("n") // the flag's former long name, kept for scripts
	cmd.Flags().IntVar(&width, "width", 120, "cut bodies to this many characters in the table")
	cmd.Flags().StringVar(&queue, "queue", roleDLQ, "the queue to peek at: dlq, parking or invalid")
	cmd.Flags().BoolVar(&force, "force", false, "peek even at a queue with a RedrivePolicy (burns delivery attempts)")
	return cmd
}

func (a *app) peek(ctx context.Context, role string, n int, force bool) (peekReport, error) {
	s, url, _, err := a.browsableRole(ctx, role, "peek at", force)
	if err != nil {
		return peekReport{}, err
	}
	key := a.laneKey(ctx, s)
	v := a.verifier(ctx, s, role, url)
	rep := peekReport{Queue: role, URL: url, Messages: []peekedMessage{}}
	_, err = browse.All(ctx, s.queue, url, browse.Options{Hide: browseHide, Max: n}, func(m types.Message) bool {
		rep.Messages = append(rep.Messages, describe(m, key, v))
		return false
	})
	return rep, err
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
	for _, m := range rep.Messages {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "\nmessage\t%s\n", printable.String(m.MessageID))
		if m.Key != "" {
			fmt.Fprintf(tw, "key\t%s\n", printable.String(m.Key))
		}
		fmt.Fprintf(tw, "reason\t%s\n", printable.String(m.Reason))
		fmt.Fprintf(tw, "replays\t%d\n", m.ReplayCount)
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

// cut puts s on one line, its white space folded, shows it by
// printable.String and cuts that to width characters, marking a cut with
// "…".
func cut(s string, width int) string {
	s = printable.String(strings.Join(strings.Fields(s), " "))
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}
