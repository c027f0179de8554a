package metrics_test

import (
	"os"
	"regexp"
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
	} {
		if !regexp.MustCompile(`\b` + infra + `\s*=\s*"` + regexp.QuoteMeta(value) + `"`).Match(src) {
			t.Errorf("infra/deadletter/alarms.go does not declare %s = %q", infra, value)
		}
	}
}
