package metrics_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/metrics"
)

// The CDK construct (its own Go module) names our metrics in its alarms and
// dashboard: its constants must spell them as this package writes them.
func TestInfraNamesTheMetricsAlike(t *testing.T) {
	src, err := os.ReadFile("../../infra/deadletter/alarms.go")
	if err != nil {
		t.Fatal(err)
	}
	for infra, value := range map[string]string{
		"MetricRecordsProcessed":      metrics.RecordsProcessed,
		"MetricRecordsFailed":         metrics.RecordsFailed,
		"MetricRecordsInvalid":        metrics.RecordsInvalid,
		"MetricDuplicatesAbsorbed":    metrics.DuplicatesAbsorbed,
		"MetricCompletionsUnrecorded": metrics.CompletionsUnrecorded,
		"MetricInDoubtTakeovers":      metrics.InDoubtTakeovers,
		"DimensionLane":               metrics.DimensionLane,
		"DimensionReason":             metrics.DimensionReason,
		"DefaultMetricsNamespace":     metrics.DefaultNamespace,
		"EnvServiceName":              metrics.EnvService,
		"EnvMetricsNamespace":         metrics.EnvNamespace,
	} {
		if !regexp.MustCompile(`\b` + infra + `\s*=\s*"` + regexp.QuoteMeta(value) + `"`).Match(src) {
			t.Errorf("infra/deadletter/alarms.go does not declare %s = %q", infra, value)
		}
	}
}

// The README's tables of the consumer's and the replay's variables name
// both variables, with the namespace's default.
func TestReadmeDocumentsTheVariables(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| `" + metrics.EnvService + "` | `CONSUMER_NAME`'s value |",
		"| `" + metrics.EnvNamespace + "` | `" + metrics.DefaultNamespace + "` |",
	} {
		if n := strings.Count(string(src), row); n != 2 {
			t.Errorf("README.md has %d rows %q, want one in each function's table", n, row)
		}
	}
}
