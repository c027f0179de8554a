//go:build e2e

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// A parked and an invalid order are archived to the lane's bucket (on the
// emulator's S3), listed, shown and restored with dlq. The parked one goes
// back to the parking queue and is replayed from there (round 1), then is
// restored home again with --to source --reset-count (round 2): the ledger
// recovers the copy, and it is invoiced once. The invalid one, a valid
// order the consumer rejected wrongly, is restored home twice and invoiced
// once.
func TestE2EArchiveRestoreAppliesOnce(t *testing.T) {
	l := deployedLane(t)
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	q := sqs.NewFromConfig(cfg)
	// Queues of the test's own: the schedule never reads them.
	dlqURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "dlq"))
	parkingURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "parking"))
	invalidURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "invalid"))
	id, invalidID := "ORD-"+l.run+"-ARCHIVED", "ORD-"+l.run+"-REFUSED"
	// Parked as the replay function parks: sealed with the lane's key.
	ledger := dynamo.NewLedger(dynamodb.NewFromConfig(cfg), l.out[outLedger], time.Now)
	seal, err := replay.SealKey(ctx, ledger, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	parked, err := archive.Parked(ctx, ledger, parkingURL)
	if err != nil {
		t.Fatal(err)
	}
	body := l.orderBody(t, id)
	meta := replay.Metadata{ReplayCount: 3, OriginalMessageID: "orig-" + l.run, Reason: replay.ReasonReplayExhausted,
		FirstDeadLetteredAt: time.Now().Add(-time.Hour), ParkedAt: time.Now()}
	attrs, err := replay.Attributes(nil, meta.Sealed(seal, body, parkingURL))
	if err != nil {
		t.Fatal(err)
	}
	l.send(t, parkingURL, body, attrs)
	l.dropCopies(t, parkingURL)
	verdict, err := invalid.Stamp(nil, invalid.Metadata{Reason: "missing-tax-id", MessageID: "orig-i-" + l.run, Consumer: "invoice", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	l.send(t, invalidURL, l.orderBody(t, invalidID), verdict)
	l.dropCopies(t, invalidURL)

	store := archive.NewStore(s3.NewFromConfig(cfg), l.out[outArchive])
	a, err := archive.New(q, store, sampleLane, "orderId", archive.Options{OnArrival: true, Budget: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	queues := []archive.Queue{parked, {URL: invalidURL, Role: archive.Invalid}}
	emulatortest.Eventually(t, 30*time.Second, func() (bool, string) {
		c, err := a.Run(ctx, queues)
		if err != nil {
			return false, err.Error()
		}
		v, f, _ := emulatortest.Depth(t, q, parkingURL)
		vi, fi, _ := emulatortest.Depth(t, q, invalidURL)
		return v+f+vi+fi == 0, fmt.Sprintf("archived %+v, %d left", c, v+f+vi+fi)
	})

	lane := []string{"--dlq-url", dlqURL, "--parking-url", parkingURL}
	listed := decode[[]archived](t, l.dlq(t, append(lane, "--json", "archive", "ls", "--key", id)...))
	if len(listed) != 1 || listed[0].Queue != archive.Parking || listed[0].Reason != replay.ReasonReplayExhausted {
		t.Fatalf("archive ls --key %s: %+v", id, listed)
	}
	o := decode[archive.Object](t, l.dlq(t, append(lane, "--json", "archive", "show", listed[0].Object)...))
	if o.Key != id || o.QueueURL != parkingURL || o.Replay == nil || o.Replay.OriginalMessageID != "orig-"+l.run {
		t.Fatalf("archive show: %+v", o)
	}

	tax := emulatortest.NewTaxAdmin(t, emulatortest.Output(t, l.stack, "TaxServiceAdminUrl"))
	invoicedOnce := func(round int, key string) {
		t.Helper()
		emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
			a := decode[keyAudit](t, l.dlq(t, "--json", "audit", "--key", key))
			return a.Completion.Completed, fmt.Sprintf("round %d: completion of %s %+v", round, key, a.Completion)
		})
		// The consumer's idempotency absorbs a second copy.
		time.Sleep(3 * time.Second)
		if n := tax.Invoices()[key]; n != 1 {
			t.Fatalf("round %d: %s invoiced %d times, want once", round, key, n)
		}
	}
	// Round 1: back to the parking queue, then replayed from there.
	rep := decode[restoreReport](t, l.dlq(t, append(lane, "--json", "archive", "restore", "--key", id, "--yes")...))
	if len(rep.Restored) != 1 || rep.DryRun || rep.Run != nil {
		t.Fatalf("round 1: restore %+v", rep)
	}
	replayed := 0
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		r := l.dlq(t, append(lane, "--json", "replay", "--route", "e2e-"+l.run, "--from", "parking", "--key", id, "--reset-count", "--yes")...)
		s := decode[replay.Summary](t, r)
		replayed += s.Total.Replayed + s.Total.Applied
		return replayed == 1, fmt.Sprintf("round 1: exit %d, replayed %d, routes %+v", r.code, replayed, s.Routes)
	})
	invoicedOnce(1, id)
	// Round 2: home in one command; the ledger knows the step was sent.
	r := l.dlq(t, append(lane, "--json", "archive", "restore", "--key", id, "--to", "source", "--reset-count", "--yes")...)
	rep = decode[restoreReport](t, r)
	if r.code != exitOK || len(rep.Restored) != 1 || rep.Run == nil || rep.LeftParked != 0 || rep.Run.Total.Replayed+rep.Run.Total.Recovered+rep.Run.Total.Applied != 1 {
		t.Fatalf("round 2: exit %d, %+v %s", r.code, rep, r.stderr)
	}
	invoicedOnce(2, id)

	// The invalid order, home twice: invoiced once.
	for round := 1; round <= 2; round++ {
		r := l.dlq(t, append(lane, "--json", "archive", "restore", "--queue", "invalid", "--key", invalidID, "--to", "source", "--reset-count", "--yes")...)
		rep := decode[restoreReport](t, r)
		if r.code != exitOK || len(rep.Restored) != 1 || rep.Restored[0].Reason != "missing-tax-id" || rep.Run == nil || rep.LeftParked != 0 {
			t.Fatalf("invalid, round %d: exit %d, %+v %s", round, r.code, rep, r.stderr)
		}
		invoicedOnce(round, invalidID)
	}
}
