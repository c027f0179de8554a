package emf_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homingdlq/homing/emf"
)

// document is an EMF line as CloudWatch reads it.
type document struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// parsed is one line read back: its metadata and all its members.
type parsed struct {
	document
	members map[string]any
}

// parse reads out's lines back and checks each against the specification:
// one directive, one dimension set, every dimension a string member of the
// line, every metric a number member, no more than the bounds.
func parse(t *testing.T, out string) []parsed {
	t.Helper()
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("output does not end in a newline: %q", out)
	}
	var lines []parsed
	for _, raw := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var p parsed
		if err := json.Unmarshal([]byte(raw), &p.document); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, raw)
		}
		if err := json.Unmarshal([]byte(raw), &p.members); err != nil {
			t.Fatal(err)
		}
		if len(p.AWS.CloudWatchMetrics) != 1 || len(p.AWS.CloudWatchMetrics[0].Dimensions) != 1 {
			t.Fatalf("want one directive with one dimension set: %s", raw)
		}
		d := p.AWS.CloudWatchMetrics[0]
		if len(d.Metrics) == 0 || len(d.Metrics) > emf.MaxMetrics || len(d.Dimensions[0]) > emf.MaxDimensions {
			t.Fatalf("%d metrics, %d dimensions: %s", len(d.Metrics), len(d.Dimensions[0]), raw)
		}
		for _, dim := range d.Dimensions[0] {
			if _, ok := p.members[dim].(string); !ok {
				t.Errorf("dimension %s has no string member: %s", dim, raw)
			}
		}
		for _, m := range d.Metrics {
			if _, ok := p.members[m.Name].(float64); !ok {
				t.Errorf("metric %s has no numeric member: %s", m.Name, raw)
			}
		}
		lines = append(lines, p)
	}
	return lines
}

var at = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestWriteGoldenLine(t *testing.T) {
	var out bytes.Buffer
	err := emf.NewWriter(&out).Write(emf.Line{
		Namespace:  "Acme/Shipping",
		Timestamp:  at,
		Dimensions: []emf.Dimension{{Name: "Lane", Value: "shipments"}, {Name: "Route", Value: "carrier"}},
		Metrics:    []emf.Metric{{Name: "Replayed", Unit: emf.Count, Value: 3}, {Name: "SecondsToExpiry", Unit: emf.Seconds, Value: 12.5}, {Name: "Raw", Value: -1}},
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
	l := parse(t, out.String())[0]
	d := l.AWS.CloudWatchMetrics[0]
	if l.AWS.Timestamp != at.UnixMilli() || d.Namespace != "Acme/Shipping" || !slices.Equal(d.Dimensions[0], []string{"Lane", "Route"}) {
		t.Fatalf("_aws = %+v", l.AWS)
	}
	want := map[string]any{"Lane": "shipments", "Route": "carrier", "runId": "r-1", "attempt": 2.0, "Replayed": 3.0, "SecondsToExpiry": 12.5, "Raw": -1.0}
	if len(l.members) != len(want)+1 {
		t.Errorf("members %v, want _aws and %v", l.members, want)
	}
	for k, v := range want {
		if l.members[k] != v {
			t.Errorf("%s = %v, want %v", k, l.members[k], v)
		}
	}
}

// A zero Timestamp is the writer's clock, in epoch milliseconds.
func TestWriteStampsNow(t *testing.T) {
	var out bytes.Buffer
	before := time.Now().UnixMilli()
	if err := emf.NewWriter(&out).Write(emf.Line{Namespace: "N", Metrics: []emf.Metric{{Name: "M", Unit: emf.Count, Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	got := parse(t, out.String())[0].AWS.Timestamp
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
		{emf.MaxMetrics, []int{emf.MaxMetrics}},
		{emf.MaxMetrics + 1, []int{emf.MaxMetrics, 1}},
		{2*emf.MaxMetrics + 50, []int{emf.MaxMetrics, emf.MaxMetrics, 50}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.metrics), func(t *testing.T) {
			var out countingWriter
			l := emf.Line{Namespace: "N", Timestamp: at, Dimensions: []emf.Dimension{{Name: "Lane", Value: "l"}}, Properties: map[string]any{"runId": "r"}}
			for i := range tt.metrics {
				l.Metrics = append(l.Metrics, emf.Metric{Name: fmt.Sprintf("M%03d", i), Unit: emf.Count, Value: float64(i)})
			}
			if err := emf.NewWriter(&out).Write(l); err != nil {
				t.Fatal(err)
			}
			lines := parse(t, out.buf.String())
			if out.writes != len(tt.lines) || len(lines) != len(tt.lines) {
				t.Fatalf("%d writes, %d lines, want %d", out.writes, len(lines), len(tt.lines))
			}
			seen := map[string]float64{}
			for i, p := range lines {
				d := p.AWS.CloudWatchMetrics[0]
				if len(d.Metrics) != tt.lines[i] || p.members["Lane"] != "l" || p.members["runId"] != "r" || p.AWS.Timestamp != at.UnixMilli() {
					t.Errorf("line %d: %d metrics, members %v", i, len(d.Metrics), p.members["Lane"])
				}
				for _, m := range d.Metrics {
					seen[m.Name] = p.members[m.Name].(float64)
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
	ok := func() emf.Line {
		return emf.Line{Namespace: "Homing", Timestamp: at, Dimensions: []emf.Dimension{{Name: "Lane", Value: "orders"}},
			Metrics: []emf.Metric{{Name: "RecordsFailed", Unit: emf.Count, Value: 1}}}
	}
	many := func(n int) []emf.Dimension {
		var ds []emf.Dimension
		for i := range n {
			ds = append(ds, emf.Dimension{Name: fmt.Sprintf("D%d", i), Value: "v"})
		}
		return ds
	}
	tests := []struct {
		name   string
		change func(*emf.Line)
		want   string // in the error; "" for a line that is written
	}{
		{"valid", func(*emf.Line) {}, ""},
		{"30 dimensions", func(l *emf.Line) { l.Dimensions = many(emf.MaxDimensions) }, ""},
		{"no dimensions", func(l *emf.Line) { l.Dimensions = nil }, ""},
		{"names of 255 bytes", func(l *emf.Line) {
			l.Dimensions[0].Name = strings.Repeat("d", emf.MaxNameBytes)
			l.Metrics[0].Name = strings.Repeat("m", emf.MaxNameBytes)
		}, ""},
		{"31 dimensions", func(l *emf.Line) { l.Dimensions = many(emf.MaxDimensions + 1) }, "31 dimensions"},
		{"no metrics", func(l *emf.Line) { l.Metrics = nil }, "no metrics"},
		{"blank namespace", func(l *emf.Line) { l.Namespace = " " }, "namespace"},
		{"reserved namespace", func(l *emf.Line) { l.Namespace = "AWS/Lambda" }, "AWS/ prefix"},
		{"namespace characters", func(l *emf.Line) { l.Namespace = "Homing*" }, "namespace"},
		{"namespace of 256 bytes", func(l *emf.Line) { l.Namespace = strings.Repeat("n", 256) }, "1..255"},
		{"metric name of 256 bytes", func(l *emf.Line) { l.Metrics[0].Name = strings.Repeat("m", 256) }, "metric name"},
		{"dimension name with a colon first", func(l *emf.Line) { l.Dimensions[0].Name = ":Lane" }, "dimension name"},
		{"blank dimension value", func(l *emf.Line) { l.Dimensions[0].Value = "" }, "dimension Lane"},
		{"dimension value of 1025 bytes", func(l *emf.Line) { l.Dimensions[0].Value = strings.Repeat("v", 1025) }, "dimension Lane"},
		{"non-ASCII dimension value", func(l *emf.Line) { l.Dimensions[0].Value = "órdenes" }, "dimension Lane"},
		{"unknown unit", func(l *emf.Line) { l.Metrics[0].Unit = "Apples" }, "unit"},
		{"NaN", func(l *emf.Line) { l.Metrics[0].Value = math.NaN() }, "outside"},
		{"infinite", func(l *emf.Line) { l.Metrics[0].Value = math.Inf(1) }, "outside"},
		{"above 2^360", func(l *emf.Line) { l.Metrics[0].Value = math.Ldexp(1, 361) }, "outside"},
		{"below 2^-360", func(l *emf.Line) { l.Metrics[0].Value = -math.Ldexp(1, -361) }, "outside"},
		{"zero", func(l *emf.Line) { l.Metrics[0].Value = 0 }, ""},
		{"a metric twice", func(l *emf.Line) { l.Metrics = append(l.Metrics, l.Metrics[0]) }, "also a metric"},
		{"a metric named as a dimension", func(l *emf.Line) { l.Metrics[0].Name = "Lane" }, "also a dimension"},
		{"a property named as a metric", func(l *emf.Line) { l.Properties = map[string]any{"RecordsFailed": 1} }, "also a metric"},
		{"a property named _aws", func(l *emf.Line) { l.Properties = map[string]any{"_aws": 1} }, "also the metadata"},
		{"a property JSON cannot hold", func(l *emf.Line) { l.Properties = map[string]any{"f": func() {}} }, "property f"},
		{"a line over the size bound", func(l *emf.Line) { l.Properties = map[string]any{"big": strings.Repeat("x", emf.MaxLineBytes)} }, "bytes, at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ok()
			tt.change(&l)
			var out bytes.Buffer
			err := emf.NewWriter(&out).Write(l)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				parse(t, out.String())
				return
			}
			if !errors.Is(err, emf.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
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
	w := emf.NewWriter(out)
	const goroutines, each = 8, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				l := emf.Line{Namespace: "N", Timestamp: at, Dimensions: []emf.Dimension{{Name: "G", Value: fmt.Sprint(g)}}}
				for m := range emf.MaxMetrics + 1 { // two lines
					l.Metrics = append(l.Metrics, emf.Metric{Name: fmt.Sprintf("M%d", m), Unit: emf.Count, Value: float64(i)})
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
		a, b := parse(t, out.lines[i])[0], parse(t, out.lines[i+1])[0]
		if a.members["G"] != b.members["G"] || a.members["M0"] != b.members[fmt.Sprintf("M%d", emf.MaxMetrics)] {
			t.Fatalf("lines %d and %d are of different Lines:\n%s%s", i, i+1, out.lines[i], out.lines[i+1])
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriteReturnsTheWritersError(t *testing.T) {
	err := emf.NewWriter(failingWriter{}).Write(emf.Line{Namespace: "N", Metrics: []emf.Metric{{Name: "M", Value: 1}}})
	if err == nil || errors.Is(err, emf.ErrInvalid) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("error %v, want the writer's", err)
	}
}
