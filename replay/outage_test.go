package replay_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/replay"
)

// An outage that outlasts the replays: every replay fails again and SQS
// moves it back to the DLQ, a new message with a new id. The runs count
// each dead letter once (DeadLettered, and its metric), not each replay
// that came back: the returned ones carry the engine's sealed metadata.
func TestDeadLetteredCountsEachDeadLetterOnce(t *testing.T) {
	ctx := context.Background()
	lane := batchtest.NewLane("shipments", batchtest.LaneOptions{Key: "shipmentId"})
	down := batch.New(func(context.Context, events.SQSMessage) error { return errors.New("carrier: connection refused") },
		lane.Invalid("shipping"), batch.Options{Logger: slog.New(slog.DiscardHandler), Now: lane.Clock.Now})
	const letters = 4
	for i := range letters {
		if _, err := lane.Publish(ctx, `{"shipmentId":"SHP-`+string(rune('A'+i))+`"}`); err != nil {
			t.Fatal(err)
		}
	}
	if err := lane.Drain(ctx, down.Process); err != nil {
		t.Fatal(err)
	}
	// Each run replays what it may (the breaker opens on the returns and
	// probes later), until the replays are exhausted and parked.
	deadLettered, replayed := 0, 0
	for run := 1; len(lane.Queue.Messages(lane.Route.DLQURL)) > 0; run++ {
		if run > 20 {
			t.Fatalf("the DLQ still holds %d messages after 20 runs", len(lane.Queue.Messages(lane.Route.DLQURL)))
		}
		lane.Clock.Advance(12 * time.Hour) // past any backoff and the breaker's next probe
		s, err := lane.Replay(ctx, replay.Options{})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		deadLettered += s.Total.DeadLettered
		replayed += s.Total.Replayed
		if err := lane.Drain(ctx, down.Process); err != nil {
			t.Fatal(err)
		}
	}
	if parked := len(lane.Queue.Messages(lane.Route.ParkingURL)); parked != letters || replayed <= letters {
		t.Fatalf("%d parked after %d replays; want all %d parked after more replays than dead letters", parked, replayed, letters)
	}
	if deadLettered != letters {
		t.Errorf("the runs counted %d dead letters over %d replays that came back; want %d, each once", deadLettered, replayed, letters)
	}
}
