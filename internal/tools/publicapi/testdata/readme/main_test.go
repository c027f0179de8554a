package main

// The README consumer's Handler on the lane in memory, as an adopter's
// tests would run it: TestReadmeConsumerCompiles copies this file beside
// the README's block and runs it.

import (
	"context"
	"log/slog"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/dynamo"
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

// A shipment the downstream keeps refusing reaches the DLQ after the
// lane's three receives, and the consumer, configured as main configures
// it from the construct's environment, records why: one UpdateItem, at the
// last delivery, keyed by the message id, with the error's own class.
func TestFailureRecordedOnTheLane(t *testing.T) {
	ctx := context.Background()
	lane := batchtest.NewLane("shipments", batchtest.LaneOptions{Key: "detail.shipmentId", MaxReceiveCount: 3})
	cfg, err := batch.LoadConfig(func(k string) string {
		return map[string]string{"CONSUMER_NAME": "shipping", "KEY_EXPRESSION": "detail.shipmentId", "IDEMPOTENCY_TABLE": "idem",
			"INVALID_QUEUE_URL": lane.InvalidURL, "MAX_RECEIVE_COUNT": "3"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	db := &updates{}
	if cfg.FailureRecords { // as main does
		cfg.Options.Failures = dynamo.NewFailureLog(db, cfg.IdempotencyTable, cfg.Consumer)
	}
	cfg.Options.Logger, cfg.Options.Now = slog.New(slog.DiscardHandler), lane.Clock.Now
	once := &idempotency.Receiver{Store: idempotency.NewMemoryStore(), Scope: cfg.Consumer, Now: lane.Clock.Now}
	p := batch.New(Handler(cfg.Key, cfg.Hash, once, refusing{}), lane.Invalid(cfg.Consumer), cfg.Options)
	id, err := lane.Publish(ctx, `{"detail":{"shipmentId":"SHP-9","to":"Braga"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := lane.Drain(ctx, p.Process); err != nil {
		t.Fatal(err)
	}
	if n := len(lane.Queue.Messages(lane.Route.DLQURL)); n != 1 {
		t.Fatalf("%d messages in the DLQ, want 1", n)
	}
	if len(db.got) != 1 {
		t.Fatalf("%d failure writes, want 1", len(db.got))
	}
	in := db.got[0]
	pk := in.Key["pk"].(*types.AttributeValueMemberS).Value
	class := in.ExpressionAttributeValues[":class"].(*types.AttributeValueMemberS).Value
	failures := in.ExpressionAttributeValues[":failures"].(*types.AttributeValueMemberN).Value
	if pk != "#failure#shipping#"+id || class != "carrier-503" || failures != strconv.Itoa(3) {
		t.Fatalf("wrote %s: class %s, failures %s", pk, class, failures)
	}
}

// updates is the DynamoDB client's UpdateItem, noted.
type updates struct {
	dynamo.API
	got []*dynamodb.UpdateItemInput
}

func (u *updates) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	u.got = append(u.got, in)
	return &dynamodb.UpdateItemOutput{}, nil
}

// refusing is a downstream that is down: its error names its class.
type refusing struct{}

func (refusing) Ship(ctx context.Context, key, body string) (string, error) {
	return "", carrierDown{}
}

func (refusing) Lookup(ctx context.Context, key string) (string, bool, error) { return "", false, nil }

type carrierDown struct{}

func (carrierDown) Error() string        { return "carrier answered 503" }
func (carrierDown) FailureClass() string { return "carrier-503" }
