package emfline_test

import (
	"fmt"
	"os"
	"time"

	"github.com/homingdlq/homing/internal/emfline"
)

// One Line with its own dimensions, metrics and properties: what the
// replay writes per route and run.
func ExampleWriter() {
	w := emfline.NewWriter(os.Stdout)
	err := w.Write(emfline.Line{
		Namespace:  "Homing",
		Timestamp:  time.UnixMilli(1796205600000),
		Dimensions: []emfline.Dimension{{Name: "Lane", Value: "shipments"}, {Name: "Route", Value: "carrier"}},
		Metrics:    []emfline.Metric{{Name: "Replayed", Unit: emfline.Count, Value: 12}, {Name: "SecondsToExpiry", Unit: emfline.Seconds, Value: 86400}},
		Properties: map[string]any{"runId": "2026-11-29T10:00:00Z"},
	})
	fmt.Println(err)
	// Output:
	// {"_aws":{"Timestamp":1796205600000,"CloudWatchMetrics":[{"Namespace":"Homing","Dimensions":[["Lane","Route"]],"Metrics":[{"Name":"Replayed","Unit":"Count"},{"Name":"SecondsToExpiry","Unit":"Seconds"}]}]},"Lane":"shipments","Route":"carrier","runId":"2026-11-29T10:00:00Z","Replayed":12,"SecondsToExpiry":86400}
	// <nil>
}
