package order

import (
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	for _, s := range []string{"", "{}", "[]", "null", `"x"`, "{", sample + "}"} {
		f.Add([]byte(s))
	}
	for _, tt := range invalidCases() {
		if tt.maxBytes == 0 && len(tt.body) < 4096 {
			f.Add([]byte(tt.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := Parse(body, 0)
		if err != nil {
			checkInvalid(t, err)
			_, again := Parse(body, 0)
			if again == nil || again.Error() != err.Error() {
				t.Fatalf("not deterministic: %v, then %v", err, again)
			}
			return
		}
		checkOrder(t, o)
	})
}

func checkInvalid(t *testing.T, err error) {
	t.Helper()
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
	}
	if !slices.Contains(Reasons(), inv.Reason) {
		t.Fatalf("reason %q is not in Reasons()", inv.Reason)
	}
	if inv.Detail == "" || len(inv.Detail) > 256 {
		t.Fatalf("detail %q: want a short non-empty sentence", inv.Detail)
	}
}

func checkOrder(t *testing.T, o Order) {
	t.Helper()
	if o.EventType != EventType || o.Version != Version || o.OrderID == "" || !ValidTaxID(o.Customer.TaxID) || len(o.Items) == 0 {
		t.Fatalf("valid order breaks the contract: %+v", o)
	}
	digits, ok := CurrencyDigits(o.Currency)
	if !ok || o.Total.Digits != digits {
		t.Fatalf("currency %q, total digits %d", o.Currency, o.Total.Digits)
	}
	// The total is the sum of the items, checked with big integers.
	sum := new(big.Int)
	for _, it := range o.Items {
		if it.Quantity < 1 || it.UnitPrice.Minor < 0 || it.UnitPrice.Digits != digits {
			t.Fatalf("bad item %+v", it)
		}
		line := new(big.Int).Mul(big.NewInt(int64(it.Quantity)), big.NewInt(it.UnitPrice.Minor))
		sum.Add(sum, line)
	}
	if sum.Cmp(big.NewInt(o.Total.Minor)) != 0 {
		t.Fatalf("total %s (%d minor) != sum of items %s minor", o.Total, o.Total.Minor, sum)
	}
	h := o.Hash()
	if h2 := o.Hash(); h != h2 {
		t.Fatalf("Hash not stable: %s then %s", h, h2)
	}
	// Rendering the order back to a body and parsing it gives the same hash.
	back, err := Parse(encode(o), 0)
	if err != nil {
		t.Fatalf("re-encoded order does not parse: %v", err)
	}
	if back.Hash() != h {
		t.Fatalf("re-encoded order hashes differently:\n%+v\n%+v", o, back)
	}
}

// encode renders an Order as an order.created body, with the standard
// library encoder and money as strings.
func encode(o Order) []byte {
	type item struct {
		SKU       string `json:"sku"`
		Quantity  int    `json:"quantity"`
		UnitPrice string `json:"unitPrice"`
	}
	items := make([]item, len(o.Items))
	for i, it := range o.Items {
		items[i] = item{it.SKU, it.Quantity, it.UnitPrice.String()}
	}
	var createdAt *string
	if !o.CreatedAt.IsZero() {
		s := o.CreatedAt.Format(time.RFC3339Nano)
		createdAt = &s
	}
	b, err := json.Marshal(map[string]any{
		"eventType": o.EventType,
		"version":   o.Version,
		"orderId":   o.OrderID,
		"createdAt": createdAt,
		"customer":  map[string]string{"name": o.Customer.Name, "taxId": o.Customer.TaxID, "email": o.Customer.Email},
		"items":     items,
		"total":     o.Total.String(),
		"currency":  o.Currency,
	})
	if err != nil {
		panic(err)
	}
	return b
}
