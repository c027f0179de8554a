package payload_test

import (
	"testing"

	"github.com/homingdlq/homing/payload"
)

// order is the sample's order.created body (events/order-valid.json).
const order = `{"eventType":"order.created","version":1,"orderId":"ORD-2026-000123","createdAt":"2026-11-29T10:00:00Z",` +
	`"customer":{"name":"Ana Souza","taxId":"123.456.789-09","email":"ana@example.com"},` +
	`"items":[{"sku":"SKU-1","quantity":2,"unitPrice":"49.90"}],"total":"99.80","currency":"BRL"}`

func BenchmarkKeyOf(b *testing.B) {
	k, err := payload.NewKey("orderId")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(order)))
	for b.Loop() {
		if _, ok := k.Of([]byte(order)); !ok {
			b.Fatal("no key")
		}
	}
}

func BenchmarkHashSum(b *testing.B) {
	for _, part := range []string{"", "{orderId: orderId, customer: customer.{name: name, taxId: taxId}, items: items, total: total}"} {
		h, err := payload.NewHash(part)
		if err != nil {
			b.Fatal(err)
		}
		name := "whole"
		if part != "" {
			name = "part"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(order)))
			for b.Loop() {
				if _, err := h.Sum([]byte(order)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
