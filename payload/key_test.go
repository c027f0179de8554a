package payload_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"

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
		{"trimmed of CR and LF", "orderId", `{"orderId":"\r\nORD-1\n\r"}`, "ORD-1", true},
		{"no-break space kept", "orderId", `{"orderId":"\u00a0ORD-1"}`, "\u00a0ORD-1", true},
		{"vertical tab kept", "orderId", `{"orderId":"ORD-1\u000b"}`, "ORD-1\v", true},
		{"lone high surrogate", "orderId", `{"orderId":"A\ud800"}`, "", false},
		{"lone low surrogate", "orderId", `{"orderId":"A\udfff"}`, "", false},
		{"high surrogate then a low one, apart", "orderId", `{"orderId":"\ud800x\udc00"}`, "", false},
		{"lone surrogate elsewhere in the body", "orderId", `{"orderId":"A","note":"\ud800"}`, "", false},
		{"a surrogate pair", "orderId", `{"orderId":"A\ud83d\ude00"}`, "A\U0001F600", true},
		{"an escaped backslash before u", "orderId", `{"orderId":"A\\ud800"}`, `A\ud800`, true},
		{"U+FFFD as written", "orderId", `{"orderId":"A\ufffd"}`, "A\ufffd", true},
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
		{"2^53+1, which a double reads as 2^53", "id", `{"id":9007199254740993}`, "", false},
		{"-(2^53+1)", "id", `{"id":-9007199254740993}`, "", false},
		{"2^53 spelled with an exponent", "id", `{"id":9.007199254740992e15}`, "9007199254740992", true},
		{"2^53+1 spelled with an exponent", "id", `{"id":900719925474099.3e1}`, "", false},
		{"a fraction a double rounds away", "id", `{"id":12.0000000000000001}`, "", false},
		{"a fraction a double rounds to zero", "id", `{"id":1e-400}`, "", false},
		{"negative zero", "id", `{"id":-0.0}`, "0", true},
		{"zero with a huge exponent", "id", `{"id":0e999999999999}`, "0", true},
		{"to_string of a number past a double", "to_string(id)", `{"id":9007199254740993}`, "", false},
		{"arithmetic on a number past a double", "abs(id)", `{"id":9007199254740993}`, "", false},
		{"a computed integer", "sum(ids)", `{"ids":[1.5,2.5]}`, "4", true},
		{"a filter reads exact numbers", "items[?n > `1`].sku | [0]", `{"items":[{"n":1,"sku":"A"},{"n":2,"sku":"B"}]}`, "B", true},
		{"a number out of a double's range", "id", `{"id":"x","n":1e400}`, "", false},
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

// TestKeyDistinctNumbers: two numbers that differ as written never share a
// key (issue 30: 2^53 and 2^53+1 read as one double, and the second
// shipment was absorbed as a duplicate of the first).
func TestKeyDistinctNumbers(t *testing.T) {
	k, err := payload.NewKey("shipmentId")
	if err != nil {
		t.Fatal(err)
	}
	a, aOK := k.Of([]byte(`{"shipmentId":9007199254740992}`))
	b, bOK := k.Of([]byte(`{"shipmentId":9007199254740993}`))
	if !aOK || a != "9007199254740992" {
		t.Fatalf("2^53: Of = %q, %v; want its decimal text", a, aOK)
	}
	if bOK {
		t.Fatalf("2^53+1: Of = %q; want no key (past 2^53, the contract's bound)", b)
	}
}

// TestKeyLoneSurrogatesDistinct: \ud800 and \udfff, which Go decodes both
// as U+FFFD, never make one key; nor does either make the key of U+FFFD.
func TestKeyLoneSurrogatesDistinct(t *testing.T) {
	k, err := payload.NewKey("id")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, body := range []string{`{"id":"\ud800"}`, `{"id":"\udfff"}`, `{"id":"\ufffd"}`, `{"id":"\udbff\udfff"}`} {
		key, ok := k.Of([]byte(body))
		if !ok {
			continue
		}
		if other, dup := seen[key]; dup {
			t.Fatalf("%s and %s share the key %q", other, body, key)
		}
		seen[key] = body
	}
	if len(seen) != 2 {
		t.Fatalf("keys %v: want the two well-formed ids only", seen)
	}
}

// TestKeyTrimsExactly: a string key is trimmed of exactly the code points
// docs/CONTRACT.md lists (its block "trim-set"), at both ends, and of no
// other code point.
func TestKeyTrimsExactly(t *testing.T) {
	set := trimSet(t)
	k, err := payload.NewKey("id")
	if err != nil {
		t.Fatal(err)
	}
	// Every code point up to U+30FF (each of Unicode's White_Space, the
	// set Go's TrimSpace trims, is below U+3001; Python's str.strip trims
	// U+001C..U+001F too), and the others some runtime trims (JavaScript's
	// trim: U+FEFF).
	points := []rune{0xFEFF, 0x1F600, unicode.MaxRune}
	for r := rune(0); r < 0x3100; r++ {
		points = append(points, r)
	}
	for _, r := range points {
		quoted, err := json.Marshal(string(r) + "K" + string(r))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := k.Of([]byte(`{"id":` + string(quoted) + `}`))
		want := string(r) + "K" + string(r)
		if set[r] {
			want = "K"
		}
		if !ok || got != want {
			t.Fatalf("U+%04X around a key: Of = %q, %v; want %q", r, got, ok, want)
		}
	}
}

// trimSet reads the code points of the block tagged trim-set in
// docs/CONTRACT.md ("U+0009 U+000A ...").
func trimSet(t *testing.T) map[rune]bool {
	t.Helper()
	src, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	block := blocks(t, string(src))["trim-set"]
	set := map[rune]bool{}
	for _, f := range strings.Fields(block) {
		n, err := strconv.ParseUint(strings.TrimPrefix(f, "U+"), 16, 32)
		if err != nil || !strings.HasPrefix(f, "U+") {
			t.Fatalf("trim-set: %q is not a code point", f)
		}
		set[rune(n)] = true
	}
	if len(set) == 0 {
		t.Fatalf("%s has no block tagged trim-set", contractDoc)
	}
	return set
}
