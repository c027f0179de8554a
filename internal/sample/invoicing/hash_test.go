package invoicing_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/sample/order"
)

func TestPayloadHashIsTheOrdersHash(t *testing.T) {
	raw, err := os.ReadFile("../../../events/order-valid.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	body := []byte(ev.Records[0].Body)
	o, err := order.Parse(body, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := invoicing.PayloadHash(string(body)); !ok || h != o.Hash() {
		t.Fatalf("PayloadHash = %q, %v; want %q", h, ok, o.Hash())
	}
	if _, ok := invoicing.PayloadHash(`{"orderId":"x"}`); ok {
		t.Fatal("an invalid order has no payload hash")
	}
}
