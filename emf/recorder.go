package emf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
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
}

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
// point for every invocation), and one line per invalid reason, in order,
// with the dimensions Lane and Reason and the metric RecordsInvalid (EMF
// gives a dimension one value per line). A line CloudWatch would reject
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
