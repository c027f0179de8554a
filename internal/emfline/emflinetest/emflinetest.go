// Package emflinetest reads EMF lines back for tests, checking each
// against CloudWatch's specification.
package emflinetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/emfline"
)

// At is the tests' timestamp.
var At = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// Document is an EMF line as CloudWatch reads it.
type Document struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// Parsed is one line read back: its metadata and all its members.
type Parsed struct {
	Document
	Members map[string]any
}

// Parse reads out's lines back and checks each against the specification:
// one directive, one dimension set, every dimension a string member of the
// line, every metric a number member, no more than the bounds.
func Parse(t testing.TB, out string) []Parsed {
	t.Helper()
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("output does not end in a newline: %q", out)
	}
	var lines []Parsed
	for _, raw := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var p Parsed
		if err := json.Unmarshal([]byte(raw), &p.Document); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, raw)
		}
		if err := json.Unmarshal([]byte(raw), &p.Members); err != nil {
			t.Fatal(err)
		}
		if len(p.AWS.CloudWatchMetrics) != 1 || len(p.AWS.CloudWatchMetrics[0].Dimensions) != 1 {
			t.Fatalf("want one directive with one dimension set: %s", raw)
		}
		d := p.AWS.CloudWatchMetrics[0]
		if len(d.Metrics) == 0 || len(d.Metrics) > emfline.MaxMetrics || len(d.Dimensions[0]) > emfline.MaxDimensions {
			t.Fatalf("%d metrics, %d dimensions: %s", len(d.Metrics), len(d.Dimensions[0]), raw)
		}
		for _, dim := range d.Dimensions[0] {
			if _, ok := p.Members[dim].(string); !ok {
				t.Errorf("dimension %s has no string member: %s", dim, raw)
			}
		}
		for _, m := range d.Metrics {
			if _, ok := p.Members[m.Name].(float64); !ok {
				t.Errorf("metric %s has no numeric member: %s", m.Name, raw)
			}
		}
		lines = append(lines, p)
	}
	return lines
}
