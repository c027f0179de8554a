package handler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/emfline/emflinetest"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// A scheduled run archives the parking and invalid queues first, while the
// health gate holds the replay, and counts what it archived per queue.
func TestArchiveRunsBeforeTheGates(t *testing.T) {
	f := newFixture(t, map[string]string{"ARCHIVE_BUCKET": "archive", "ARCHIVE_MODE": "on-arrival", "POWERTOOLS_SERVICE_NAME": "orders"})
	f.sealKey(t) // as the engine's first run writes it
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

// sealKey writes the ledger's seal key, as the engine's first run does.
func (f *fixture) sealKey(t *testing.T) []byte {
	t.Helper()
	key, err := replay.SealKey(context.Background(), f.ledger, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// objects returns the archive's objects (not the index).
func (f *fixture) objects(t *testing.T) []archive.Object {
	t.Helper()
	var out []archive.Object
	for _, k := range f.s3.Keys("archive") {
		if _, index := archive.ObjectOf(k); index {
			continue
		}
		o, err := archive.NewStore(f.s3, "archive").Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// The function archives a parked message's metadata only when its seal
// verifies for the parking queue: a producer's copy stays an attribute.
func TestArchiveKeepsOnlySealedMetadata(t *testing.T) {
	f := newFixture(t, map[string]string{"ARCHIVE_BUCKET": "archive", "ARCHIVE_MODE": "on-arrival"})
	key := f.sealKey(t)
	parking := f.routes[0].ParkingURL
	meta := replay.Metadata{ReplayCount: 3, OriginalMessageID: "orig-sealed", Reason: replay.ReasonReplayExhausted, ParkedAt: f.clock.Now()}
	for body, m := range map[string]replay.Metadata{
		`{"orderId":"ORD-SEALED"}`: meta.Sealed(key, `{"orderId":"ORD-SEALED"}`, parking),
		`{"orderId":"ORD-FORGED"}`: meta, // unsealed
	} {
		attrs, err := replay.Attributes(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(parking), MessageBody: aws.String(body), MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.invoke(t, sample(t, "replay-scheduled.json")); err != nil {
		t.Fatal(err)
	}
	got := map[string]archive.Object{}
	for _, o := range f.objects(t) {
		got[o.Body] = o
	}
	if o := got[`{"orderId":"ORD-SEALED"}`]; o.Replay == nil || o.Reason != replay.ReasonReplayExhausted || o.OriginalMessageID() != "orig-sealed" {
		t.Fatalf("sealed: replay %+v, reason %q", o.Replay, o.Reason)
	}
	if o := got[`{"orderId":"ORD-FORGED"}`]; o.Replay != nil || o.Reason != "" || o.OriginalMessageID() != o.MessageID || len(o.Attributes) != 1 {
		t.Fatalf("forged: replay %+v, reason %q, attributes %v", o.Replay, o.Reason, o.Attributes)
	}
}

// Without the public seal key, the parking queues wait for a run that can
// verify their metadata; the invalid queue is archived.
func TestArchiveWithoutTheSealKeyLeavesTheParkingQueues(t *testing.T) {
	f := newFixture(t, map[string]string{"ARCHIVE_BUCKET": "archive", "ARCHIVE_MODE": "on-arrival"})
	f.health = errors.New("down") // the engine's run writes the key; the archive runs before it
	for _, url := range []string{f.routes[0].ParkingURL, f.invalid} {
		if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(`{"orderId":"ORD-1"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.invoke(t, sample(t, "replay-scheduled.json")); err != nil {
		t.Fatal(err)
	}
	objs := f.objects(t)
	if len(objs) != 1 || objs[0].Queue != archive.Invalid || len(f.q.Messages(f.routes[0].ParkingURL)) != 1 {
		t.Fatalf("%d objects (%+v), %d parked: want the invalid one archived, the parked one left", len(objs), objs, len(f.q.Messages(f.routes[0].ParkingURL)))
	}
}
