package batch

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/internal/clip"
	"github.com/homingdlq/homing/internal/settings"
)

// Failure is the record of why a message failed (docs/CONTRACT.md#failure-records).
type Failure struct {
	MessageID string    // the failed message's own SQS message id
	Class     string    // 1..64 bytes of [a-z0-9-]
	Message   string    // the error's text, printable, at most 515 bytes
	Failures  int       // the message's failed deliveries: SQS's receive count
	FirstAt   time.Time // its first receive
	LastAt    time.Time // this failure
}

// FailureLog stores failure records, one per message id. RecordFailures
// must be safe for concurrent use and honour ctx's deadline.
type FailureLog interface {
	RecordFailures(ctx context.Context, fs []Failure) error
}

// Bounds of a failure record.
const (
	maxClassBytes   = settings.MaxFailureClassBytes
	maxMessageBytes = 512
)

// The classes of the failures that are not a handler's error.
const (
	classPanic    = "panic"
	classDeadline = "deadline" // not started: the deadline margin
	classBlocked  = "blocked"  // FIFO: behind a failed record of its group
	classTimeout  = "timeout"
	classCanceled = "canceled"
	classUnknown  = settings.FailureClassUnknown
)

// failureSet collects the failures of one Process call.
type failureSet struct {
	mu   sync.Mutex
	byID map[string]Failure
}

type failureSetKey struct{}

// note records msg's failure for outcome o and err, unless o acknowledged it.
func (p *Processor) note(ctx context.Context, msg events.SQSMessage, o Outcome, err error) {
	set, ok := ctx.Value(failureSetKey{}).(*failureSet)
	if !ok || o.acknowledged() {
		return
	}
	f := Failure{MessageID: msg.MessageId, Class: outcomeClass(o, err), LastAt: p.opts.Now().UTC()}
	switch {
	case err != nil:
		f.Message = clipMessage(err.Error())
	case o == NotStarted:
		f.Message = "invocation deadline too close"
	case o == Blocked:
		f.Message = "earlier record of the message group failed"
	}
	f.Failures = max(receives(msg), 1)
	f.FirstAt = f.LastAt
	if ms, perr := strconv.ParseInt(msg.Attributes["ApproximateFirstReceiveTimestamp"], 10, 64); perr == nil {
		f.FirstAt = time.UnixMilli(ms).UTC()
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	set.byID[msg.MessageId] = f
}

// classOf returns the class noted for msg in ctx ("" when none).
func classOf(ctx context.Context, msg events.SQSMessage) string {
	set, ok := ctx.Value(failureSetKey{}).(*failureSet)
	if !ok {
		return ""
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	return set.byID[msg.MessageId].Class
}

// writeAt is the delivery of msg at which its failure is written: the last
// one that runs before the redrive (or, on a lane that keeps group order,
// the park); 0 when unknown, and then every failed delivery writes.
func (p *Processor) writeAt(msg events.SQSMessage) int {
	at := p.opts.MaxReceiveCount
	if p.opts.Groups != nil && settings.IsFIFO(msg.EventSourceARN) {
		g := groupRun{p: p, k: p.opts.Groups}
		if last := g.maxReceives() - 1; at == 0 || last < at {
			at = last
		}
	}
	return at
}

// writeFailures hands the batch's failures that are due to the log, within
// the invocation's deadline less half the deadline margin. A failure of the
// log is logged: it never changes a record's outcome.
func (p *Processor) writeFailures(ctx context.Context, records []events.SQSMessage, set *failureSet) {
	if p.opts.Failures == nil || len(set.byID) == 0 {
		return
	}
	due := make([]Failure, 0, len(set.byID))
	for _, r := range records {
		f, ok := set.byID[r.MessageId]
		if ok && f.Class == classBlocked && p.opts.Groups != nil {
			continue // held behind its group's head, whose record says why; never dead-lettered alone
		}
		if ok && f.Failures >= p.writeAt(r) {
			due = append(due, f)
			delete(set.byID, r.MessageId) // a message id twice in a batch: one write
		}
	}
	if len(due) == 0 {
		return
	}
	wctx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, deadline.Add(-p.opts.DeadlineMargin/2))
		defer cancel()
	}
	if err := p.opts.Failures.RecordFailures(wctx, due); err != nil {
		p.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "failure records not written",
			slog.Int("records", len(due)), slog.String("error", err.Error()))
	}
}

// classer is an error that names its own failure class.
type classer interface{ FailureClass() string }

// statusCoder is an HTTP response error, as the AWS SDK's are.
type statusCoder interface{ HTTPStatusCode() int }

// coder is an API error with a code, as the AWS SDK's are.
type coder interface{ ErrorCode() string }

// outcomeClass is the failure class of outcome o with err.
func outcomeClass(o Outcome, err error) string {
	switch o {
	case Panicked:
		return classPanic
	case NotStarted:
		return classDeadline
	case Blocked:
		return classBlocked
	}
	return errorClass(err)
}

// errorClass returns err's failure class: its own FailureClass(), else
// "timeout" for a deadline, "canceled", "throttled" for an API error code
// of throttling, "http-<status>" for an HTTP status, its API error code,
// else the Go type of the outermost error that is not fmt.Errorf's; always 1..64 bytes of [a-z0-9-].
func errorClass(err error) string {
	var c classer
	var s statusCoder
	var code coder
	switch {
	case err == nil:
		return "none"
	case errors.As(err, &c):
		if class := sanitize(c.FailureClass()); class != classUnknown {
			return class
		}
		return "x-" + classUnknown // "unknown" is a message without a record, to dlq and the replay
	case errors.Is(err, context.DeadlineExceeded):
		return classTimeout
	case errors.Is(err, context.Canceled):
		return classCanceled
	case errors.As(err, &code) && strings.Contains(strings.ToLower(code.ErrorCode()), "throttl"):
		return "throttled"
	case errors.As(err, &s) && s.HTTPStatusCode() > 0:
		return "http-" + strconv.Itoa(s.HTTPStatusCode())
	case errors.As(err, &code):
		return sanitize(code.ErrorCode())
	}
	for strings.HasPrefix(reflect.TypeOf(err).String(), "*fmt.") && errors.Unwrap(err) != nil {
		err = errors.Unwrap(err) // fmt.Errorf's wrapping says nothing of the failure
	}
	return sanitize(reflect.TypeOf(err).String())
}

// sanitize maps s to 1..64 bytes of [a-z0-9-]: letters lowered, runs of
// anything else one "-", none at either end; "other" when nothing is left.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		if b.Len() >= maxClassBytes {
			break
		}
		switch {
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		default:
			dash = b.Len() > 0
			continue
		}
		if dash && b.Len() < maxClassBytes-1 {
			b.WriteByte('-')
		}
		dash = false
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "other"
	}
	return b.String()
}

// clipMessage bounds an error's text: at most 512 bytes of valid UTF-8, cut
// on a rune boundary. It is stored as the error said it: a reader escapes
// it for display (escaped here too, it would be escaped twice).
func clipMessage(s string) string { return clip.String(s, maxMessageBytes) }
