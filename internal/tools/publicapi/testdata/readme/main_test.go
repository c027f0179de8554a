package main

// The README consumer's Handler on the lane in memory, as an adopter's
// tests would run it: TestReadmeConsumerCompiles copies this file beside
// the README's block and runs it.

import (
	"context"
	"log/slog"
	"testing"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/payload"
)

// Published: a shipment, a conflicting duplicate of it (same key, another
// payload), a duplicate of it, a body that is not JSON, one without the
// key. The first is shipped once, the duplicate absorbed, the other three
// go to the invalid queue with their reasons, and nothing reaches the DLQ.
func TestHandlerOnTheLane(t *testing.T) {
	ctx := context.Background()
	lane := batchtest.NewLane("shipments", batchtest.LaneOptions{Key: "detail.shipmentId"})
	key, err := payload.NewKey("detail.shipmentId")
	if err != nil {
		t.Fatal(err)
	}
	hash, err := payload.NewHash("")
	if err != nil {
		t.Fatal(err)
	}
	down := &counting{}
	once := &idempotency.Receiver{Store: idempotency.NewMemoryStore(), Scope: "shipping", Now: lane.Clock.Now}
	p := batch.New(Handler(key, hash, once, down), lane.Invalid("shipping"),
		batch.Options{Concurrency: 1, Logger: slog.New(slog.DiscardHandler), Now: lane.Clock.Now})
	for _, body := range []string{
		`{"detail":{"shipmentId":"SHP-1","to":"Lisbon"}}`,
		`{"detail":{"shipmentId":"SHP-1","to":"Porto"}}`,
		`{"detail":{"shipmentId":"SHP-1","to":"Lisbon"}}`,
		`{"detail":{"shipmentId":`,
		`{"detail":{"to":"Faro"}}`,
	} {
		if _, err := lane.Publish(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := lane.Drain(ctx, p.Process); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, m := range lane.Queue.Messages(lane.InvalidURL) {
		meta, _, found, err := invalid.Read(m.MessageAttributes)
		if err != nil || !found {
			t.Fatalf("invalid message without its verdict: %v", err)
		}
		reasons[meta.Reason]++
	}
	want := map[string]int{invalid.ReasonConflictingDuplicate: 1, invalid.ReasonMalformedJSON: 1, invalid.ReasonMissingKey: 1}
	if len(reasons) != len(want) || reasons[invalid.ReasonConflictingDuplicate] != 1 || reasons[invalid.ReasonMalformedJSON] != 1 || reasons[invalid.ReasonMissingKey] != 1 {
		t.Errorf("invalid queue by reason: %v, want %v", reasons, want)
	}
	if n := len(lane.Queue.Messages(lane.Route.DLQURL)); n != 0 {
		t.Errorf("%d messages in the DLQ, want none", n)
	}
	if down.shipped != 1 {
		t.Errorf("shipped %d times, want once", down.shipped)
	}
}

// counting is a downstream that counts its effects.
type counting struct{ shipped int }

func (c *counting) Ship(ctx context.Context, key, body string) (string, error) {
	c.shipped++
	return "shipped " + key, nil
}

func (c *counting) Lookup(ctx context.Context, key string) (string, bool, error) {
	return "", false, nil
}
