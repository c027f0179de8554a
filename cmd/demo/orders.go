package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// story is what the demo publishes and what it expects at the end.
type story struct {
	messages     []string       // bodies, in publishing order
	valid        []string       // orderIds that must be invoiced exactly once
	invalid      map[string]int // reason -> messages expected in the invalid queue
	deadLettered int            // messages that must go through the DLQ
	duplicates   int            // extra deliveries of valid orders, absorbed by idempotency
	rejectID     string         // valid for us, refused by the tax service
}

var customers = []struct{ name, taxID string }{
	{"Ana Souza", "529.982.247-25"},
	{"Bruno Lima", "123.456.789-09"},
	{"Loja Exemplo Ltda", "11.222.333/0001-81"},
	{"Nova Empresa SA", "12.ABC.345/01DE-35"},
}

type item struct {
	SKU       string `json:"sku"`
	Quantity  int    `json:"quantity"`
	UnitPrice string `json:"unitPrice"`
}

// newOrder returns an order.created body; the total is the exact sum.
func newOrder(id string, n int) map[string]any {
	c := customers[n%len(customers)]
	items := []item{{SKU: fmt.Sprintf("SKU-%d", n%7+1), Quantity: n%3 + 1, UnitPrice: fmt.Sprintf("%d.%02d", 10+n%40, (n*37)%100)}}
	if n%2 == 0 {
		items = append(items, item{SKU: "SKU-GIFT", Quantity: 1, UnitPrice: "4.90"})
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

func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// newStory builds the demo's orders: mostly valid, some of each invalid
// reason, some duplicate deliveries and one conflicting duplicate.
func newStory(run string, valid int) story {
	s := story{invalid: map[string]int{}}
	id := func(n int) string { return fmt.Sprintf("ORD-%s-%04d", run, n) }
	for n := 1; n <= valid; n++ {
		s.messages = append(s.messages, encode(newOrder(id(n), n)))
		s.valid = append(s.valid, id(n))
	}
	// Producers retry: five orders are delivered twice, same payload.
	for n := 1; n <= 5; n++ {
		s.messages = append(s.messages, encode(newOrder(id(n*3), n*3)))
		s.duplicates++
	}
	// The same orderId with another payload.

	conflict := newOrder(id(2), 2)
	conflict["items"] = []item{{SKU: "SKU-9", Quantity: 9, UnitPrice: "1.00"}}
	conflict["total"] = "9.00"
	s.messages = append(s.messages, encode(conflict))
	s.invalid["conflicting-duplicate"]++
	// Valid for us, refused by the tax service once it is back.
	s.rejectID = fmt.Sprintf("ORD-%s-REJECT", run)
	s.messages = append(s.messages, encode(newOrder(s.rejectID, 1)))
	s.invalid["rejected-by-tax-service"]++
	// Everything valid in shape waits in the DLQ during the outage.
	s.deadLettered = len(s.messages)

	broken := func(reason string, edit func(o map[string]any)) {
		o := newOrder(fmt.Sprintf("ORD-%s-BAD-%s", run, strings.ToUpper(reason)), 1)
		o["demoRun"] = run // an unknown field: it marks the message even without an orderId
		edit(o)
		s.messages = append(s.messages, encode(o))
		s.invalid[reason]++
	}
	s.messages = append(s.messages, "order "+id(900)+" for Ana: 2 x SKU-1")
	s.invalid["malformed-json"]++
	broken("invalid-field", func(o map[string]any) { o["version"] = "1" })
	broken("unknown-event-type", func(o map[string]any) { o["eventType"] = "order.shipped" })
	broken("unknown-version", func(o map[string]any) { o["version"] = 2 })
	broken("missing-order-id", func(o map[string]any) { o["orderId"] = "" })
	broken("missing-tax-id", func(o map[string]any) { delete(o["customer"].(map[string]any), "taxId") })
	broken("invalid-tax-id", func(o map[string]any) { o["customer"].(map[string]any)["taxId"] = "529.982.247-26" })
	broken("no-items", func(o map[string]any) { o["items"] = []item{}; o["total"] = "0.00" })
	broken("invalid-quantity", func(o map[string]any) { o["items"].([]item)[0].Quantity = 0 })
	broken("invalid-money", func(o map[string]any) { o["total"] = 99.8 })
	broken("total-mismatch", func(o map[string]any) { o["total"] = "1000.00" })
	broken("unknown-currency", func(o map[string]any) { o["currency"] = "ZZZ" })
	broken("payload-too-large", func(o map[string]any) { o["notes"] = strings.Repeat("x", 300<<10) })
	return s
}
