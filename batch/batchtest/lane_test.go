package batchtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/fifo/fifotest"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// An outage and its recovery on the lane: the records the consumer fails
// are delivered MaxReceiveCount times, then moved to the DLQ; the replay
// brings them back once the downstream is up, and the consumer applies
// them. An invalid record goes to the invalid queue and never to the DLQ.
func ExampleLane() {
	ctx := context.Background()
	lane := batchtest.NewLane("shipments", batchtest.LaneOptions{Key: "shipmentId"})
	up := false
	shipped := map[string]bool{}
	handle := func(_ context.Context, msg events.SQSMessage) error {
		switch {
		case !strings.HasPrefix(msg.Body, "{"):
			return batch.Reject(invalid.ReasonMalformedJSON, "not a JSON object")
		case !up:
			return errors.New("carrier: connection refused")
		}
		shipped[msg.Body] = true
		return nil
	}
	p := batch.New(handle, lane.Invalid("shipping"), batch.Options{Logger: slog.New(slog.DiscardHandler), Now: lane.Clock.Now})
	for _, body := range []string{`{"shipmentId":"SHP-1"}`, `{"shipmentId":"SHP-2"}`, `shipmentId=SHP-3`} {
		_, _ = lane.Publish(ctx, body)
	}
	_ = lane.Drain(ctx, p.Process)
	fmt.Println("DLQ:", len(lane.Queue.Messages(lane.Route.DLQURL)), "invalid:", len(lane.Queue.Messages(lane.InvalidURL)))

	up = true
	lane.Clock.Advance(time.Hour)
	s, _ := lane.Replay(ctx, replay.Options{})
	_ = lane.Drain(ctx, p.Process)
	fmt.Println("replayed:", s.Total.Replayed, "shipped:", len(shipped), "DLQ:", len(lane.Queue.Messages(lane.Route.DLQURL)))
	// Output:
	// DLQ: 2 invalid: 1
	// replayed: 2 shipped: 2 DLQ: 0
}

// The event source mapping acts as Lambda does on the consumer's answer:
// it deletes the records not reported failed; an error, or a failure that
// names no record of the batch, fails the whole batch; a failed record is
// received again after the visibility timeout, and after MaxReceiveCount
// receives the redrive moves it to the DLQ.
func TestLanePoll(t *testing.T) {
	answer := func(resp events.SQSEventResponse, err error) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			for i, f := range resp.BatchItemFailures {
				if f.ItemIdentifier == "first" {
					resp.BatchItemFailures[i].ItemIdentifier = ev.Records[0].MessageId
				}
			}
			return resp, err
		}
	}
	fail := func(ids ...string) events.SQSEventResponse {
		r := events.SQSEventResponse{}
		for _, id := range ids {
			r.BatchItemFailures = append(r.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return r
	}
	tests := []struct {
		name     string
		consume  func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
		wantLeft int // in the source after the poll
	}{
		{"all acknowledged", answer(fail(), nil), 0},
		{"one failed", answer(fail("first"), nil), 1},
		{"an error fails the batch", answer(fail(), errors.New("boom")), 3},
		{"a failure naming no record fails the batch", answer(fail("no-such-id"), nil), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			lane := batchtest.NewLane("orders", batchtest.LaneOptions{MaxReceiveCount: 2})
			for i := range 3 {
				if _, err := lane.Publish(ctx, fmt.Sprintf(`{"n":%d}`, i)); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := lane.Poll(ctx, tt.consume); err != nil || n != 3 {
				t.Fatalf("Poll = %d, %v; want 3 delivered", n, err)
			}
			if left := len(lane.Queue.Messages(lane.Route.SourceURL)); left != tt.wantLeft {
				t.Fatalf("%d left in the source, want %d", left, tt.wantLeft)
			}
			if n, _ := lane.Poll(ctx, tt.consume); n != 0 {
				t.Fatalf("%d delivered again within the visibility timeout", n)
			}
			if err := lane.Drain(ctx, answer(fail("first", "no-such-id"), nil)); err != nil {
				t.Fatal(err)
			}
			if got := len(lane.Queue.Messages(lane.Route.DLQURL)); got != tt.wantLeft {
				t.Fatalf("%d in the DLQ after the redrive, want %d", got, tt.wantLeft)
			}
			for _, m := range lane.Queue.Messages(lane.Route.DLQURL) {
				if m.Attributes["ApproximateReceiveCount"] != "2" {
					t.Errorf("dead letter received %s times, want MaxReceiveCount (2)", m.Attributes["ApproximateReceiveCount"])
				}
			}
		})
	}
}

// A long FIFO group whose every record fails drains a head at a time:
// Drain waits as long as the source keeps shrinking (review: it gave up
// with a group of 60 still in the source).
func TestDrainALongFIFOGroup(t *testing.T) {
	ctx := context.Background()
	lane := batchtest.NewLane("orders.fifo", batchtest.LaneOptions{})
	for i := range 100 {
		if _, err := lane.Publish(ctx, fmt.Sprintf(`{"n":%d}`, i), "one-group"); err != nil {
			t.Fatal(err)
		}
	}
	failAll := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
		return resp, nil
	}
	if err := lane.Drain(ctx, failAll); err != nil {
		t.Fatalf("Drain = %v with %d left in the source", err, len(lane.Queue.Messages(lane.Route.SourceURL)))
	}
	if n := len(lane.Queue.Messages(lane.Route.DLQURL)); n != 100 {
		t.Fatalf("%d in the DLQ, want 100", n)
	}
}

// A head the consumer hides for hours (its backoff, set through the
// Keeper's queue) holds its group; Drain waits for it, as long as it
// takes, and the group then applies in order.
func TestDrainWaitsForAHiddenHead(t *testing.T) {
	ctx := context.Background()
	lane := batchtest.NewLane("orders.fifo", batchtest.LaneOptions{MaxReceiveCount: 100, Retention: 14 * 24 * time.Hour})
	for _, body := range []string{"1", "2"} {
		if _, err := lane.Publish(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	failures := 3
	var applied []string
	handle := func(_ context.Context, msg events.SQSMessage) error {
		if msg.Body == "1" && failures > 0 {
			failures--
			return errors.New("downstream: 503")
		}
		applied = append(applied, msg.Body)
		return nil
	}
	k := lane.Keeper(&fifotest.Memory{})
	k.MinBackoff = 6 * time.Hour
	p := batch.New(handle, lane.Invalid("orders"), batch.Options{Groups: k, Logger: slog.New(slog.DiscardHandler), Now: lane.Clock.Now})
	start := lane.Clock.Now()
	if err := lane.Drain(ctx, p.Process); err != nil {
		t.Fatal(err)
	}
	if strings.Join(applied, ",") != "1,2" {
		t.Fatalf("applied %v, want 1,2", applied)
	}
	// Hidden 6, 12 and 12 hours, each at least three quarters of it.
	if waited := lane.Clock.Now().Sub(start); waited < 22*time.Hour {
		t.Fatalf("drained after %v, before the head's backoffs ended", waited)
	}
	out, err := lane.Queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(lane.Route.SourceURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMessageRetentionPeriod}})
	if err != nil || out.Attributes["MessageRetentionPeriod"] != "1209600" {
		t.Fatalf("source retention: %v, %v; want the 14 days asked", out, err)
	}
}
