package order

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sample is the valid order.created event of the contract.
const sample = `{"eventType":"order.created","version":1,"orderId":"ORD-2026-000123","createdAt":"2026-11-29T10:00:00Z",
 "customer":{"name":"Ana Souza","taxId":"123.456.789-09","email":"ana@example.com"},
 "items":[{"sku":"SKU-1","quantity":2,"unitPrice":"49.90"}],"total":"99.80","currency":"BRL"}`

// derive returns the sample with edit applied to its decoded form. Numbers
// are json.Number, so they re-encode exactly as written.
func derive(edit func(m map[string]any)) string {
	dec := json.NewDecoder(strings.NewReader(sample))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		panic(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func customer(m map[string]any) map[string]any { return m["customer"].(map[string]any) }

func item0(m map[string]any) map[string]any { return m["items"].([]any)[0].(map[string]any) }

// set returns an edit that sets top-level key to v (or deletes it when v is deleteKey).
func set(key string, v any) func(map[string]any) {
	return func(m map[string]any) { put(m, key, v) }
}

func setCustomer(key string, v any) func(map[string]any) {
	return func(m map[string]any) { put(customer(m), key, v) }
}

func setItem(key string, v any) func(map[string]any) {
	return func(m map[string]any) { put(item0(m), key, v) }
}

type deleteKeyType struct{}

var deleteKey deleteKeyType

func put(m map[string]any, key string, v any) {
	if v == deleteKey {
		delete(m, key)
		return
	}
	m[key] = v
}

func both(edits ...func(map[string]any)) func(map[string]any) {
	return func(m map[string]any) {
		for _, e := range edits {
			e(m)
		}
	}
}

func TestParseValid(t *testing.T) {
	got, err := Parse([]byte(sample), 0)
	if err != nil {
		t.Fatalf("Parse(sample) error: %v", err)
	}
	want := Order{
		EventType: "order.created",
		Version:   1,
		OrderID:   "ORD-2026-000123",
		CreatedAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		Customer:  Customer{Name: "Ana Souza", TaxID: "123.456.789-09", Email: "ana@example.com"},
		Items:     []Item{{SKU: "SKU-1", Quantity: 2, UnitPrice: Money{Minor: 4990, Digits: 2}}},
		Total:     Money{Minor: 9980, Digits: 2},
		Currency:  "BRL",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(sample) =\n%+v\nwant\n%+v", got, want)
	}
	if got.Total.String() != "99.80" {
		t.Errorf("Total.String() = %q, want 99.80", got.Total)
	}
}

func TestParseValidVariants(t *testing.T) {
	twoItems := []any{
		map[string]any{"sku": "A", "quantity": json.Number("3"), "unitPrice": "10.5"},
		map[string]any{"sku": "B", "quantity": json.Number("1"), "unitPrice": "0.01"},
	}
	tests := []struct {
		name      string
		body      string
		wantTotal string
	}{
		{"sample", sample, "99.80"},
		{"total without trailing zero", derive(set("total", "99.8")), "99.80"},
		{"integer money", derive(both(setItem("unitPrice", "50"), set("total", "100"))), "100.00"},
		{"two items", derive(both(set("items", twoItems), set("total", "31.51"))), "31.51"},
		{"free item", derive(both(setItem("unitPrice", "0"), set("total", "0.00"))), "0.00"},
		{"CLP without decimals", derive(both(set("currency", "CLP"), setItem("unitPrice", "1500"), set("total", "3000"))), "3000"},
		{"JPY", derive(both(set("currency", "JPY"), setItem("unitPrice", "1"), set("total", "2"))), "2"},
		{"USD", derive(set("currency", "USD")), "99.80"},
		{"numeric CNPJ", derive(setCustomer("taxId", "11.222.333/0001-81")), "99.80"},
		{"alphanumeric CNPJ", derive(setCustomer("taxId", "12.ABC.345/01DE-35")), "99.80"},
		{"CPF without punctuation", derive(setCustomer("taxId", "52998224725")), "99.80"},
		{"no createdAt", derive(set("createdAt", deleteKey)), "99.80"},
		{"null createdAt", derive(set("createdAt", nil)), "99.80"},
		{"createdAt with offset and fraction", derive(set("createdAt", "2026-11-29T07:00:00.5-03:00")), "99.80"},
		{"no name, email or sku", derive(both(setCustomer("name", deleteKey), setCustomer("email", nil), setItem("sku", deleteKey))), "99.80"},
		{"unknown fields everywhere", derive(both(set("x", []any{1, "y"}), setCustomer("phone", "+55"), setItem("color", map[string]any{"r": 1}))), "99.80"},
		{"field names are case-sensitive", derive(set("OrderID", 42)), "99.80"},
		{"orderId with spaces around", derive(set("orderId", "  ORD-1 ")), "99.80"},
		{"duplicate key, last wins", strings.Replace(sample, `"total":"99.80"`, `"total":"1.00","total":"99.80"`, 1), "99.80"},
		{"leading white space", "\n\t " + sample, "99.80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse([]byte(tt.body), 0)
			if err != nil {
				t.Fatalf("Parse error: %v\nbody: %s", err, tt.body)
			}
			if got := o.Total.String(); got != tt.wantTotal {
				t.Errorf("Total = %s, want %s", got, tt.wantTotal)
			}
		})
	}
}

func TestParseTrimsOrderIDAndKeepsTaxIDAsSent(t *testing.T) {
	o, err := Parse([]byte(derive(both(set("orderId", "  ORD-1 "), setCustomer("taxId", " 529.982.247-25")))), 0)
	if err != nil {
		t.Fatal(err)
	}
	if o.OrderID != "ORD-1" {
		t.Errorf("OrderID = %q, want %q", o.OrderID, "ORD-1")
	}
	if o.Customer.TaxID != " 529.982.247-25" {
		t.Errorf("TaxID = %q, want it as sent", o.Customer.TaxID)
	}
}

type invalidCase struct {
	name       string
	body       string
	maxBytes   int
	want       Reason
	wantDetail string // exact when set
}

func invalidCases() []invalidCase {
	overflowItems := []any{
		map[string]any{"sku": "A", "quantity": json.Number("1"), "unitPrice": "50000000000000000.00"},
		map[string]any{"sku": "B", "quantity": json.Number("1"), "unitPrice": "50000000000000000.00"},
	}
	return []invalidCase{
		// Size comes first, even before JSON.
		{name: "over the limit", body: sample, maxBytes: len(sample) - 1, want: ReasonPayloadTooLarge,
			wantDetail: fmt.Sprintf("payload is %d bytes, limit is %d", len(sample), len(sample)-1)},
		{name: "over the default limit", body: `{"x":"` + strings.Repeat("a", DefaultMaxBytes) + `"}`, want: ReasonPayloadTooLarge,
			wantDetail: fmt.Sprintf("payload is %d bytes, limit is %d", DefaultMaxBytes+8, DefaultMaxBytes)},
		{name: "garbage over the limit", body: "not json at all", maxBytes: 3, want: ReasonPayloadTooLarge},

		{name: "empty body", body: "", want: ReasonMalformedJSON, wantDetail: "body is empty"},
		{name: "only spaces", body: " \n ", want: ReasonMalformedJSON, wantDetail: "body is empty"},
		{name: "not JSON", body: "order please", want: ReasonMalformedJSON, wantDetail: "not valid JSON"},
		{name: "truncated", body: sample[:40], want: ReasonMalformedJSON},
		{name: "trailing garbage", body: sample + "x", want: ReasonMalformedJSON},
		{name: "two objects", body: `{}{}`, want: ReasonMalformedJSON},
		{name: "array", body: `[]`, want: ReasonMalformedJSON, wantDetail: "want a JSON object, got an array"},
		{name: "array of the sample", body: "[" + sample + "]", want: ReasonMalformedJSON},
		{name: "string", body: `"x"`, want: ReasonMalformedJSON, wantDetail: "want a JSON object, got a string"},
		{name: "null", body: `null`, want: ReasonMalformedJSON, wantDetail: "want a JSON object, got null"},
		{name: "number", body: `42`, want: ReasonMalformedJSON, wantDetail: "want a JSON object, got a number"},
		{name: "boolean", body: `true`, want: ReasonMalformedJSON, wantDetail: "want a JSON object, got a boolean"},

		{name: "eventType number", body: derive(set("eventType", 5)), want: ReasonInvalidField, wantDetail: "eventType: want a string, got a number"},
		{name: "version string", body: derive(set("version", "1")), want: ReasonInvalidField, wantDetail: "version: want a number, got a string"},
		{name: "orderId number", body: derive(set("orderId", 123)), want: ReasonInvalidField, wantDetail: "orderId: want a string, got a number"},
		{name: "createdAt number", body: derive(set("createdAt", 1764410400)), want: ReasonInvalidField, wantDetail: "createdAt: want a string, got a number"},
		{name: "createdAt not RFC 3339", body: derive(set("createdAt", "29/11/2026")), want: ReasonInvalidField,
			wantDetail: `createdAt: want an RFC 3339 timestamp such as "2026-11-29T10:00:00Z", got "29/11/2026"`},
		{name: "createdAt without zone", body: derive(set("createdAt", "2026-11-29T10:00:00")), want: ReasonInvalidField},
		{name: "customer string", body: derive(set("customer", "Ana")), want: ReasonInvalidField, wantDetail: "customer: want an object, got a string"},
		{name: "customer array", body: derive(set("customer", []any{})), want: ReasonInvalidField, wantDetail: "customer: want an object, got an array"},
		{name: "customer.name number", body: derive(setCustomer("name", 1)), want: ReasonInvalidField, wantDetail: "customer.name: want a string, got a number"},
		{name: "customer.taxId number", body: derive(setCustomer("taxId", json.Number("12345678909"))), want: ReasonInvalidField,
			wantDetail: "customer.taxId: want a string, got a number"},
		{name: "customer.email boolean", body: derive(setCustomer("email", true)), want: ReasonInvalidField, wantDetail: "customer.email: want a string, got a boolean"},
		{name: "items object", body: derive(set("items", map[string]any{})), want: ReasonInvalidField, wantDetail: "items: want an array, got an object"},
		{name: "item number", body: derive(set("items", []any{1})), want: ReasonInvalidField, wantDetail: "items[0]: want an object, got a number"},
		{name: "item null", body: derive(set("items", []any{nil})), want: ReasonInvalidField, wantDetail: "items[0]: want an object, got null"},
		{name: "items[0].sku number", body: derive(setItem("sku", 1)), want: ReasonInvalidField, wantDetail: "items[0].sku: want a string, got a number"},
		{name: "items[0].quantity string", body: derive(setItem("quantity", "2")), want: ReasonInvalidField, wantDetail: "items[0].quantity: want a number, got a string"},
		{name: "items[0].unitPrice boolean", body: derive(setItem("unitPrice", true)), want: ReasonInvalidField,
			wantDetail: "items[0].unitPrice: want a decimal string, got a boolean"},
		{name: "total object", body: derive(set("total", map[string]any{"amount": "99.80"})), want: ReasonInvalidField,
			wantDetail: "total: want a decimal string, got an object"},
		{name: "currency number", body: derive(set("currency", 986)), want: ReasonInvalidField, wantDetail: "currency: want a string, got a number"},
		{name: "type errors come before semantic ones", body: derive(both(set("eventType", "x"), setItem("quantity", "2"))), want: ReasonInvalidField},

		{name: "eventType missing", body: derive(set("eventType", deleteKey)), want: ReasonUnknownEventType, wantDetail: `eventType is missing, want "order.created"`},
		{name: "eventType null", body: derive(set("eventType", nil)), want: ReasonUnknownEventType},
		{name: "eventType other", body: derive(set("eventType", "order.updated")), want: ReasonUnknownEventType,
			wantDetail: `eventType "order.updated" is not supported, want "order.created"`},
		{name: "eventType upper case", body: derive(set("eventType", "ORDER.CREATED")), want: ReasonUnknownEventType},
		{name: "eventType long is truncated", body: derive(set("eventType", strings.Repeat("x", 100))), want: ReasonUnknownEventType,
			wantDetail: `eventType "` + strings.Repeat("x", 40) + `"... is not supported, want "order.created"`},
		{name: "event type before version", body: derive(both(set("eventType", "x"), set("version", 2))), want: ReasonUnknownEventType},

		{name: "version missing", body: derive(set("version", deleteKey)), want: ReasonUnknownVersion, wantDetail: "version is missing, want 1"},
		{name: "version 2", body: derive(set("version", 2)), want: ReasonUnknownVersion, wantDetail: "version 2 is not supported, want 1"},
		{name: "version 0", body: derive(set("version", 0)), want: ReasonUnknownVersion},
		{name: "version 1.0", body: derive(set("version", json.Number("1.0"))), want: ReasonUnknownVersion},
		{name: "version 1e0", body: derive(set("version", json.Number("1e0"))), want: ReasonUnknownVersion},
		{name: "version before orderId", body: derive(both(set("version", 2), set("orderId", ""))), want: ReasonUnknownVersion},

		{name: "orderId missing", body: derive(set("orderId", deleteKey)), want: ReasonMissingOrderID, wantDetail: "orderId is missing or blank"},
		{name: "orderId null", body: derive(set("orderId", nil)), want: ReasonMissingOrderID},
		{name: "orderId empty", body: derive(set("orderId", "")), want: ReasonMissingOrderID},
		{name: "orderId blank", body: derive(set("orderId", " \t ")), want: ReasonMissingOrderID},
		{name: "orderId before taxId", body: derive(both(set("orderId", ""), setCustomer("taxId", "1"))), want: ReasonMissingOrderID},
		{name: "orderId with a control character", body: derive(set("orderId", "ORD\a1")), want: ReasonInvalidOrderID,
			wantDetail: "orderId has U+0007 at byte 3: allowed are ASCII letters, digits and -_.:/#"},
		{name: "orderId with a lone surrogate", body: strings.Replace(sample, `"ORD-2026-000123"`, `"ORD-\ud800"`, 1), want: ReasonInvalidOrderID},
		{name: "orderId grammar before taxId", body: derive(both(set("orderId", "ORD 1"), setCustomer("taxId", "1"))), want: ReasonInvalidOrderID},

		{name: "customer missing", body: derive(set("customer", deleteKey)), want: ReasonMissingTaxID, wantDetail: "customer is missing, so is customer.taxId"},
		{name: "customer null", body: derive(set("customer", nil)), want: ReasonMissingTaxID},
		{name: "customer empty", body: derive(set("customer", map[string]any{})), want: ReasonMissingTaxID, wantDetail: "customer.taxId is missing or blank"},
		{name: "taxId null", body: derive(setCustomer("taxId", nil)), want: ReasonMissingTaxID},
		{name: "taxId empty", body: derive(setCustomer("taxId", "")), want: ReasonMissingTaxID},
		{name: "taxId blank", body: derive(setCustomer("taxId", "   ")), want: ReasonMissingTaxID},

		{name: "CPF wrong check digit", body: derive(setCustomer("taxId", "123.456.789-00")), want: ReasonInvalidTaxID,
			wantDetail: "customer.taxId is neither a valid CPF nor a valid CNPJ"},
		{name: "CPF all same digit", body: derive(setCustomer("taxId", "111.111.111-11")), want: ReasonInvalidTaxID},
		{name: "CNPJ wrong check digit", body: derive(setCustomer("taxId", "12.ABC.345/01DE-36")), want: ReasonInvalidTaxID},
		{name: "taxId letters", body: derive(setCustomer("taxId", "abc")), want: ReasonInvalidTaxID},
		{name: "taxId only punctuation", body: derive(setCustomer("taxId", "..-")), want: ReasonInvalidTaxID},
		{name: "taxId before items", body: derive(both(setCustomer("taxId", "1"), set("items", []any{}))), want: ReasonInvalidTaxID},

		{name: "items missing", body: derive(set("items", deleteKey)), want: ReasonNoItems, wantDetail: "items is missing or empty"},
		{name: "items null", body: derive(set("items", nil)), want: ReasonNoItems},
		{name: "items empty", body: derive(set("items", []any{})), want: ReasonNoItems},

		{name: "quantity missing", body: derive(setItem("quantity", deleteKey)), want: ReasonInvalidQuantity, wantDetail: "items[0].quantity is missing"},
		{name: "quantity zero", body: derive(setItem("quantity", 0)), want: ReasonInvalidQuantity, wantDetail: "items[0].quantity must be at least 1, got 0"},
		{name: "quantity negative", body: derive(setItem("quantity", -1)), want: ReasonInvalidQuantity, wantDetail: "items[0].quantity must be at least 1, got -1"},
		{name: "quantity fractional", body: derive(setItem("quantity", 1.5)), want: ReasonInvalidQuantity, wantDetail: "items[0].quantity must be a whole number, got 1.5"},
		{name: "quantity 2.0", body: derive(setItem("quantity", json.Number("2.0"))), want: ReasonInvalidQuantity},
		{name: "quantity exponent", body: derive(setItem("quantity", json.Number("2e0"))), want: ReasonInvalidQuantity},
		{name: "quantity huge", body: derive(setItem("quantity", json.Number("99999999999999999999"))), want: ReasonInvalidQuantity,
			wantDetail: "items[0].quantity is too large: 99999999999999999999"},
		{name: "quantity hugely negative", body: derive(setItem("quantity", json.Number("-99999999999999999999"))), want: ReasonInvalidQuantity},
		{name: "quantity before money", body: derive(both(setItem("quantity", 0), set("total", "x"))), want: ReasonInvalidQuantity},

		{name: "unitPrice exponent", body: derive(setItem("unitPrice", "1e3")), want: ReasonInvalidMoney,
			wantDetail: `items[0].unitPrice: want a decimal string such as "49.90", got "1e3"`},
		{name: "unitPrice negative", body: derive(setItem("unitPrice", "-1.00")), want: ReasonInvalidMoney,
			wantDetail: `items[0].unitPrice: money must not be negative, got "-1.00"`},
		{name: "unitPrice three decimals", body: derive(setItem("unitPrice", "10.999")), want: ReasonInvalidMoney,
			wantDetail: `items[0].unitPrice: "10.999" has more than 2 decimal places`},
		{name: "unitPrice leading space", body: derive(setItem("unitPrice", " 10")), want: ReasonInvalidMoney},
		{name: "unitPrice empty", body: derive(setItem("unitPrice", "")), want: ReasonInvalidMoney, wantDetail: "items[0].unitPrice: money is an empty string"},
		{name: "unitPrice comma", body: derive(setItem("unitPrice", "49,90")), want: ReasonInvalidMoney},
		{name: "unitPrice JSON number", body: derive(setItem("unitPrice", json.Number("49.90"))), want: ReasonInvalidMoney,
			wantDetail: `items[0].unitPrice: money must be a decimal string such as "49.90", got the JSON number 49.90`},
		{name: "unitPrice missing", body: derive(setItem("unitPrice", deleteKey)), want: ReasonInvalidMoney, wantDetail: "items[0].unitPrice is missing"},
		{name: "unitPrice too large", body: derive(setItem("unitPrice", "92233720368547758.08")), want: ReasonInvalidMoney},
		{name: "total JSON number", body: derive(set("total", json.Number("99.8"))), want: ReasonInvalidMoney,
			wantDetail: `total: money must be a decimal string such as "49.90", got the JSON number 99.8`},
		{name: "total missing", body: derive(set("total", deleteKey)), want: ReasonInvalidMoney, wantDetail: "total is missing"},
		{name: "total null", body: derive(set("total", nil)), want: ReasonInvalidMoney},
		{name: "total three decimals", body: derive(set("total", "99.800")), want: ReasonInvalidMoney},
		{name: "CLP with decimals", body: derive(both(set("currency", "CLP"), setItem("unitPrice", "10.5"), set("total", "21"))), want: ReasonInvalidMoney,
			wantDetail: `items[0].unitPrice: "10.5" has decimal places, the currency has none`},
		{name: "line overflows", body: derive(both(setItem("quantity", json.Number("9223372036854775807")), setItem("unitPrice", "2.00"))), want: ReasonInvalidMoney,
			wantDetail: "items[0]: quantity × unitPrice is too large"},
		{name: "sum overflows", body: derive(set("items", overflowItems)), want: ReasonInvalidMoney, wantDetail: "the sum of the items is too large"},
		{name: "money syntax before currency", body: derive(both(set("currency", "XYZ"), set("total", "1e3"))), want: ReasonInvalidMoney},

		{name: "currency missing", body: derive(set("currency", deleteKey)), want: ReasonUnknownCurrency, wantDetail: "currency is missing"},
		{name: "currency empty", body: derive(set("currency", "")), want: ReasonUnknownCurrency},
		{name: "currency unknown", body: derive(set("currency", "XYZ")), want: ReasonUnknownCurrency, wantDetail: `currency "XYZ" is not supported`},
		{name: "currency lower case", body: derive(set("currency", "brl")), want: ReasonUnknownCurrency},
		{name: "unknown currency with many decimals", body: derive(both(set("currency", "XYZ"), set("total", "99.80000"))), want: ReasonUnknownCurrency},
		{name: "currency before total", body: derive(both(set("currency", "XYZ"), set("total", "1.00"))), want: ReasonUnknownCurrency},

		{name: "total off by a cent", body: derive(set("total", "99.79")), want: ReasonTotalMismatch, wantDetail: "total 99.79 is not the sum of the items 99.80"},
		{name: "total is the unit price", body: derive(set("total", "49.90")), want: ReasonTotalMismatch},
		{name: "total of one of two items", body: derive(set("items", []any{
			map[string]any{"quantity": json.Number("2"), "unitPrice": "49.90"},
			map[string]any{"quantity": json.Number("1"), "unitPrice": "0.01"},
		})), want: ReasonTotalMismatch, wantDetail: "total 99.80 is not the sum of the items 99.81"},
	}
}

func TestParseInvalid(t *testing.T) {
	for _, tt := range invalidCases() {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse([]byte(tt.body), tt.maxBytes)
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("Parse error = %v (%T), want an *InvalidError %s\nbody: %.300s", err, err, tt.want, tt.body)
			}
			if inv.Reason != tt.want {
				t.Errorf("Reason = %s (%s), want %s\nbody: %.300s", inv.Reason, inv.Detail, tt.want, tt.body)
			}
			if tt.wantDetail != "" && inv.Detail != tt.wantDetail {
				t.Errorf("Detail = %q, want %q", inv.Detail, tt.wantDetail)
			}
			if inv.Detail == "" || len(inv.Detail) > 200 {
				t.Errorf("Detail = %q, want a short sentence", inv.Detail)
			}
			if !reflect.DeepEqual(o, Order{}) {
				t.Errorf("Parse returned a non-zero Order with an error: %+v", o)
			}
			// Deterministic: the same body gives the same error.
			_, again := Parse([]byte(tt.body), tt.maxBytes)
			if again == nil || again.Error() != err.Error() {
				t.Errorf("second Parse error = %v, want %v", again, err)
			}
		})
	}
}

// TestParseCoversEveryReason makes sure the table exercises every reason code
// Parse can produce.
func TestParseCoversEveryReason(t *testing.T) {
	notFromParse := map[Reason]bool{ReasonConflictingDuplicate: true, ReasonRejectedByTaxService: true}
	covered := map[Reason]bool{}
	for _, tt := range invalidCases() {
		covered[tt.want] = true
	}
	for _, r := range Reasons() {
		t.Run(string(r), func(t *testing.T) {
			if covered[r] == notFromParse[r] {
				t.Errorf("reason %s: covered by a Parse case = %v, produced by Parse = %v", r, covered[r], !notFromParse[r])
			}
		})
	}
}

func TestParseDefaultMaxBytes(t *testing.T) {
	body := `{"pad":"` + strings.Repeat("a", DefaultMaxBytes-len(`{"pad":""}`)) + `"}`
	for _, maxBytes := range []int{0, -1} {
		t.Run(fmt.Sprint(maxBytes), func(t *testing.T) {
			// Exactly at the limit: not too large, so the next check fails.
			var inv *InvalidError
			if _, err := Parse([]byte(body), maxBytes); !errors.As(err, &inv) || inv.Reason != ReasonUnknownEventType {
				t.Errorf("Parse(%d bytes) = %v, want unknown-event-type", len(body), err)
			}
			if _, err := Parse([]byte(body+" "), maxBytes); !errors.As(err, &inv) || inv.Reason != ReasonPayloadTooLarge {
				t.Errorf("Parse(%d bytes) = %v, want payload-too-large", len(body)+1, err)
			}
		})
	}
}

func mustHash(t *testing.T, body string) string {
	t.Helper()
	o, err := Parse([]byte(body), 0)
	if err != nil {
		t.Fatalf("Parse error: %v\nbody: %s", err, body)
	}
	return o.Hash()
}

func TestHashEqual(t *testing.T) {
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(sample), "", "    "); err != nil {
		t.Fatal(err)
	}
	reordered := `{"currency":"BRL","total":"99.80","items":[{"unitPrice":"49.90","quantity":2,"sku":"SKU-1"}],
		"customer":{"email":"ana@example.com","taxId":"123.456.789-09","name":"Ana Souza"},
		"createdAt":"2026-11-29T10:00:00Z","orderId":"ORD-2026-000123","version":1,"eventType":"order.created"}`
	tests := []struct {
		name string
		body string
	}{
		{"same body", sample},
		{"indented", indented.String()},
		{"compact", derive(func(map[string]any) {})},
		{"key order", reordered},
		{"unknown fields", derive(both(set("traceId", "abc"), setCustomer("phone", "+55"), setItem("note", "gift")))},
		{"escaped strings", strings.Replace(sample, `"SKU-1"`, `"\u0053KU-1"`, 1)},
		{"money without trailing zero", derive(set("total", "99.8"))},
		{"same instant, other offset", derive(set("createdAt", "2026-11-29T07:00:00-03:00"))},
		{"orderId with spaces around", derive(set("orderId", " ORD-2026-000123 "))},
	}
	want := mustHash(t, sample)
	if len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "" {
		t.Fatalf("Hash() = %q, want 64 hex digits", want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustHash(t, tt.body); got != want {
				t.Errorf("Hash() = %s, want %s", got, want)
			}
		})
	}
}

func TestHashDiffers(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"total and price", derive(both(setItem("unitPrice", "50.00"), set("total", "100.00")))},
		{"quantity and total", derive(both(setItem("quantity", 3), set("total", "149.70")))},
		{"sku", derive(setItem("sku", "SKU-2"))},
		{"item added", derive(both(set("items", []any{
			map[string]any{"sku": "SKU-1", "quantity": json.Number("2"), "unitPrice": "49.90"},
			map[string]any{"sku": "SKU-9", "quantity": json.Number("1"), "unitPrice": "0.00"},
		})))},
		{"orderId", derive(set("orderId", "ORD-2026-000124"))},
		{"createdAt", derive(set("createdAt", "2026-11-29T10:00:01Z"))},
		{"createdAt absent", derive(set("createdAt", deleteKey))},
		{"name", derive(setCustomer("name", "Ana Souza Lima"))},
		{"email", derive(setCustomer("email", "ana@example.org"))},
		{"tax id", derive(setCustomer("taxId", "529.982.247-25"))},
		{"tax id punctuation", derive(setCustomer("taxId", "12345678909"))},
		{"currency", derive(set("currency", "USD"))},
		// Length prefixes keep field boundaries: moving text between fields changes the hash.
		{"boundary", derive(both(setCustomer("name", "Ana Souzaana@example.com"), setCustomer("email", "")))},
	}
	base := mustHash(t, sample)
	seen := map[string]string{base: "sample"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustHash(t, tt.body)
			if prev, dup := seen[got]; dup {
				t.Errorf("Hash() equals the hash of %s", prev)
			}
			seen[got] = tt.name
		})
	}
}

func BenchmarkParse(b *testing.B) {
	body := []byte(sample)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Parse(body, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	o, err := Parse([]byte(sample), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = o.Hash()
	}
}

// TestStringFieldMatchesEncodingJSON checks the no-escape fast path of
// stringField against encoding/json.
func TestStringFieldMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		raw  string
	}{
		{"ascii", `"Ana Souza"`},
		{"empty", `""`},
		{"accents", `"Ana Sôuza Ção"`},
		{"emoji", `"🛒"`},
		{"escapes", `"a\"b\\c\u00e7\n"`},
		{"surrogate pair", `"\ud83d\uded2"`},
		{"invalid UTF-8", "\"a\xffb\""},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\""},
		{"padded", " \"x\" "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want string
			if err := json.Unmarshal([]byte(tt.raw), &want); err != nil {
				t.Fatal(err)
			}
			got, err := stringField(object{"k": json.RawMessage(tt.raw)}, "k", "k")
			if err != nil || got != want {
				t.Errorf("stringField(%q) = %q, %v; want %q", tt.raw, got, err, want)
			}
		})
	}
}
