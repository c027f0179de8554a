package emfline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The bounds of one line. They come from CloudWatch's "Specification:
// Embedded metric format"
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
// a MetricDirective's Metrics "MUST NOT contain more than 100
// MetricDefinition objects", a DimensionSet "MUST NOT contain more than 30
// dimension keys" (9 before CloudWatch raised it; the spec sets no bound on
// the number of dimension sets, and a Line has one), and a document is
// bound by the size of a CloudWatch Logs event. Names and values follow
// CloudWatch's own API: a dimension name of 1..255 ASCII characters, a
// value of 1..1024 (API_Dimension), a metric name of 1..255 and a
// namespace of 1..255 (API_MetricDatum, API_PutMetricData), a value within
// ±2^360, zero or at least 2^-360 in magnitude, and not NaN or infinite.
const (
	MaxMetrics             = 100 // metrics per line; more are split over several lines
	MaxDimensions          = 30  // dimensions per line (its one dimension set)
	MaxNameBytes           = 255 // a metric's or a dimension's name
	MaxDimensionValueBytes = 1024
	MaxNamespaceBytes      = 255
	// MaxLineBytes bounds one encoded line. CloudWatch Logs now takes
	// events up to 1 MB; 256 KiB is the older bound, which every
	// emulator and the spec's translations still state.
	MaxLineBytes = 256 << 10
)

// ErrInvalid is wrapped by every error about a line that CloudWatch would
// reject; the message says which part and why.
var ErrInvalid = errors.New("emf: invalid line")

// Unit is a metric's unit, one of CloudWatch's standard units.
type Unit string

// The units this toolkit writes; any other standard unit ("Bytes/Second",
// "Kilobytes", ...) is accepted too.
const (
	Count        Unit = "Count"
	Seconds      Unit = "Seconds"
	Milliseconds Unit = "Milliseconds"
	Bytes        Unit = "Bytes"
	Percent      Unit = "Percent"
	None         Unit = "None"
)

// standardUnits are CloudWatch's StandardUnit values.
var standardUnits = []Unit{
	"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
	"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count",
	"Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
	"Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None",
}

// Dimension is one dimension of a line: a name and its value.
type Dimension struct {
	Name  string
	Value string
}

// Metric is one metric of a line. An empty Unit is written as None.
type Metric struct {
	Name  string
	Unit  Unit
	Value float64
}

// Line is one EMF document: its metrics, in Namespace, each with every one
// of Dimensions (one dimension set, in order), at Timestamp (the writer's
// clock when zero). Properties are further members of the line, not
// metrics (a run id): CloudWatch keeps them in the log event only. A
// property may not bear the name of a dimension, of a metric, or "_aws".
type Line struct {
	Namespace  string
	Timestamp  time.Time
	Dimensions []Dimension
	Metrics    []Metric
	Properties map[string]any
}

// encode returns l as one or more EMF lines, each ending in a newline: one
// per MaxMetrics metrics, every one with l's dimensions, properties and
// timestamp. It checks every bound first and writes nothing of a line that
// breaks one.
func encode(l Line) ([][]byte, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	members, err := l.members()
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for chunk := range slices.Chunk(l.Metrics, MaxMetrics) {
		b, err := l.encodeChunk(chunk, members)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// check reports the first bound l breaks, wrapping ErrInvalid.
func (l Line) check() error {
	if err := CheckNamespace(l.Namespace); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(l.Metrics) == 0 {
		return fmt.Errorf("%w: no metrics", ErrInvalid)
	}
	if len(l.Dimensions) > MaxDimensions {
		return fmt.Errorf("%w: %d dimensions, at most %d", ErrInvalid, len(l.Dimensions), MaxDimensions)
	}
	seen := map[string]string{"_aws": "the metadata"}
	claim := func(name, what string) error {
		if other, ok := seen[name]; ok {
			return fmt.Errorf("%w: %s %q is also %s", ErrInvalid, what, name, other)
		}
		seen[name] = what
		return nil
	}
	for _, d := range l.Dimensions {
		if err := checkName(d.Name); err != nil {
			return fmt.Errorf("%w: dimension name: %w", ErrInvalid, err)
		}
		if err := CheckDimensionValue(d.Value); err != nil {
			return fmt.Errorf("%w: dimension %s: %w", ErrInvalid, d.Name, err)
		}
		if err := claim(d.Name, "a dimension"); err != nil {
			return err
		}
	}
	for _, m := range l.Metrics {
		if err := checkName(m.Name); err != nil {
			return fmt.Errorf("%w: metric name: %w", ErrInvalid, err)
		}
		if m.Unit != "" && !slices.Contains(standardUnits, m.Unit) {
			return fmt.Errorf("%w: metric %s: unit %q is not one of CloudWatch's", ErrInvalid, m.Name, m.Unit)
		}
		if v := math.Abs(m.Value); math.IsNaN(m.Value) || v > math.Ldexp(1, 360) || v != 0 && v < math.Ldexp(1, -360) {
			return fmt.Errorf("%w: metric %s: value %v is outside what CloudWatch accepts", ErrInvalid, m.Name, m.Value)
		}
		if err := claim(m.Name, "a metric"); err != nil {
			return err
		}
	}
	for k := range l.Properties {
		if err := claim(k, "a property"); err != nil {
			return err
		}
	}
	return nil
}

// members encodes the dimensions' and the properties' members, in order
// (the properties sorted by name), each as `"name":value`.
func (l Line) members() ([]byte, error) {
	var b bytes.Buffer
	for _, d := range l.Dimensions {
		member(&b, d.Name, d.Value)
	}
	keys := make([]string, 0, len(l.Properties))
	for k := range l.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, err := json.Marshal(l.Properties[k])
		if err != nil {
			return nil, fmt.Errorf("%w: property %s: %w", ErrInvalid, k, err)
		}
		name, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(name)
		b.WriteByte(':')
		b.Write(v)
	}
	return b.Bytes(), nil
}

// encodeChunk writes one line of the metrics chunk, with members.
func (l Line) encodeChunk(chunk []Metric, members []byte) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":`, l.Timestamp.UnixMilli())
	writeString(&b, l.Namespace)
	b.WriteString(`,"Dimensions":[[`)
	for i, d := range l.Dimensions {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, d.Name)
	}
	b.WriteString(`]],"Metrics":[`)
	for i, m := range chunk {
		if i > 0 {
			b.WriteByte(',')
		}
		unit := m.Unit
		if unit == "" {
			unit = None
		}
		b.WriteString(`{"Name":`)
		writeString(&b, m.Name)
		b.WriteString(`,"Unit":`)
		writeString(&b, string(unit))
		b.WriteByte('}')
	}
	b.WriteString(`]}]}`)
	b.Write(members)
	for _, m := range chunk {
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%w: metric %s: %w", ErrInvalid, m.Name, err)
		}
		b.WriteByte(',')
		writeString(&b, m.Name)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteString("}\n")
	if b.Len() > MaxLineBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalid, b.Len(), MaxLineBytes)
	}
	return b.Bytes(), nil
}

// member writes `,"name":"value"`.
func member(b *bytes.Buffer, name, value string) {
	b.WriteByte(',')
	writeString(b, name)
	b.WriteByte(':')
	writeString(b, value)
}

// writeString writes s as a JSON string. The names and values it gets are
// checked first, so that encoding a string cannot fail.
func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

// CheckNamespace reports whether CloudWatch accepts ns as a custom
// namespace: 1..255 ASCII letters, digits, spaces and . - _ / # :, not
// blank, and not starting with "AWS/" (reserved for AWS's services).
func CheckNamespace(ns string) error {
	switch {
	case strings.TrimSpace(ns) == "" || len(ns) > MaxNamespaceBytes:
		return fmt.Errorf("namespace %q: want 1..%d characters, not blank", ns, MaxNamespaceBytes)
	case strings.HasPrefix(ns, "AWS/"):
		return fmt.Errorf("namespace %q: the AWS/ prefix is reserved for AWS services", ns)
	case strings.IndexFunc(ns, func(r rune) bool { return !namespaceRune(r) }) >= 0:
		return fmt.Errorf("namespace %q: want ASCII letters, digits, spaces and . - _ / # : only", ns)
	}
	return nil
}

func namespaceRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_/#: ", r)
}

// CheckDimensionValue reports whether CloudWatch accepts v as a dimension's
// value: 1..1024 printable ASCII characters, not blank.
func CheckDimensionValue(v string) error {
	if strings.TrimSpace(v) == "" || len(v) > MaxDimensionValueBytes || !printable(v) {
		return fmt.Errorf("%q: want 1..%d printable ASCII characters, not blank", v, MaxDimensionValueBytes)
	}
	return nil
}

// checkName reports whether CloudWatch accepts name as a metric's or a
// dimension's name: 1..255 printable ASCII characters, not blank, not
// starting with a colon.
func checkName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > MaxNameBytes || !printable(name) || strings.HasPrefix(name, ":") {
		return fmt.Errorf("%q: want 1..%d printable ASCII characters, not blank, not starting with ':'", name, MaxNameBytes)
	}
	return nil
}

func printable(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) < 0
}
