package batch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/fifo"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigReadsTheLane(t *testing.T) {
	c, err := batch.LoadConfig(env(map[string]string{
		"CONSUMER_NAME": "shipping", "KEY_EXPRESSION": "detail.shipmentId", "PAYLOAD_HASH_EXPRESSION": "detail",
		"IDEMPOTENCY_TABLE": "idem", "INVALID_QUEUE_URL": "https://q/invalid", "CONCURRENCY": "4", "DEADLINE_MARGIN": "3s",
		"MAX_RECEIVE_COUNT": "5",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Consumer != "shipping" || c.Key.Expr() != "detail.shipmentId" || c.IdempotencyTable != "idem" || c.InvalidQueueURL != "https://q/invalid" ||
		c.Options.Concurrency != 4 || c.Options.DeadlineMargin != 3*time.Second || c.Options.Groups != nil ||
		c.Options.MaxReceiveCount != 5 || !c.FailureRecords {
		t.Fatalf("config = %+v", c)
	}
	if id, ok := c.Key.Of([]byte(`{"detail":{"shipmentId":"S-1"}}`)); !ok || id != "S-1" {
		t.Fatalf("key of a shipment = %q, %v", id, ok)
	}
}

func TestLoadConfigNamesEveryProblem(t *testing.T) {
	_, err := batch.LoadConfig(env(map[string]string{"CONCURRENCY": "many", "KEY_EXPRESSION": "detail.[", "GROUP_ORDER": "hold",
		"MAX_RECEIVE_COUNT": "-1", "FAILURE_RECORDS": "no"}))
	if err == nil {
		t.Fatal("an empty environment was accepted")
	}
	for _, want := range []string{"CONSUMER_NAME", "IDEMPOTENCY_TABLE", "INVALID_QUEUE_URL", "CONCURRENCY", "KEY_EXPRESSION", "SOURCE_QUEUE_URL", "LEDGER_TABLE",
		"MAX_RECEIVE_COUNT", "FAILURE_RECORDS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
}

func TestLoadConfigKeepsGroupOrder(t *testing.T) {
	c, err := batch.LoadConfig(env(map[string]string{
		"CONSUMER_NAME": "ledger", "IDEMPOTENCY_TABLE": "idem", "INVALID_QUEUE_URL": "https://q/invalid", "GROUP_ORDER": "hold",
		"SOURCE_QUEUE_URL": "https://q/src.fifo", "PARKING_QUEUE_URL": "https://q/park.fifo", "LEDGER_TABLE": "ledger", "MAX_RECEIVES": "20",
	}))
	if err != nil {
		t.Fatal(err)
	}
	g := c.Options.Groups
	if g == nil || g.OnError != fifo.Hold || g.SourceURL != "https://q/src.fifo" || g.ParkingURL != "https://q/park.fifo" || g.MaxReceives != 20 ||
		g.Retention != 96*time.Hour || c.ParksTable != "ledger" {
		t.Fatalf("groups = %+v, parks table %q", g, c.ParksTable)
	}
}

// A lane that asks for no failure records gets none.
func TestLoadConfigTurnsFailureRecordsOff(t *testing.T) {
	c, err := batch.LoadConfig(env(map[string]string{
		"CONSUMER_NAME": "shipping", "IDEMPOTENCY_TABLE": "idem", "INVALID_QUEUE_URL": "https://q/invalid", "FAILURE_RECORDS": "off",
	}))
	if err != nil || c.FailureRecords || c.Options.MaxReceiveCount != 0 {
		t.Fatalf("config = %+v, err = %v: want failure records off, maxReceiveCount unknown", c, err)
	}
}
