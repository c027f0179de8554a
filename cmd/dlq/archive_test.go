package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// archiveLane parks n orders and declares one invalid, then archives both
// queues as the scheduled replay does (on arrival, so at once), the parked
// metadata sealed and verified with the ledger's key.
func (f *fixture) archiveLane(n int) {
	f.t.Helper()
	ctx := context.Background()
	key, err := replay.SealKey(ctx, f.ledger, f.clock.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range n {
		body := fmt.Sprintf(`{"orderId":"K-%d"}`, i)
		meta := replay.Metadata{ReplayCount: 3, OriginalMessageID: fmt.Sprintf("orig-%d", i), Reason: "replay-exhausted", ParkedAt: f.clock.Now()}
		attrs, err := replay.Attributes(map[string]types.MessageAttributeValue{
			"source": {DataType: aws.String("String"), StringValue: aws.String("checkout")},
		}, meta.Sealed(key, body, f.parking))
		if err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.parking), MessageBody: aws.String(body), MessageAttributes: attrs}); err != nil {
			f.t.Fatal(err)
		}
		f.clock.Advance(time.Millisecond) // a standard queue's keys are in the order of their send times
	}
	attrs, err := invalid.Stamp(nil, invalid.Metadata{Reason: "missing-tax-id", MessageID: "orig-x", Consumer: "invoice", At: f.clock.Now()})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.invalid), MessageBody: aws.String(`{"orderId":"K-X"}`), MessageAttributes: attrs}); err != nil {
		f.t.Fatal(err)
	}
	a, err := archive.New(f.q, archive.NewStore(f.s3, "orders-archive"), "orders", "orderId", archive.Options{OnArrival: true, Now: f.clock.Now})
	if err != nil {
		f.t.Fatal(err)
	}
	parking, err := archive.Parked(ctx, f.ledger, f.parking)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := a.Run(ctx, []archive.Queue{parking, {URL: f.invalid, Role: archive.Invalid}}); err != nil {
		f.t.Fatal(err)
	}
	if len(f.q.Messages(f.parking))+len(f.q.Messages(f.invalid)) != 0 {
		f.t.Fatal("the archive left messages in the queues")
	}
}

func listed(t *testing.T, r result) []archived {
	t.Helper()
	var out []archived
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	return out
}

func TestArchiveList(t *testing.T) {
	f := newFixture(t)
	f.archiveLane(3)
	day := f.clock.Now().UTC().Format("2006-01-02")
	for _, tc := range []struct {
		name string
		args []string
		keys []string
	}{
		{"all, parking first", nil, []string{"K-0", "K-1", "K-2", "K-X"}},
		{"by queue", []string{"--queue", "invalid"}, []string{"K-X"}},
		{"by key", []string{"--key", "K-1"}, []string{"K-1"}},
		{"by reason", []string{"--reason", "missing-tax-id"}, []string{"K-X"}},
		{"by day", []string{"--day", day, "--queue", "parking", "-n", "2"}, []string{"K-0", "K-1"}},
		{"another day", []string{"--day", "2001-01-01"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.run(append([]string{"archive", "ls", "-o", "json"}, tc.args...)...)
			r.want(t, exitOK)
			var keys []string
			for _, e := range listed(t, r) {
				keys = append(keys, e.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tc.keys, ",") {
				t.Fatalf("listed %q, want %q", keys, tc.keys)
			}
		})
	}
	r := f.run("archive", "ls", "--queue", "parking")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "replay-exhausted") || !strings.Contains(r.stdout, "orders/parking/") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	f.run("archive", "ls", "--queue", "dlq").want(t, exitUsage, `--queue "dlq": want parking or invalid`)
	f.run("archive", "ls", "--day", "03/12/2026").want(t, exitUsage, "--day")
}

func TestArchiveShow(t *testing.T) {
	f := newFixture(t)
	f.archiveLane(1)
	e := listed(t, f.run("archive", "ls", "--key", "K-0", "-o", "json"))
	if len(e) != 1 {
		t.Fatalf("%+v", e)
	}
	r := f.run("archive", "show", e[0].Object)
	r.want(t, exitOK)
	for _, want := range []string{"replay-exhausted", "orig-0", `{"orderId":"K-0"}`, "attribute source", "checkout"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = f.run("archive", "show", e[0].Object, "-o", "json")
	var o archive.Object
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || o.Body != `{"orderId":"K-0"}` || o.Replay == nil {
		t.Fatalf("%v %+v", err, o)
	}
	f.run("archive", "show", "orders/parking/2001/01/01/none.json").want(t, exitRefused, "no archived message")
}

// Restore sends the parked objects back to the parking queue, as they
// were, in sequence, at the rate, after a confirmation; a dry run sends
// nothing; an invalid message is never restored.
func TestArchiveRestore(t *testing.T) {
	f := newFixture(t)
	f.archiveLane(3)

	f.run("archive", "restore", "--queue", "invalid").want(t, exitUsage, "an invalid message goes back to the source (--to source --reset-count)")
	r := f.run("archive", "restore", "--dry-run", "-o", "json")
	r.want(t, exitOK)
	var rep restoreReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.DryRun || len(rep.Restored) != 3 || len(f.q.Messages(f.parking)) != 0 {
		t.Fatalf("dry run: %v %+v, %d in the parking queue", err, rep, len(f.q.Messages(f.parking)))
	}

	f.run("archive", "restore").want(t, exitRefused, "pass --yes")
	if n := len(f.q.Messages(f.parking)); n != 0 {
		t.Fatalf("%d sent without confirmation", n)
	}

	f.run("archive", "restore", "--rate", "0").want(t, exitUsage, "--rate 0")
	sleeps := f.sleeps
	r = f.run("archive", "restore", "--yes", "--rate", "2", "-o", "json")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.DryRun || len(rep.Restored) != 3 {
		t.Fatalf("restore: %v %+v", err, rep)
	}
	if f.sleeps-sleeps != 2 {
		t.Fatalf("%d waits between 3 sends, want 2", f.sleeps-sleeps)
	}
	parked := f.q.Messages(f.parking)
	if len(parked) != 3 || len(f.q.Messages(f.invalid)) != 0 {
		t.Fatalf("%d back in parking, %d in invalid", len(parked), len(f.q.Messages(f.invalid)))
	}
	for i, m := range parked {
		meta, producer, found, err := replay.Read(m.MessageAttributes)
		if aws.ToString(m.Body) != fmt.Sprintf(`{"orderId":"K-%d"}`, i) || !found || err != nil || meta.Reason != "replay-exhausted" ||
			aws.ToString(producer["source"].StringValue) != "checkout" {
			t.Fatalf("restored %d: %s %+v %v %v", i, aws.ToString(m.Body), meta, found, err)
		}
	}
	// The archive keeps them.
	if n := len(listed(t, f.run("archive", "ls", "-o", "json"))); n != 4 {
		t.Fatalf("%d objects after the restore, want 4", n)
	}
}

// Restore --to source --reset-count takes archived messages home through
// the parking queue: the engine replays exactly those, with a reset count,
// and leaves the rest of the parking queue; restored again, an order is
// recovered, not sent twice. An invalid one goes home too.
func TestArchiveRestoreToSource(t *testing.T) {
	f := newFixture(t)
	f.archiveLane(3)
	f.send(f.parking, order("ORD-STAYS"), &replay.Metadata{ReplayCount: 3, OriginalMessageID: "m-stays", Reason: replay.ReasonReplayExhausted, FirstDeadLetteredAt: f.clock.Now()}, nil)
	f.clock.Advance(time.Hour)

	f.run("archive", "restore", "--to", "source", "--key", "K-1").want(t, exitUsage, "--to source needs --reset-count")
	f.run("archive", "restore", "--to", "home").want(t, exitUsage, `--to "home": want parking or source`)
	f.run("archive", "restore", "--reset-count").want(t, exitUsage, "--reset-count works only with --to source")

	dry := decode[restoreReport](t, f.run("--json", "archive", "restore", "--to", "source", "--reset-count", "--dry-run"))
	if !dry.DryRun || len(dry.Restored) != 4 || dry.Run != nil || f.visible(f.source) != 0 {
		t.Fatalf("dry run %+v, %d in the source", dry, f.visible(f.source))
	}

	for round := 1; round <= 2; round++ {
		r := f.run("--json", "archive", "restore", "--to", "source", "--reset-count", "--key", "K-1", "--yes")
		r.want(t, exitOK)
		rep := decode[restoreReport](t, r)
		if len(rep.Restored) != 1 || rep.Run == nil || rep.LeftParked != 0 || rep.Run.Filter == nil || len(rep.Run.Filter.MessageIDs) != 1 {
			t.Fatalf("round %d: %+v", round, rep)
		}
		if tot := rep.Run.Total; round == 1 && tot.Replayed != 1 || round == 2 && (tot.Replayed != 0 || tot.Recovered != 1) {
			t.Fatalf("round %d: %+v", round, tot)
		}
		msgs := f.q.Messages(f.source)
		if len(msgs) != 1 {
			t.Fatalf("round %d: %d messages in the source, want K-1 once", round, len(msgs))
		}
		meta, _, _, err := replay.Read(msgs[0].MessageAttributes)
		if err != nil || aws.ToString(msgs[0].Body) != `{"orderId":"K-1"}` || meta.ReplayCount != 1 || meta.ResetAt.IsZero() || meta.OriginalMessageID != "orig-1" {
			t.Fatalf("round %d: source %s %+v %v", round, aws.ToString(msgs[0].Body), meta, err)
		}
		if left := f.q.Messages(f.parking); len(left) != 1 || aws.ToString(left[0].Body) != order("ORD-STAYS") {
			t.Fatalf("round %d: the parking queue holds %d, want only ORD-STAYS", round, len(left))
		}
	}

	f.run("archive", "restore", "--to", "source", "--reset-count", "--max", "101").want(t, exitUsage, "--max 101 --to source: want at most 100")
	f.run("archive", "restore", "--queue", "bogus", "--to", "source").want(t, exitUsage, `--queue "bogus": want parking or invalid`)
	r := f.run("archive", "restore", "--queue", "invalid", "--to", "source", "--reset-count", "--yes")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "restored 1 message(s) to the source, through the parking queue") || !strings.Contains(r.stdout, "filter 1 message id") {
		t.Fatalf("restore says:\n%s", r.stdout)
	}
	var home []string
	for _, m := range f.q.Messages(f.source) {
		home = append(home, aws.ToString(m.Body))
	}
	if !slices.Equal(home, []string{`{"orderId":"K-1"}`, `{"orderId":"K-X"}`}) || f.visible(f.parking) != 1 {
		t.Fatalf("source %v, %d parked", home, f.visible(f.parking))
	}
}

// What a gate holds stays in the parking queue: restore says which, with
// the command that takes them on, and exits 4. A part of a split invalid
// body is skipped, and does not count against --max.
func TestArchiveRestoreLeftParked(t *testing.T) {
	f := newFixture(t)
	f.env["CANARY_LIMIT"] = "1"
	// A part of a body split in two, in the invalid queue before the rest.
	attrs, err := invalid.Stamp(nil, invalid.Metadata{Reason: "too-large", MessageID: "orig-big", Consumer: "invoice", At: f.clock.Now(), Part: 1, Parts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.invalid), MessageBody: aws.String(`{"orderId":"K-BIG"`), MessageAttributes: attrs}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Millisecond)
	f.archiveLane(3)
	r := f.run("--json", "archive", "restore", "--queue", "invalid", "--to", "source", "--reset-count", "--max", "1", "--yes")
	r.want(t, exitOK)
	rep := decode[restoreReport](t, r)
	if len(rep.Restored) != 1 || rep.Restored[0].Key != "K-X" || len(rep.Skipped) != 1 || rep.Skipped[0].Reason != "too-large" {
		t.Fatalf("restored %+v, skipped %+v: want K-X restored and the part skipped, uncounted", rep.Restored, rep.Skipped)
	}

	// K-X's replay has not completed: the canary lets one more through.
	r = f.run("--json", "archive", "restore", "--queue", "parking", "--to", "source", "--reset-count", "--yes")
	r.want(t, exitIncomplete, "2 restored message(s) stay in the parking queue")
	rep = decode[restoreReport](t, r)
	if len(rep.Restored) != 3 || rep.Run == nil || rep.Run.Total.Replayed != 1 || rep.LeftParked != 2 || len(rep.ParkingIDs) != 3 || f.visible(f.parking) != 2 {
		t.Fatalf("%+v, %d parked", rep, f.visible(f.parking))
	}
	var text strings.Builder
	if err := writeRestore(&text, rep); err != nil {
		t.Fatal(err)
	}
	if want := "dlq replay --from parking --reset-count --message-id " + strings.Join(rep.ParkingIDs, " --message-id "); !strings.Contains(text.String(), want) {
		t.Fatalf("no command for what stays:\n%s", text.String())
	}
}

// inspect reports the archive's count and newest object of each queue.
func TestInspectReportsTheArchive(t *testing.T) {
	f := newFixture(t)
	f.archiveLane(3)
	r := f.run("--json", "inspect")
	r.want(t, exitOK)
	var rep inspectReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if len(rep.Archive) != 2 || rep.Archive[0].Objects != 3 || rep.Archive[1].Objects != 1 || rep.ArchiveError != "" ||
		!strings.Contains(rep.Archive[0].Newest, "orders/parking/") || !strings.HasSuffix(rep.Archive[1].Newest, ".json") {
		t.Fatalf("archive %+v (%s), want 3 parked with the newest's key, 1 invalid", rep.Archive, rep.ArchiveError)
	}
	if text := f.run("inspect"); !strings.Contains(text.stdout, "Archived from parking: 3, newest orders/parking/") || !strings.Contains(text.stdout, "Archived from invalid: 1") {
		t.Fatalf("inspect says:\n%s", text.stdout)
	}
}
