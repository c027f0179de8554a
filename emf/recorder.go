package emf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/homingdlq/homing/internal/emfline"
	"github.com/homingdlq/homing/internal/settings"
)

// Recorder writes a consumer's metrics, one set of lines per invocation
// (see [Wrap]). It is safe for concurrent use.
type Recorder struct {
	Config
	out *emfline.Writer
	// Now is the lines' clock; default time.Now.
	Now func() time.Time
	// OnError gets a failed write (see [Wrap]); may be nil.
	OnError func(error)

	mu      sync.Mutex
	classes map[string]bool // the failure classes given a line of their own
}

// Bounds of the failure classes' lines: an invocation writes its top
// topClasses, and a Recorder names at most maxClasses in its life (a
// Lambda environment's); every other class is counted as otherClass.
const (
	topClasses = 5
	maxClasses = 20
	otherClass = "other"
)

// NewRecorder returns a Recorder of cfg's lane that writes to w (the
// function's stdout).
func NewRecorder(w io.Writer, cfg Config) *Recorder {
	return &Recorder{Config: cfg, out: emfline.NewWriter(w)}
}

// Wrap returns process with a fresh tally in its context for each
// invocation, and the tally written by r when process returns, whatever it
// returned. A failed write does not change the invocation's answer (its
// records are decided): it goes to r.OnError. With package batch,
// Wrap(r, processor.Process) is the Lambda handler.
func Wrap[E, R any](r *Recorder, process func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, ev E) (R, error) {
		t := &tally{}
		resp, err := process(newContext(ctx, t), ev)
		if werr := r.write(t.Counts()); werr != nil && r.OnError != nil {
			r.OnError(werr)
		}
		return resp, err
	}
}

// write writes counts: one line with the dimension Lane and the metrics of
// settings.ConsumerMetrics (zeros included, so that the alarms see a data
// point for every invocation), one line per invalid reason, in order,
// with the dimensions Lane and Reason and the metric RecordsInvalid (EMF
// gives a dimension one value per line), and one per failure class of
// [Recorder.topClasses] with the dimension ErrorClass and RecordsFailed. A line CloudWatch would reject
// (a blank reason, say) is left out and reported; the others are written.
func (r *Recorder) write(counts totals) error {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	at := now()
	lane := emfline.Dimension{Name: settings.DimensionLane, Value: r.Lane}
	values := map[string]int{
		settings.MetricRecordsProcessed:      counts.Processed,
		settings.MetricRecordsFailed:         counts.Failed,
		settings.MetricRecordsInvalid:        counts.InvalidTotal(),
		settings.MetricDuplicatesAbsorbed:    counts.Duplicates,
		settings.MetricCompletionsUnrecorded: counts.Unrecorded,
		settings.MetricInDoubtTakeovers:      counts.InDoubt,
	}
	metrics := make([]emfline.Metric, 0, len(settings.ConsumerMetrics))
	for _, name := range settings.ConsumerMetrics {
		metrics = append(metrics, emfline.Metric{Name: name, Unit: emfline.Count, Value: float64(values[name])})
	}
	lines := []emfline.Line{{Namespace: r.Namespace, Timestamp: at, Dimensions: []emfline.Dimension{lane}, Metrics: metrics}}
	for _, reason := range slices.Sorted(maps.Keys(counts.Invalid)) {
		lines = append(lines, emfline.Line{
			Namespace:  r.Namespace,
			Timestamp:  at,
			Dimensions: []emfline.Dimension{lane, {Name: settings.DimensionReason, Value: reason}},
			Metrics:    []emfline.Metric{{Name: settings.MetricRecordsInvalid, Unit: emfline.Count, Value: float64(counts.Invalid[reason])}},
		})
	}
	for _, cl := range r.topClasses(counts.Classes) {
		lines = append(lines, emfline.Line{
			Namespace:  r.Namespace,
			Timestamp:  at,
			Dimensions: []emfline.Dimension{lane, {Name: settings.DimensionErrorClass, Value: cl.name}},
			Metrics:    []emfline.Metric{{Name: settings.MetricRecordsFailed, Unit: emfline.Count, Value: float64(cl.n)}},
		})
	}
	var errs []error
	for _, l := range lines { // a reason CloudWatch rejects costs its own line only
		if err := r.out.Write(l); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write the metrics of lane %s: %w", r.Lane, err)
	}
	return nil
}

type classCount struct {
	name string
	n    int
}

// topClasses folds classes into at most topClasses+1 counts, by count then
// name: those of the top that the Recorder names (it names a class the
// first time it is in a top, up to maxClasses), the rest as otherClass.
func (r *Recorder) topClasses(classes map[string]int) []classCount {
	if len(classes) == 0 {
		return nil
	}
	all := make([]classCount, 0, len(classes))
	for name, n := range classes {
		all = append(all, classCount{name, n})
	}
	slices.SortFunc(all, func(a, b classCount) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.name, b.name)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.classes == nil {
		r.classes = map[string]bool{}
	}
	out := make([]classCount, 0, topClasses+1)
	other := 0
	for i, c := range all {
		if c.name != otherClass && i < topClasses && (r.classes[c.name] || len(r.classes) < maxClasses) {
			r.classes[c.name] = true
			out = append(out, c)
			continue
		}
		other += c.n
	}
	if other > 0 {
		out = append(out, classCount{otherClass, other})
	}
	return out
}
