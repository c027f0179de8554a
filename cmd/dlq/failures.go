package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// classUnknown is the class of a message without a failure record.
const classUnknown = settings.FailureClassUnknown

// failureView is why a message failed, as dlq shows it: the failure
// records of its own message id (its latest round) and of the original id
// of its verified replay metadata (its first round), joined
// (docs/CONTRACT.md#failure-records).
type failureView struct {
	Class    string `json:"class"`             // of the latest record
	Message  string `json:"message,omitempty"` // of the latest record, printable, at most 515 bytes
	Failures int    `json:"failures"`          // failed deliveries of the latest round (SQS's receive count)
	// Replays is the replay count of the message's verified metadata: the
	// rounds before the latest.
	Replays  int       `json:"replays"`
	FirstAt  time.Time `json:"firstFailedAt"` // the first round's first receive
	LastAt   time.Time `json:"lastFailedAt"`  // the latest failure
	Original bool      `json:"original"`      // the first round's record was read through the verified original id
}

// failureRecord is one failure record as audit shows it.
type failureRecord struct {
	MessageID string    `json:"messageId"`
	Class     string    `json:"class"`
	Message   string    `json:"message,omitempty"`
	Failures  int       `json:"failures"`
	FirstAt   time.Time `json:"firstFailedAt"`
	LastAt    time.Time `json:"lastFailedAt"`
}

func recordOf(f batch.Failure) failureRecord {
	return failureRecord{MessageID: f.MessageID, Class: f.Class, Message: f.Message, Failures: f.Failures, FirstAt: f.FirstAt, LastAt: f.LastAt}
}

// failureStatus says whether the failure records were read, and when not
// (or when none was found) why.
type failureStatus struct {
	Read   bool   `json:"read"`
	Found  int    `json:"found"`            // messages with a record
	Detail string `json:"detail,omitempty"` // why none was read or found
}

// failureSource reads the failure records of the lane's consumer; log is
// nil when they cannot be read, and why says so.
type failureSource struct {
	log *dynamo.FailureLog
	why string
}

// failureSource finds the lane's failure records: the idempotency table
// of its resources and the consumer's name of its replay function's
// configuration lc (or consumer, when set).
func (s *session) failureSource(lc laneConfig, consumer string) failureSource {
	table := s.res.optional(outIdempotency)
	consumer = cmp.Or(consumer, lc.consumer())
	switch {
	case table == "":
		return failureSource{why: "the lane names no idempotency table (its output, or --idempotency-table), where its consumer writes them"}
	case consumer == "":
		return failureSource{why: fmt.Sprintf("no consumer name: the lane has no replay function whose %s dlq can read", settings.ConsumerName.Env)}
	}
	return failureSource{log: s.failures(table, consumer)}
}

// read reads the records of ids, their messages escaped (as written, they
// are the errors' own text); a failure to read is reported in the status,
// never returned: the records only explain.
func (src failureSource) read(ctx context.Context, ids []string) (map[string]batch.Failure, failureStatus) {
	if src.log == nil {
		return map[string]batch.Failure{}, failureStatus{Detail: "failure records not read: " + src.why}
	}
	if len(ids) == 0 {
		return map[string]batch.Failure{}, failureStatus{Read: true}
	}
	got, err := src.log.Failures(ctx, ids)
	if err != nil {
		return map[string]batch.Failure{}, failureStatus{Detail: fmt.Sprintf("failure records not read: %v", err)}
	}
	for id, f := range got {
		f.Message = printable.String(f.Message)
		got[id] = f
	}
	return got, failureStatus{Read: true}
}

// recordIDs are the message ids whose failure records tell why m failed:
// its own, and the original id of its metadata when v verifies it (a
// forged original id is never read).
func recordIDs(m types.Message, v replay.Verifier) (own, original string) {
	own = aws.ToString(m.MessageId)
	if verified, _ := v.Check(m); verified {
		if meta, _, found, err := replay.Read(m.MessageAttributes); found && err == nil && meta.OriginalMessageID != own {
			original = meta.OriginalMessageID
		}
	}
	return own, original
}

// failuresOf reads the failure records of msgs in one pass (one
// BatchGetItem per 100 ids) and joins them per message: nil for a message
// without any.
func failuresOf(ctx context.Context, src failureSource, msgs []types.Message, v replay.Verifier) ([]*failureView, failureStatus) {
	owns := make([]string, len(msgs))
	originals := make([]string, len(msgs))
	replays := make([]int, len(msgs))
	var ids []string
	for i, m := range msgs {
		owns[i], originals[i] = recordIDs(m, v)
		if originals[i] != "" {
			meta, _, _, _ := replay.Read(m.MessageAttributes)
			replays[i] = meta.ReplayCount
		}
		ids = append(ids, owns[i])
		if originals[i] != "" {
			ids = append(ids, originals[i])
		}
	}
	got, st := src.read(ctx, ids)
	views := make([]*failureView, len(msgs))
	for i := range msgs {
		own, hasOwn := got[owns[i]]
		orig, hasOrig := got[originals[i]]
		hasOrig = hasOrig && originals[i] != ""
		views[i] = joinFailures(own, hasOwn, orig, hasOrig, replays[i])
		if views[i] != nil {
			st.Found++
		}
	}
	if st.Read && st.Found == 0 && len(msgs) > 0 {
		st.Detail = "no failure records for these messages: the lane's consumer writes none (" + settings.FailureRecords.Env + "=off, or a consumer older than failure records), or they expired"
	}
	return views, st
}

// joinFailures joins the record of a message's own id (its latest round)
// and that of its verified original id (its first round): the class,
// message, failures and last time of the latest, the first time of the
// first; nil when there is neither.
func joinFailures(own batch.Failure, hasOwn bool, orig batch.Failure, hasOrig bool, replays int) *failureView {
	latest := own
	switch {
	case !hasOwn && !hasOrig:
		return nil
	case !hasOwn:
		latest = orig
	}
	v := &failureView{Class: latest.Class, Message: latest.Message, Failures: latest.Failures, Replays: replays,
		FirstAt: latest.FirstAt, LastAt: latest.LastAt, Original: hasOrig}
	if hasOrig && (v.FirstAt.IsZero() || orig.FirstAt.Before(v.FirstAt)) {
		v.FirstAt = orig.FirstAt
	}
	return v
}

// classCount is the messages of one error class in a sample.
type classCount struct {
	Class    string `json:"class"`
	Messages int    `json:"messages"`
	// OldestFailedAt is the earliest first failure of the class's
	// messages; absent for "unknown" (no record).
	OldestFailedAt time.Time `json:"oldestFailedAt,omitzero"`
}

// byClass counts views by class, nil views as "unknown": the most
// messages first, then by class; "unknown" last.
func byClass(views []*failureView) []classCount {
	counts := map[string]*classCount{}
	for _, v := range views {
		class := classUnknown
		if v != nil {
			class = v.Class
		}
		c := counts[class]
		if c == nil {
			c = &classCount{Class: class}
			counts[class] = c
		}
		c.Messages++
		if v != nil && !v.FirstAt.IsZero() && (c.OldestFailedAt.IsZero() || v.FirstAt.Before(c.OldestFailedAt)) {
			c.OldestFailedAt = v.FirstAt
		}
	}
	out := make([]classCount, 0, len(counts))
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, *counts[k])
	}
	slices.SortStableFunc(out, func(x, y classCount) int {
		if (x.Class == classUnknown) != (y.Class == classUnknown) {
			if x.Class == classUnknown {
				return 1
			}
			return -1
		}
		return cmp.Compare(y.Messages, x.Messages)
	})
	return out
}

// classLine is the one-line summary of counts: "412 http-503 since
// 09:12, 3 panic since 2 Dec 14:05, 2 unknown". A time of today (in now's
// location) is shown as its clock time.
func classLine(counts []classCount, now time.Time) string {
	var b []byte
	for i, c := range counts {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "%d %s", c.Messages, printable.String(c.Class))
		if !c.OldestFailedAt.IsZero() {
			b = append(b, " since "...)
			b = append(b, since(c.OldestFailedAt, now)...)
		}
	}
	return string(b)
}

// since shows t for people: its clock time when it is of now's day, else
// its date and clock time (UTC).
func since(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04")
	}
	return t.Format("2 Jan 15:04")
}

// laneFailures reads the failure records of msgs of the queue of role,
// whose replay metadata v verifies: one view per message (nil without a
// record), or none on the invalid queue, whose messages did not fail.
// consumer names the consumer when set, else the lane's replay function.
func (a *app) laneFailures(ctx context.Context, s *session, role, consumer string, msgs []types.Message, v replay.Verifier) ([]*failureView, failureStatus) {
	if role == roleInvalid {
		return nil, failureStatus{Detail: "the invalid queue has no failure records: the consumer refused its messages, for the reason shown"}
	}
	lc, err := s.laneConfig(ctx, "", false, s.res.optional(outDLQ))
	if err != nil && consumer == "" {
		return failuresOf(ctx, failureSource{why: err.Error() + " (--consumer NAME names the consumer)"}, msgs, v)
	}
	return failuresOf(ctx, s.failureSource(lc, consumer), msgs, v)
}
