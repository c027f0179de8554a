package drill

import (
	"encoding/json"
	"fmt"
	"strings"
)

var customers = []struct{ name, taxID string }{
	{"Ana Souza", "529.982.247-25"},
	{"Bruno Lima", "123.456.789-09"},
	{"Loja Exemplo Ltda", "11.222.333/0001-81"},
	{"Nova Empresa SA", "12.ABC.345/01DE-35"},
}

// Item is one line of an order.
type Item struct {
	SKU       string `json:"sku"`
	Quantity  int    `json:"quantity"`
	UnitPrice string `json:"unitPrice"`
}

// Order returns a valid order.created event for id; n varies the customer
// and the items. The total is the exact sum of the items.
func Order(id string, n int) map[string]any {
	c := customers[n%len(customers)]
	items := []Item{{SKU: fmt.Sprintf("SKU-%d", n%7+1), Quantity: n%3 + 1, UnitPrice: fmt.Sprintf("%d.%02d", 10+n%40, (n*37)%100)}}
	if n%2 == 0 {
		items = append(items, Item{SKU: "SKU-GIFT", Quantity: 1, UnitPrice: "4.90"})
	}
	cents := 0
	for _, it := range items {
		var u, f int
		fmt.Sscanf(it.UnitPrice, "%d.%d", &u, &f)
		cents += it.Quantity * (u*100 + f)
	}
	return map[string]any{
		"eventType": "order.created", "version": 1, "orderId": id, "createdAt": "2026-11-29T10:00:00Z",
		"customer": map[string]any{"name": c.name, "taxId": c.taxID, "email": "customer@example.com"},
		"items":    items, "total": fmt.Sprintf("%d.%02d", cents/100, cents%100), "currency": "BRL",
	}
}

// Conflicting returns order, changed: the same orderId with another payload.
func Conflicting(order map[string]any) map[string]any {
	c := make(map[string]any, len(order))
	for k, v := range order {
		c[k] = v
	}
	c["items"] = []Item{{SKU: "SKU-9", Quantity: 9, UnitPrice: "1.00"}}
	c["total"] = "9.00"
	return c
}

// Encode returns v as JSON. The events of this package hold only strings,
// numbers, maps and Items, which always encode.
func Encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// MarkField is the unknown field every invalid event carries with its id,
// so that even one without an orderId can be told apart in a queue.
const MarkField = "drillId"

// InvalidReasons are the reasons Invalid can produce, in a fixed order: every
// reason the consumer finds before calling the tax service.
var InvalidReasons = []string{
	"malformed-json", "invalid-field", "unknown-event-type", "unknown-version", "missing-order-id",
	"missing-tax-id", "invalid-tax-id", "no-items", "invalid-quantity", "invalid-money",
	"total-mismatch", "unknown-currency", "payload-too-large",
}

// Invalid returns a message body the consumer refuses with reason (one of
// InvalidReasons), built around the order id; the id appears in the body
// whatever the reason. It returns "" for an unknown reason.
func Invalid(reason, id string) string {
	if reason == "malformed-json" {
		return "order " + id + " for Ana: 2 x SKU-1"
	}
	o := Order(id, 1)
	o[MarkField] = id
	switch reason {
	case "invalid-field":
		o["version"] = "1"
	case "unknown-event-type":
		o["eventType"] = "order.shipped"
	case "unknown-version":
		o["version"] = 2
	case "missing-order-id":
		o["orderId"] = ""
	case "missing-tax-id":
		delete(o["customer"].(map[string]any), "taxId")
	case "invalid-tax-id":
		o["customer"].(map[string]any)["taxId"] = "529.982.247-26"
	case "no-items":
		o["items"] = []Item{}
		o["total"] = "0.00"
	case "invalid-quantity":
		o["items"].([]Item)[0].Quantity = 0
	case "invalid-money":
		o["total"] = 99.8
	case "total-mismatch":
		o["total"] = "1000.00"
	case "unknown-currency":
		o["currency"] = "ZZZ"
	case "payload-too-large":
		o["notes"] = strings.Repeat("x", 300<<10)
	default:
		return ""
	}
	return Encode(o)
}
