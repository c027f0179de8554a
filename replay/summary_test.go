package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/emfline/emflinetest"
	"github.com/homingdlq/homing/replay"
)

func TestMetricsAreOneEMFLinePerRoute(t *testing.T) {
	h := newHarness(t, false, nil)
	other := h.newRoute("payments", false, nil)
	h.orders("A", 3)
	h.deadLetter(h.route, msg{body: order("ORD-X"), meta: &replay.Metadata{ReplayCount: 3, OriginalMessageID: "x"}})
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{Routes: []replay.Route{h.route, other}, RunID: "run-emf"})

	lines := emflinetest.Parse(t, h.metrics.String())
	if len(lines) != 2 {
		t.Fatalf("%d metric lines, want one per route:\n%s", len(lines), h.metrics.String())
	}
	line, values := lines[0], lines[0].Members
	if line.AWS.Timestamp != s.FinishedAt.UnixMilli() || len(line.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("_aws = %+v", line.AWS)
	}
	d := line.AWS.CloudWatchMetrics[0]
	if d.Namespace != "Homing/Replay" || fmt.Sprint(d.Dimensions) != "[[Route]]" {
		t.Fatalf("directive = %+v", d)
	}
	var names []string
	for _, m := range d.Metrics {
		unit := "Count"
		if strings.Contains(m.Name, "Seconds") {
			unit = "Seconds"
		}
		if m.Unit != unit {
			t.Errorf("%s: unit %q, want %q", m.Name, m.Unit, unit)
		}
		if _, ok := values[m.Name].(float64); !ok {
			t.Errorf("metric %s has no numeric value in the line", m.Name)
		}
		names = append(names, m.Name)
	}
	if want := []string{"DeadLettered", "Delayed", "Errors", "GateClosed", "InRescueWindow", "OldestDeadLetterAgeSeconds", "Parked", "RecordsMissing", "Replayed", "RunCompleted", "SecondsToExpiry"}; !slices.Equal(sortedCopy(names), want) {
		t.Fatalf("metrics = %v, want %v", names, want)
	}
	// The oldest dead letter was sent `due` before the run, and the DLQ
	// keeps messages 4 days (the queue's default).
	age := s.FinishedAt.Sub(s.Routes[0].Expiry.OldestSentAt).Seconds()
	want := map[string]any{"Route": "orders", "Replayed": 3.0, "Parked": 1.0, "Delayed": 0.0, "GateClosed": 0.0, "DeadLettered": 3.0, "Errors": 0.0,
		"RunCompleted": 1.0, "InRescueWindow": 0.0, "RecordsMissing": 0.0, "OldestDeadLetterAgeSeconds": age, "SecondsToExpiry": (96 * time.Hour).Seconds() - age, "runId": "run-emf"}
	if age != due.Seconds() {
		t.Errorf("oldest dead letter %s old, want %s", time.Duration(age*float64(time.Second)), due)
	}
	for k, v := range want {
		if values[k] != v {
			t.Errorf("%s = %v, want %v", k, values[k], v)
		}
	}
	if r := lines[1].Members["Route"]; r != "payments" {
		t.Fatalf("second line's Route = %v, want payments", r)
	}
}

func TestWriteEMFOneWritePerLine(t *testing.T) {
	var w countingWriter
	s := replay.Summary{RunID: "r", FinishedAt: time.Unix(1, 0), Routes: []replay.RouteSummary{{Route: "a"}, {Route: "b"}}}
	if err := replay.WriteEMF(&w, replay.Namespace, "", s); err != nil {
		t.Fatal(err)
	}
	if w.writes != 2 || bytes.Count(w.buf.Bytes(), []byte("\n")) != 2 {
		t.Fatalf("%d writes:\n%s", w.writes, w.buf.String())
	}
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return w.buf.Write(p) }

// The summary is the function's response and the CLI's --json output: its
// field names are a contract.
func TestSummaryJSONFieldNames(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("J", 1)
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{Filter: replay.Filter{OlderThan: time.Minute}})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]json.RawMessage) []string { return slices.Sorted(maps.Keys(m)) }
	if got, want := keys(top), []string{"dryRun", "durationMs", "filter", "finishedAt", "gates", "max", "rate", "routes", "runId", "startedAt", "total"}; !slices.Equal(got, want) {
		t.Fatalf("summary keys = %v\nwant %v", got, want)
	}
	var routes []map[string]json.RawMessage
	if err := json.Unmarshal(top["routes"], &routes); err != nil {
		t.Fatal(err)
	}
	counts := []string{"applied", "blocked", "deadLettered", "deferred", "delayed", "errors", "examined", "parked", "recovered", "replayed", "skipped"}
	if got, want := keys(routes[0]), slices.Sorted(slices.Values(append(slices.Clone(counts), "breakerSignal", "depth", "expiry", "fifo", "gates", "inFlight", "replayedKeys", "route", "stopReason"))); !slices.Equal(got, want) {
		t.Fatalf("route keys = %v\nwant %v", got, want)
	}
	var total map[string]json.RawMessage
	if err := json.Unmarshal(top["total"], &total); err != nil {
		t.Fatal(err)
	}
	if got := keys(total); !slices.Equal(got, counts) {
		t.Fatalf("total keys = %v", got)
	}
	if string(top["filter"]) != `{"olderThan":"1m0s"}` {
		t.Fatalf("filter = %s", top["filter"])
	}
	var back replay.Summary
	if err := json.Unmarshal(b, &back); err != nil || back.Filter.OlderThan != time.Minute || back.Routes[0].Replayed != 1 {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestLogsUseTheFixedKeys(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("K", 2)
	h.clock.Advance(due)
	s := h.run(h.engine(), replay.Request{})
	runs := h.logLines("replay run")
	if len(runs) != 1 || runs[0]["runId"] != s.RunID || runs[0]["total"] == nil || runs[0]["routes"] == nil {
		t.Fatalf("summary lines = %v", runs)
	}
	msgs := h.logLines("replay message")
	if len(msgs) != 2 {
		t.Fatalf("%d message lines", len(msgs))
	}
	for _, m := range msgs {
		for _, k := range []string{"messageId", "key", "queue", "replayCount", "outcome", "runId"} {
			if m[k] == nil {
				t.Errorf("message line without %s: %v", k, m)
			}
		}
	}
}
