//go:build e2e

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/replay"
)

// A parked order is archived to the lane's bucket (on the emulator's S3),
// listed, shown and restored with dlq, replayed from the parking queue and
// invoiced; restored and replayed a second time, it is not invoiced again.
func TestE2EArchiveRestoreAppliesOnce(t *testing.T) {
	l := deployedLane(t)
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	q := sqs.NewFromConfig(cfg)
	// Queues of the test's own: the schedule never reads them.
	dlqURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "dlq"))
	parkingURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "parking"))
	id := "ORD-" + l.run + "-ARCHIVED"
	attrs, err := envelope.Pack(nil, envelope.ReplayAttributeName, replay.Metadata{
		ReplayCount: 3, OriginalMessageID: "orig-" + l.run, Reason: replay.ReasonReplayExhausted,
		FirstDeadLetteredAt: time.Now().Add(-time.Hour), ParkedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	l.send(t, parkingURL, l.orderBody(t, id), attrs)
	l.dropCopies(t, parkingURL)

	store := archive.NewStore(s3.NewFromConfig(cfg), l.out[outArchive])
	a, err := archive.New(q, store, sampleLane, "orderId", archive.Options{OnArrival: true, Budget: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	emulatortest.Eventually(t, 30*time.Second, func() (bool, string) {
		c, err := a.Run(ctx, []archive.Queue{{URL: parkingURL, Role: archive.Parking}})
		if err != nil {
			return false, err.Error()
		}
		v, f, _ := emulatortest.Depth(t, q, parkingURL)
		return c[0].Archived >= 1 && v+f == 0, fmt.Sprintf("archived %+v, %d left", c, v+f)
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
	replayArgs := append(lane, "--json", "replay", "--route", "e2e-"+l.run, "--from", "parking", "--key", id, "--reset-count", "--yes")
	for round := 1; round <= 2; round++ {
		rep := decode[restoreReport](t, l.dlq(t, append(lane, "--json", "archive", "restore", "--key", id, "--yes")...))
		if len(rep.Restored) != 1 || rep.DryRun {
			t.Fatalf("round %d: restore %+v", round, rep)
		}
		replayed := 0
		emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
			r := l.dlq(t, replayArgs...)
			s := decode[replay.Summary](t, r)
			replayed += s.Total.Replayed + s.Total.Applied
			return replayed == 1, fmt.Sprintf("round %d: exit %d, replayed %d, routes %+v", round, r.code, replayed, s.Routes)
		})
		emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
			a := decode[keyAudit](t, l.dlq(t, "--json", "audit", "--key", id))
			return a.Completion.Completed, fmt.Sprintf("round %d: completion %+v", round, a.Completion)
		})
		// The consumer's idempotency absorbs the second round's copy.
		time.Sleep(3 * time.Second)
		if n := tax.Invoices()[id]; n != 1 {
			t.Fatalf("round %d: %s invoiced %d times, want once", round, id, n)
		}
	}
}
