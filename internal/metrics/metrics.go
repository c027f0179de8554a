package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/settings"
)

// The dimension names. Alarms and dashboards name them: never rename one.
const (
	DimensionLane   = "Lane"
	DimensionReason = "Reason"
)

// The consumer's metric names, all of unit Count. Alarms and dashboards
// name them: never rename one, only add.
const (
	// RecordsProcessed: records the invocation received, whatever their
	// outcome.
	RecordsProcessed = "RecordsProcessed"
	// RecordsFailed: records reported back to SQS as batch item failures
	// (a transient failure, a panic, not started before the deadline, or
	// blocked behind a failed record of their FIFO group): SQS delivers
	// them again, and after maxReceiveCount receives moves them to the DLQ.
	RecordsFailed = "RecordsFailed"
	// RecordsInvalid: records sent to the invalid queue; with the Reason
	// dimension, by reason.
	RecordsInvalid = "RecordsInvalid"
	// DuplicatesAbsorbed: records whose key had completed before with the
	// same payload: acknowledged without running the effect again.
	DuplicatesAbsorbed = "DuplicatesAbsorbed"
	// CompletionsUnrecorded: effects that happened but whose completion
	// could not be recorded (idempotency.Outcome.Unrecorded): a redelivery
	// of one of them would run the effect again.
	CompletionsUnrecorded = "CompletionsUnrecorded"
	// InDoubtTakeovers: records that took over an expired claim or resolved
	// an ambiguous failure (idempotency.Outcome.InDoubt) and completed.
	InDoubtTakeovers = "InDoubtTakeovers"
)

// Config says where the metrics go. The zero value is not valid; see [Load].
type Config struct {
	Namespace string // the CloudWatch namespace
	Lane      string // the value of the Lane dimension: the lane's service name
}

// Load reads settings.MetricsNamespace and settings.ServiceName (default
// defaultLane), named as Powertools for AWS Lambda names them, through env.
// The caller validates the result with [Config.Validate].
func Load(env *settings.Reader, defaultLane string) Config {
	return Config{
		Namespace: env.String(settings.MetricsNamespace),
		Lane:      env.StringOr(settings.ServiceName, defaultLane),
	}
}

// Validate reports every value CloudWatch would reject: a namespace of 1..255
// ASCII letters, digits and . - _ / # : or spaces, not starting with "AWS/",
// and a lane of 1..1024 printable ASCII characters, neither blank.
func (c Config) Validate() error {
	var errs []error
	ns := c.Namespace
	switch {
	case strings.TrimSpace(ns) == "" || len(ns) > settings.MetricsNamespace.MaxBytes:
		errs = append(errs, fmt.Errorf("%s=%q: want 1..%d characters, not blank", settings.MetricsNamespace.Env, ns, settings.MetricsNamespace.MaxBytes))
	case strings.HasPrefix(ns, "AWS/"):
		errs = append(errs, fmt.Errorf("%s=%q: the AWS/ prefix is reserved for AWS services", settings.MetricsNamespace.Env, ns))
	case strings.IndexFunc(ns, func(r rune) bool { return !namespaceRune(r) }) >= 0:
		errs = append(errs, fmt.Errorf("%s=%q: want ASCII letters, digits, spaces and . - _ / # : only", settings.MetricsNamespace.Env, ns))
	}
	lane := c.Lane
	if strings.TrimSpace(lane) == "" || len(lane) > settings.ServiceName.MaxBytes ||
		strings.IndexFunc(lane, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		errs = append(errs, fmt.Errorf("%s=%q: want 1..%d printable ASCII characters, not blank (it is the Lane dimension)", settings.ServiceName.Env, lane, settings.ServiceName.MaxBytes))
	}
	return errors.Join(errs...)
}

func namespaceRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_/#: ", r)
}

// Counts are the record outcomes of one invocation.
type Counts struct {
	Processed  int
	Failed     int
	Invalid    map[string]int // by reason
	Duplicates int
	Unrecorded int
	InDoubt    int
}

// InvalidTotal is the number of invalid records, all reasons.
func (c Counts) InvalidTotal() int {
	n := 0
	for _, v := range c.Invalid {
		n += v
	}
	return n
}

// Tally counts the outcomes of one invocation. Its zero value is ready; it
// is safe for concurrent use (the batch processor runs records at once).
type Tally struct {
	mu sync.Mutex
	c  Counts
}

// Record counts one record's outcome in the batch processor; reason is the
// invalid reason of an Invalid record.
func (t *Tally) Record(o batch.Outcome, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.Processed++
	switch o {
	case batch.Succeeded:
	case batch.Invalid:
		if t.c.Invalid == nil {
			t.c.Invalid = map[string]int{}
		}
		t.c.Invalid[reason]++
	default: // every other outcome is a batch item failure
		t.c.Failed++
	}
}

// Idempotency counts what the idempotent receiver reported for a record it
// acknowledged.
func (t *Tally) Idempotency(out idempotency.Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if out.Duplicate {
		t.c.Duplicates++
	}
	if out.Unrecorded {
		t.c.Unrecorded++
	}
	if out.InDoubt {
		t.c.InDoubt++
	}
}

// Counts returns a copy of the counts so far.
func (t *Tally) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.c
	c.Invalid = maps.Clone(c.Invalid)
	return c
}

type tallyKey struct{}

// NewContext returns ctx carrying t, for [Record] and [Idempotency].
func NewContext(ctx context.Context, t *Tally) context.Context {
	return context.WithValue(ctx, tallyKey{}, t)
}

// Record counts a record's outcome in the [Tally] of ctx; without one it
// does nothing. Its signature is batch.Options.OnOutcome's.
func Record(ctx context.Context, o batch.Outcome, reason string) {
	if t, ok := ctx.Value(tallyKey{}).(*Tally); ok {
		t.Record(o, reason)
	}
}

// Idempotency counts a receiver outcome in the [Tally] of ctx; without one
// it does nothing.
func Idempotency(ctx context.Context, out idempotency.Outcome) {
	if t, ok := ctx.Value(tallyKey{}).(*Tally); ok {
		t.Idempotency(out)
	}
}

// ProcessFunc is the signature of batch.Processor.Process.
type ProcessFunc func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Consumer writes the consumer's metrics, one invocation at a time. It is
// safe for concurrent use when W is.
type Consumer struct {
	Config
	W   io.Writer        // the function's stdout
	Now func() time.Time // the lines' timestamp; default time.Now
}

// Wrap returns process with a fresh [Tally] in its context, and its counts
// written to W when it returns. A failed write does not fail the batch (its
// records are decided); it is returned to onError, which may be nil.
func (c *Consumer) Wrap(process ProcessFunc, onError func(error)) ProcessFunc {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		t := &Tally{}
		resp, err := process(NewContext(ctx, t), ev)
		if werr := c.Write(t.Counts()); werr != nil && onError != nil {
			onError(werr)
		}
		return resp, err
	}
}

// Write writes counts as EMF lines to W: one with the dimension Lane, and
// one per invalid reason (in order) with Lane and Reason. Each line is one
// Write call.
func (c *Consumer) Write(counts Counts) error {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	at := now().UnixMilli()
	lines := []emfLine{{
		meta: c.meta(at, []string{DimensionLane}, RecordsProcessed, RecordsFailed, RecordsInvalid,
			DuplicatesAbsorbed, CompletionsUnrecorded, InDoubtTakeovers),
		values: map[string]any{
			DimensionLane:         c.Lane,
			RecordsProcessed:      counts.Processed,
			RecordsFailed:         counts.Failed,
			RecordsInvalid:        counts.InvalidTotal(),
			DuplicatesAbsorbed:    counts.Duplicates,
			CompletionsUnrecorded: counts.Unrecorded,
			InDoubtTakeovers:      counts.InDoubt,
		},
	}}
	for _, reason := range slices.Sorted(maps.Keys(counts.Invalid)) {
		lines = append(lines, emfLine{
			meta: c.meta(at, []string{DimensionLane, DimensionReason}, RecordsInvalid),
			values: map[string]any{
				DimensionLane:   c.Lane,
				DimensionReason: reason,
				RecordsInvalid:  counts.Invalid[reason],
			},
		})
	}
	for _, l := range lines {
		if err := l.write(c.W); err != nil {
			return fmt.Errorf("write the metrics of lane %s: %w", c.Lane, err)
		}
	}
	return nil
}

func (c *Consumer) meta(at int64, dimensions []string, names ...string) meta {
	ms := make([]metric, len(names))
	for i, n := range names {
		ms[i] = metric{Name: n, Unit: "Count"}
	}
	return meta{Timestamp: at, CloudWatchMetrics: []directive{{Namespace: c.Namespace, Dimensions: [][]string{dimensions}, Metrics: ms}}}
}

// meta is the "_aws" member of an EMF line.
type meta struct {
	Timestamp         int64       `json:"Timestamp"` // epoch milliseconds
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// directive is one entry of meta.CloudWatchMetrics.
type directive struct {
	Namespace  string     `json:"Namespace"`
	Dimensions [][]string `json:"Dimensions"`
	Metrics    []metric   `json:"Metrics"`
}

// metric names one metric of a directive.
type metric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfLine struct {
	meta   meta
	values map[string]any
}

func (l emfLine) write(w io.Writer) error {
	m := maps.Clone(l.values)
	m["_aws"] = l.meta
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
