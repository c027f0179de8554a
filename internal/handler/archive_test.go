package handler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/emfline/emflinetest"
	"github.com/homingdlq/homing/internal/settings"
)

// A scheduled run archives the parking and invalid queues first, while the
// health gate holds the replay, and counts what it archived per queue.
func TestArchiveRunsBeforeTheGates(t *testing.T) {
	f := newFixture(t, map[string]string{"ARCHIVE_BUCKET": "archive", "ARCHIVE_MODE": "on-arrival", "POWERTOOLS_SERVICE_NAME": "orders"})
	f.health = errors.New("tax service down")
	for _, url := range []string{f.routes[0].ParkingURL, f.routes[1].ParkingURL, f.invalid} {
		if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(`{"orderId":"ORD-1"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	f.deadLetter(t, f.routes[0], 2)
	f.clock.Advance(2 * time.Hour)
	s, err := f.invoke(t, sample(t, "replay-scheduled.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Total.Replayed != 0 {
		t.Fatalf("the health gate did not hold the replay: %+v", s.Total)
	}
	for _, url := range []string{f.routes[0].ParkingURL, f.routes[1].ParkingURL, f.invalid} {
		if n := len(f.q.Messages(url)); n != 0 {
			t.Fatalf("%d left in %s", n, url)
		}
	}
	if n := len(f.q.Messages(f.routes[0].DLQURL)); n != 2 {
		t.Fatalf("%d in the DLQ, want the 2 dead letters untouched", n)
	}
	var objects int
	for _, k := range f.s3.Keys("archive") {
		if !strings.HasPrefix(k, "orders/") && !strings.HasPrefix(k, "payments/") {
			t.Fatalf("key %s is not under its route's name", k)
		}
		if !strings.Contains(k, "/key/") {
			objects++
		}
	}
	if objects != 3 {
		t.Fatalf("%d objects, want 3: %q", objects, f.s3.Keys("archive"))
	}
	var lines int
	for _, l := range emflinetest.Parse(t, f.metrics.String()) {
		if v, ok := l.Members[settings.MetricArchived].(float64); ok {
			lines++
			if l.Members[settings.DimensionLane] != "orders" || v != 3 || l.Members[settings.MetricArchiveFailed] != 0.0 {
				t.Fatalf("archive line %+v, want Archived 3, ArchiveFailed 0, Lane orders", l.Members)
			}
		}
	}
	if lines != 1 {
		t.Fatalf("%d archive lines, want 1:\n%s", lines, f.metrics.String())
	}
}

// A dry run archives nothing.
func TestDryRunArchivesNothing(t *testing.T) {
	f := newFixture(t, map[string]string{"ARCHIVE_BUCKET": "archive", "ARCHIVE_MODE": "on-arrival"})
	if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.invalid), MessageBody: aws.String(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.invoke(t, []byte(`{"dryRun":true}`)); err != nil {
		t.Fatal(err)
	}
	if keys := f.s3.Keys("archive"); len(keys) != 0 || len(f.q.Messages(f.invalid)) != 1 {
		t.Fatalf("a dry run archived %q", keys)
	}
}
