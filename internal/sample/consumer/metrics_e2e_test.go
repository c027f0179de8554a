//go:build e2e

package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

// emfLine is the part of an Embedded Metric Format line these tests read.
type emfLine struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
	Lane             string `json:"Lane"`
	RecordsProcessed *int   `json:"RecordsProcessed"`
}

// invocationEMF publishes one valid order, waits until it is invoiced, and
// returns the consumer's EMF line of the invocation that processed it, read
// from the consumer's log group (the ConsumerLogGroupName output). The
// invocation is the START..END RequestId span of the function's log stream
// that holds the order's record line.
func invocationEMF(t *testing.T) emfLine {
	t.Helper()
	s := deployed(t)
	id := fmt.Sprintf("ORD-%s-EMF", s.run)
	s.send(t, strings.Replace(eventBodies(t, "order-valid.json")[0], "ORD-2026-000123", id, 1))
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		n := s.invoicesOfRun(t)[id]
		return n == 1, fmt.Sprintf("%d invoices for %s", n, id)
	})

	out := emulatortest.Outputs(t)
	group := emulatortest.LaneOutput(t, out, emulatortest.SampleLane, settings.OutputConsumerLogGroupName)
	logs := cloudwatchlogs.NewFromConfig(emulatortest.Config(t))
	var found emfLine
	emulatortest.Eventually(t, 30*time.Second, func() (bool, string) {
		lines, err := invocationLines(t.Context(), logs, group, id)
		if err != nil {
			return false, err.Error()
		}
		for _, l := range lines {
			var e emfLine
			if json.Unmarshal([]byte(l), &e) == nil && len(e.AWS.CloudWatchMetrics) > 0 && e.RecordsProcessed != nil {
				found = e
				return true, ""
			}
		}
		return false, fmt.Sprintf("no EMF line with %s among the %d lines of %s's invocation in %s: %q", settings.MetricRecordsProcessed, len(lines), id, group, lines)
	})
	return found
}

// invocationLines returns the lines of the invocation whose record line
// names orderID, from START to END, or an error saying what is missing.
func invocationLines(ctx context.Context, logs *cloudwatchlogs.Client, group, orderID string) ([]string, error) {
	byStream := map[string][]types.FilteredLogEvent{}
	p := cloudwatchlogs.NewFilterLogEventsPaginator(logs, &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName: aws.String(group), StartTime: aws.Int64(time.Now().Add(-15 * time.Minute).UnixMilli()),
	})
	stream := ""
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("filter log events of %s: %w", group, err)
		}
		for _, e := range page.Events {
			name := aws.ToString(e.LogStreamName)
			byStream[name] = append(byStream[name], e)
			if strings.Contains(aws.ToString(e.Message), orderID) {
				stream = name
			}
		}
	}
	if stream == "" {
		return nil, fmt.Errorf("no line of %s names %s (%d streams)", group, orderID, len(byStream))
	}
	events := byStream[stream]
	slices.SortStableFunc(events, func(a, b types.FilteredLogEvent) int { return int(aws.ToInt64(a.Timestamp) - aws.ToInt64(b.Timestamp)) })
	at := slices.IndexFunc(events, func(e types.FilteredLogEvent) bool { return strings.Contains(aws.ToString(e.Message), orderID) })
	start := at
	for start >= 0 && !strings.HasPrefix(aws.ToString(events[start].Message), "START RequestId: ") {
		start--
	}
	if start < 0 {
		return nil, fmt.Errorf("no START line before %s's record line in %s", orderID, stream)
	}
	request := strings.Fields(strings.TrimPrefix(aws.ToString(events[start].Message), "START RequestId: "))[0]
	var lines []string
	for _, e := range events[start+1:] {
		m := strings.TrimRight(aws.ToString(e.Message), "\n")
		if strings.HasPrefix(m, "END RequestId: "+request) {
			return lines, nil
		}
		lines = append(lines, m)
	}
	return nil, fmt.Errorf("invocation %s of %s has not ended in %s yet", request, orderID, stream)
}

// The consumer's metrics reach the emulator's log stream as EMF: one line
// per invocation in the function's log group, in the lane's namespace with
// the Lane dimension, counting the order it processed.
func TestDeployedConsumerMetricsInEMF(t *testing.T) {
	e := invocationEMF(t)
	d := e.AWS.CloudWatchMetrics[0]
	if d.Namespace == "" || strings.HasPrefix(d.Namespace, "AWS/") {
		t.Errorf("namespace %q", d.Namespace)
	}
	if !slices.ContainsFunc(d.Dimensions, func(set []string) bool { return slices.Equal(set, []string{settings.DimensionLane}) }) {
		t.Errorf("dimension sets %v, want [%s]", d.Dimensions, settings.DimensionLane)
	}
	if !slices.ContainsFunc(d.Metrics, func(m struct {
		Name string `json:"Name"`
		Unit string `json:"Unit"`
	}) bool {
		return m.Name == settings.MetricRecordsProcessed && m.Unit == "Count"
	}) {
		t.Errorf("metrics %v, want %s in Count", d.Metrics, settings.MetricRecordsProcessed)
	}
	if e.Lane == "" || *e.RecordsProcessed < 1 || e.AWS.Timestamp <= 0 {
		t.Errorf("lane %q, %s %d, timestamp %d", e.Lane, settings.MetricRecordsProcessed, *e.RecordsProcessed, e.AWS.Timestamp)
	}
}

// Emulator gap: on AWS, CloudWatch Logs extracts the metrics of EMF lines
// into CloudWatch metrics, which the ConsumerFailures alarm reads; the
// emulator keeps the lines in the log group (checked above) but creates no
// metric from them, so no alarm on the local profile ever sees the
// consumer's metrics. When ListMetrics finds the consumer's metric this
// test fails: then check the alarm on the emulator and delete this test.
func TestEmulatorGapEMFNotExtracted(t *testing.T) {
	e := invocationEMF(t)
	ns := e.AWS.CloudWatchMetrics[0].Namespace
	cw := cloudwatch.NewFromConfig(emulatortest.Config(t))
	time.Sleep(5 * time.Second) // extraction on AWS is asynchronous; give the emulator a moment too
	out, err := cw.ListMetrics(t.Context(), &cloudwatch.ListMetricsInput{Namespace: aws.String(ns), MetricName: aws.String(settings.MetricRecordsProcessed)})
	if err != nil {
		t.Fatalf("list metrics: %v", err)
	}
	if len(out.Metrics) > 0 {
		t.Fatalf("the emulator now extracts EMF into metrics (%d of %s/%s): the gap is closed; check the ConsumerFailures alarm locally and remove this test",
			len(out.Metrics), ns, settings.MetricRecordsProcessed)
	}
	t.Logf("emulator gap still present: the EMF line is in the log group, but no metric %s/%s exists", ns, settings.MetricRecordsProcessed)
}
