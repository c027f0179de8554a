package emfline_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/emfline"
	"github.com/homingdlq/homing/internal/emfline/emflinetest"
)

var at = emflinetest.At

func TestWriteGoldenLine(t *testing.T) {
	var out bytes.Buffer
	err := emfline.NewWriter(&out).Write(emfline.Line{
		Namespace:  "Acme/Shipping",
		Timestamp:  at,
		Dimensions: []emfline.Dimension{{Name: "Lane", Value: "shipments"}, {Name: "Route", Value: "carrier"}},
		Metrics:    []emfline.Metric{{Name: "Replayed", Unit: emfline.Count, Value: 3}, {Name: "SecondsToExpiry", Unit: emfline.Seconds, Value: 12.5}, {Name: "Raw", Value: -1}},
		Properties: map[string]any{"runId": "r-1", "attempt": 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	const golden = `{"_aws":{"Timestamp":1795946400000,"CloudWatchMetrics":[{"Namespace":"Acme/Shipping","Dimensions":[["Lane","Route"]],` +
		`"Metrics":[{"Name":"Replayed","Unit":"Count"},{"Name":"SecondsToExpiry","Unit":"Seconds"},{"Name":"Raw","Unit":"None"}]}]},` +
		`"Lane":"shipments","Route":"carrier","attempt":2,"runId":"r-1","Replayed":3,"SecondsToExpiry":12.5,"Raw":-1}` + "\n"
	if out.String() != golden {
		t.Fatalf("line\n%s\nwant\n%s", out.String(), golden)
	}
	l := emflinetest.Parse(t, out.String())[0]
	d := l.AWS.CloudWatchMetrics[0]
	if l.AWS.Timestamp != at.UnixMilli() || d.Namespace != "Acme/Shipping" || !slices.Equal(d.Dimensions[0], []string{"Lane", "Route"}) {
		t.Fatalf("_aws = %+v", l.AWS)
	}
	want := map[string]any{"Lane": "shipments", "Route": "carrier", "runId": "r-1", "attempt": 2.0, "Replayed": 3.0, "SecondsToExpiry": 12.5, "Raw": -1.0}
	if len(l.Members) != len(want)+1 {
		t.Errorf("members %v, want _aws and %v", l.Members, want)
	}
	for k, v := range want {
		if l.Members[k] != v {
			t.Errorf("%s = %v, want %v", k, l.Members[k], v)
		}
	}
}

// A zero Timestamp is the writer's clock, in epoch milliseconds.
func TestWriteStampsNow(t *testing.T) {
	var out bytes.Buffer
	before := time.Now().UnixMilli()
	if err := emfline.NewWriter(&out).Write(emfline.Line{Namespace: "N", Metrics: []emfline.Metric{{Name: "M", Unit: emfline.Count, Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	got := emflinetest.Parse(t, out.String())[0].AWS.Timestamp
	if after := time.Now().UnixMilli(); got < before || got > after {
		t.Fatalf("Timestamp %d, want within [%d, %d]", got, before, after)
	}
}

// More metrics than one line holds are split over lines of at most
// MaxMetrics, each with every dimension and property; none is dropped.
func TestWriteSplitsMetrics(t *testing.T) {
	tests := []struct {
		metrics int
		lines   []int // metrics per line
	}{
		{1, []int{1}},
		{emfline.MaxMetrics, []int{emfline.MaxMetrics}},
		{emfline.MaxMetrics + 1, []int{emfline.MaxMetrics, 1}},
		{2*emfline.MaxMetrics + 50, []int{emfline.MaxMetrics, emfline.MaxMetrics, 50}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.metrics), func(t *testing.T) {
			var out countingWriter
			l := emfline.Line{Namespace: "N", Timestamp: at, Dimensions: []emfline.Dimension{{Name: "Lane", Value: "l"}}, Properties: map[string]any{"runId": "r"}}
			for i := range tt.metrics {
				l.Metrics = append(l.Metrics, emfline.Metric{Name: fmt.Sprintf("M%03d", i), Unit: emfline.Count, Value: float64(i)})
			}
			if err := emfline.NewWriter(&out).Write(l); err != nil {
				t.Fatal(err)
			}
			lines := emflinetest.Parse(t, out.buf.String())
			if out.writes != len(tt.lines) || len(lines) != len(tt.lines) {
				t.Fatalf("%d writes, %d lines, want %d", out.writes, len(lines), len(tt.lines))
			}
			seen := map[string]float64{}
			for i, p := range lines {
				d := p.AWS.CloudWatchMetrics[0]
				if len(d.Metrics) != tt.lines[i] || p.Members["Lane"] != "l" || p.Members["runId"] != "r" || p.AWS.Timestamp != at.UnixMilli() {
					t.Errorf("line %d: %d metrics, members %v", i, len(d.Metrics), p.Members["Lane"])
				}
				for _, m := range d.Metrics {
					seen[m.Name] = p.Members[m.Name].(float64)
				}
			}
			for i := range tt.metrics {
				if v, ok := seen[fmt.Sprintf("M%03d", i)]; !ok || v != float64(i) {
					t.Errorf("metric M%03d = %v, %v", i, v, ok)
				}
			}
		})
	}
}

func TestWriteRejectsWhatCloudWatchRejects(t *testing.T) {
	ok := func() emfline.Line {
		return emfline.Line{Namespace: "Homing", Timestamp: at, Dimensions: []emfline.Dimension{{Name: "Lane", Value: "orders"}},
			Metrics: []emfline.Metric{{Name: "RecordsFailed", Unit: emfline.Count, Value: 1}}}
	}
	many := func(n int) []emfline.Dimension {
		var ds []emfline.Dimension
		for i := range n {
			ds = append(ds, emfline.Dimension{Name: fmt.Sprintf("D%d", i), Value: "v"})
		}
		return ds
	}
	tests := []struct {
		name   string
		change func(*emfline.Line)
		want   string // in the error; "" for a line that is written
	}{
		{"valid", func(*emfline.Line) {}, ""},
		{"30 dimensions", func(l *emfline.Line) { l.Dimensions = many(emfline.MaxDimensions) }, ""},
		{"no dimensions", func(l *emfline.Line) { l.Dimensions = nil }, ""},
		{"names of 255 bytes", func(l *emfline.Line) {
			l.Dimensions[0].Name = strings.Repeat("d", emfline.MaxNameBytes)
			l.Metrics[0].Name = strings.Repeat("m", emfline.MaxNameBytes)
		}, ""},
		{"31 dimensions", func(l *emfline.Line) { l.Dimensions = many(emfline.MaxDimensions + 1) }, "31 dimensions"},
		{"no metrics", func(l *emfline.Line) { l.Metrics = nil }, "no metrics"},
		{"blank namespace", func(l *emfline.Line) { l.Namespace = " " }, "namespace"},
		{"reserved namespace", func(l *emfline.Line) { l.Namespace = "AWS/Lambda" }, "AWS/ prefix"},
		{"namespace characters", func(l *emfline.Line) { l.Namespace = "Homing*" }, "namespace"},
		{"namespace of 256 bytes", func(l *emfline.Line) { l.Namespace = strings.Repeat("n", 256) }, "1..255"},
		{"metric name of 256 bytes", func(l *emfline.Line) { l.Metrics[0].Name = strings.Repeat("m", 256) }, "metric name"},
		{"dimension name with a colon first", func(l *emfline.Line) { l.Dimensions[0].Name = ":Lane" }, "dimension name"},
		{"blank dimension value", func(l *emfline.Line) { l.Dimensions[0].Value = "" }, "dimension Lane"},
		{"dimension value of 1025 bytes", func(l *emfline.Line) { l.Dimensions[0].Value = strings.Repeat("v", 1025) }, "dimension Lane"},
		{"non-ASCII dimension value", func(l *emfline.Line) { l.Dimensions[0].Value = "órdenes" }, "dimension Lane"},
		{"unknown unit", func(l *emfline.Line) { l.Metrics[0].Unit = "Apples" }, "unit"},
		{"NaN", func(l *emfline.Line) { l.Metrics[0].Value = math.NaN() }, "outside"},
		{"infinite", func(l *emfline.Line) { l.Metrics[0].Value = math.Inf(1) }, "outside"},
		{"above 2^360", func(l *emfline.Line) { l.Metrics[0].Value = math.Ldexp(1, 361) }, "outside"},
		{"below 2^-360", func(l *emfline.Line) { l.Metrics[0].Value = -math.Ldexp(1, -361) }, "outside"},
		{"zero", func(l *emfline.Line) { l.Metrics[0].Value = 0 }, ""},
		{"a metric twice", func(l *emfline.Line) { l.Metrics = append(l.Metrics, l.Metrics[0]) }, "also a metric"},
		{"a metric named as a dimension", func(l *emfline.Line) { l.Metrics[0].Name = "Lane" }, "also a dimension"},
		{"a property named as a metric", func(l *emfline.Line) { l.Properties = map[string]any{"RecordsFailed": 1} }, "also a metric"},
		{"a property named _aws", func(l *emfline.Line) { l.Properties = map[string]any{"_aws": 1} }, "also the metadata"},
		{"a property JSON cannot hold", func(l *emfline.Line) { l.Properties = map[string]any{"f": func() {}} }, "property f"},
		{"a line over the size bound", func(l *emfline.Line) { l.Properties = map[string]any{"big": strings.Repeat("x", emfline.MaxLineBytes)} }, "bytes, at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ok()
			tt.change(&l)
			var out bytes.Buffer
			err := emfline.NewWriter(&out).Write(l)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				emflinetest.Parse(t, out.String())
				return
			}
			if !errors.Is(err, emfline.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want ErrInvalid mentioning %q", err, tt.want)
			}
			if out.Len() != 0 {
				t.Fatalf("an invalid line was written: %s", out.String())
			}
		})
	}
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return w.buf.Write(p) }

// exclusive fails a test when two Write calls overlap; it is not safe for
// concurrent use, as an *os.File's lines need not be.
type exclusive struct {
	busy  sync.Mutex // TryLock only: never waits
	t     *testing.T
	lines []string
}

func (w *exclusive) Write(p []byte) (int, error) {
	if !w.busy.TryLock() {
		w.t.Error("two Write calls at once")
		return len(p), nil
	}
	defer w.busy.Unlock()
	time.Sleep(10 * time.Microsecond) // widen the window
	w.lines = append(w.lines, string(p))
	return len(p), nil
}

// Lines written from many goroutines arrive whole, one Write call each,
// and the lines of one split Line together.
func TestWriterIsSafeForConcurrentUse(t *testing.T) {
	out := &exclusive{t: t}
	w := emfline.NewWriter(out)
	const goroutines, each = 8, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				l := emfline.Line{Namespace: "N", Timestamp: at, Dimensions: []emfline.Dimension{{Name: "G", Value: fmt.Sprint(g)}}}
				for m := range emfline.MaxMetrics + 1 { // two lines
					l.Metrics = append(l.Metrics, emfline.Metric{Name: fmt.Sprintf("M%d", m), Unit: emfline.Count, Value: float64(i)})
				}
				if err := w.Write(l); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(out.lines) != goroutines*each*2 {
		t.Fatalf("%d lines, want %d", len(out.lines), goroutines*each*2)
	}
	for i := 0; i < len(out.lines); i += 2 { // a Line's two lines are adjacent
		a, b := emflinetest.Parse(t, out.lines[i])[0], emflinetest.Parse(t, out.lines[i+1])[0]
		if a.Members["G"] != b.Members["G"] || a.Members["M0"] != b.Members[fmt.Sprintf("M%d", emfline.MaxMetrics)] {
			t.Fatalf("lines %d and %d are of different Lines:\n%s%s", i, i+1, out.lines[i], out.lines[i+1])
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriteReturnsTheWritersError(t *testing.T) {
	err := emfline.NewWriter(failingWriter{}).Write(emfline.Line{Namespace: "N", Metrics: []emfline.Metric{{Name: "M", Value: 1}}})
	if err == nil || errors.Is(err, emfline.ErrInvalid) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("error %v, want the writer's", err)
	}
}
