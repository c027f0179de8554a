package order_test

import (
	"errors"
	"fmt"

	"github.com/homingdlq/homing/internal/sample/order"
)

func ExampleParse() {
	bodies := []string{
		`{"eventType":"order.created","version":1,"orderId":"ORD-2026-000123","createdAt":"2026-11-29T10:00:00Z",
		  "customer":{"name":"Ana Souza","taxId":"123.456.789-09","email":"ana@example.com"},
		  "items":[{"sku":"SKU-1","quantity":2,"unitPrice":"49.90"}],"total":"99.80","currency":"BRL"}`,
		`{"eventType":"order.created","version":2}`,
	}
	for _, body := range bodies {
		o, err := order.Parse([]byte(body), 0)
		var inv *order.InvalidError
		switch {
		case errors.As(err, &inv):
			fmt.Println("invalid:", inv.Reason)
		case err != nil:
			fmt.Println("error:", err)
		default:
			fmt.Println("valid:", o.OrderID, o.Total, o.Currency)
		}
	}
	// Output:
	// valid: ORD-2026-000123 99.80 BRL
	// invalid: unknown-version
}
