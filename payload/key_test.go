package payload_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/homingdlq/homing/payload"
)

func TestKeyOf(t *testing.T) {
	tests := []struct {
		name   string
		expr   string
		body   string
		want   string
		wantOK bool
	}{
		{"string field", "orderId", `{"orderId":"ORD-2026-000123"}`, "ORD-2026-000123", true},
		{"trimmed", "orderId", `{"orderId":"  ORD-1\t"}`, "ORD-1", true},
		{"nested", "payment.id", `{"payment":{"id":"PAY-7"}}`, "PAY-7", true},
		{"function", "join('-', [tenant, id])", `{"tenant":"acme","id":"42"}`, "acme-42", true},
		{"quoted name", `"order-id"`, `{"order-id":"O-9"}`, "O-9", true},
		{"quoted non-ASCII name", `"café"`, `{"café":"C-1"}`, "C-1", true},
		{"integral number", "id", `{"id":12345}`, "12345", true},
		{"integral spelled with a fraction", "id", `{"id":12.0}`, "12", true},
		{"integral spelled with an exponent", "id", `{"id":1e3}`, "1000", true},
		{"negative integral", "id", `{"id":-7}`, "-7", true},
		{"2^53 is exact", "id", `{"id":9007199254740992}`, "9007199254740992", true},
		{"past 2^53 is not exact", "id", `{"id":9007199254740994}`, "", false},
		{"fraction", "id", `{"id":1.5}`, "", false},
		{"absent", "orderId", `{"id":"x"}`, "", false},
		{"null", "orderId", `{"orderId":null}`, "", false},
		{"object", "orderId", `{"orderId":{"v":"x"}}`, "", false},
		{"array", "orderId", `{"orderId":["x"]}`, "", false},
		{"bool", "orderId", `{"orderId":true}`, "", false},
		{"empty string", "orderId", `{"orderId":""}`, "", false},
		{"blank string", "orderId", `{"orderId":"  "}`, "", false},
		{"not JSON", "orderId", `{"orderId":"x"`, "", false},
		{"trailing data", "orderId", `{"orderId":"x"} {}`, "", false},
		{"invalid UTF-8", "orderId", "{\"orderId\":\"\xff\"}", "", false},
		{"body not an object", "orderId", `["x"]`, "", false},
		{"a function error", "abs(orderId)", `{"orderId":"x"}`, "", false},
		// v1.1.1's contains compares with ==, which panics on two objects.
		{"a panic inside the library", "contains(a, b) && id", `{"a":[{}],"b":{},"id":"x"}`, "", false},
		{"contains without a panic", "contains(a, b) && id", `{"a":["b"],"b":"b","id":"x"}`, "x", true},
		{"zero Key", "", `{"orderId":"x"}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := payload.NewKey(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := k.Of([]byte(tt.body))
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("Key(%q).Of(%s) = %q, %v; want %q, %v", tt.expr, tt.body, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestKeyBoundsTheBody(t *testing.T) {
	k, err := payload.NewKey("orderId")
	if err != nil {
		t.Fatal(err)
	}
	body := func(n int) []byte {
		head := `{"orderId":"ORD-1","pad":"`
		return []byte(head + strings.Repeat("x", n-len(head)-2) + `"}`)
	}
	if got, ok := k.Of(body(payload.MaxBody)); !ok || got != "ORD-1" {
		t.Fatalf("Of(a body of MaxBody bytes) = %q, %v; want ORD-1", got, ok)
	}
	if got, ok := k.Of(body(payload.MaxBody + 1)); ok {
		t.Fatalf("Of(a body of MaxBody+1 bytes) = %q, want no key", got)
	}
}

func TestNewKey(t *testing.T) {
	tests := []struct {
		expr    string
		wantErr bool
	}{
		{"", false},
		{"orderId", false},
		{"detail.order.id", false},
		{"orderId[", true},
		{"a..b", true},
		{"join(", true},
		{"'\xa4'", true},  // a literal that is not valid UTF-8
		{"A\u0080", true}, // the library's lexer panics on it
		{"*", true},       // the object wildcard: no fixed order
		{"detail.*.id | [0]", true},
		{"items[*].sku | [0]", false}, // the array wildcard is ordered
		{"café", true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			k, err := payload.NewKey(tt.expr)
			switch {
			case tt.wantErr && (err == nil || !strings.Contains(err.Error(), strconv.Quote(tt.expr))):
				t.Fatalf("NewKey(%q) = %v, want an error naming the expression", tt.expr, err)
			case tt.wantErr:
				return
			case err != nil:
				t.Fatalf("NewKey(%q): %v", tt.expr, err)
			}
			if k.Expr() != tt.expr || k.IsZero() != (tt.expr == "") {
				t.Fatalf("NewKey(%q) = Expr %q, IsZero %v", tt.expr, k.Expr(), k.IsZero())
			}
		})
	}
	var zero payload.Key
	if !zero.IsZero() || zero.Expr() != "" {
		t.Fatal("the zero Key is not zero")
	}
}

// TestKeyBoundsTheFunctions: the functions whose output length a body
// chooses refuse one longer than MaxBody instead of allocating it.
func TestKeyBoundsTheFunctions(t *testing.T) {
	huge := payload.MaxBody + 1
	tests := []struct {
		name   string
		expr   string
		body   string
		wantOK bool
	}{
		{"pad_left within the bound", "pad_left(id, w)", `{"id":"7","w":5}`, true},
		{"pad_left past the bound", "pad_left(id, w)", `{"id":"7","w":` + strconv.Itoa(huge) + `}`, false},
		{"pad_left of 1e15", "pad_left(id, w, '0')", `{"id":"7","w":1e15}`, false},
		{"pad_right past the bound", "pad_right(id, w)", `{"id":"7","w":` + strconv.Itoa(huge) + `}`, false},
		{"replace within the bound", "replace(id, '-', '--')", `{"id":"a-b"}`, true},
		{"replace past the bound", "replace(id, '', r)", `{"id":"` + strings.Repeat("x", 2048) + `","r":"` + strings.Repeat("y", 2048) + `"}`, false},
		{"replace with a count", "replace(id, '', r, `1`)", `{"id":"` + strings.Repeat("x", 2048) + `","r":"` + strings.Repeat("y", 2048) + `"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := payload.NewKey(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := k.Of([]byte(tt.body))
			if ok != tt.wantOK || len(got) > payload.MaxBody {
				t.Fatalf("Of = %d bytes, %v; want ok=%v", len(got), ok, tt.wantOK)
			}
		})
	}
}

// keys, values and items list an object's members in RFC 8785's order (by
// UTF-16 code units), the same on every evaluation; the library's own
// follow Go's map order, which varies.
func TestKeyListsMembersInOrder(t *testing.T) {
	body := `{"b":"2","\ue000":"5","a":"1","\ud83d\ude00":"4","z":"3"}`
	tests := []struct{ expr, want string }{
		{"join(',', keys(@))", "a,b,z,\U0001F600,\ue000"},
		{"join(',', values(@))", "1,2,3,4,5"},
		{"join(',', items(@)[*][0])", "a,b,z,\U0001F600,\ue000"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			k, err := payload.NewKey(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			for range 20 {
				if got, ok := k.Of([]byte(body)); !ok || got != tt.want {
					t.Fatalf("Of = %q, %v; want %q", got, ok, tt.want)
				}
			}
		})
	}
}
