package payload_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/homingdlq/homing/payload"
)

// sum is the contract computed by hand over canonical bytes written out in
// the test: the version of part, ":", lowercase hex SHA-256.
func sum(part, canonical string) string {
	s := sha256.Sum256([]byte(canonical))
	return version(part) + ":" + hex.EncodeToString(s[:])
}

// version is the version of the hashes of part, by hand: "jcs1" for the
// whole body, "jcs1p" and 11 hex digits of the SHA-256 of part's text.
func version(part string) string {
	if part == "" {
		return "jcs1"
	}
	s := sha256.Sum256([]byte(part))
	return "jcs1p" + hex.EncodeToString(s[:])[:11]
}

func mustHash(t *testing.T, part string) payload.Hash {
	t.Helper()
	h, err := payload.NewHash(part)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHashSum(t *testing.T) {
	tests := []struct {
		name      string
		part      string
		body      string
		canonical string // the RFC 8785 bytes the hash is over
	}{
		{"object", "", `{"b":2,"a":1}`, `{"a":1,"b":2}`},
		{"white space", "", " {\n\t\"a\" : [ 1 , 2 ] \n} ", `{"a":[1,2]}`},
		{"nested key order", "", `{"z":{"y":true,"x":null},"a":"s"}`, `{"a":"s","z":{"x":null,"y":true}}`},
		{"number spelling", "", `[1.0,1e2,-0,0.10,1E-7]`, `[1,100,0,0.1,1e-7]`},
		{"string escapes", "", `"\u0041\u00e9\/<&>"`, `"Aé/<&>"`},
		{"control characters", "", `"\u0001\t"`, `"\u0001\t"`},
		{"scalar", "", `true`, `true`},
		{"part object", "{id: id, amount: amount}", `{"trace":"t-1","amount":"10.00","id":"P-1"}`, `{"amount":"10.00","id":"P-1"}`},
		{"part value", "order.id", `{"order":{"id":"O-1"}}`, `"O-1"`},
		{"part keeps HTML characters", "note", `{"note":"<a&b>"}`, `"<a&b>"`},
		{"part number", "n", `{"n":2.50}`, `2.5`},
		{"part of the whole body", "@", `{"b":[true],"a":{}}`, `{"a":{},"b":[true]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustHash(t, tt.part).Sum([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if want := sum(tt.part, tt.canonical); got != want {
				t.Fatalf("Sum(%s) = %s, want %s (of %s)", tt.body, got, want, tt.canonical)
			}
			if v := payload.HashVersionOf(got); v != version(tt.part) {
				t.Fatalf("HashVersionOf(%s) = %q, want %q", got, v, version(tt.part))
			}
		})
	}
}

func TestHashSumDiffers(t *testing.T) {
	base := `{"id":"P-1","amount":"10.00","tags":["a","b"]}`
	tests := []struct{ name, body string }{
		{"value", `{"id":"P-1","amount":"10.01","tags":["a","b"]}`},
		{"array order", `{"id":"P-1","amount":"10.00","tags":["b","a"]}`},
		{"field added", `{"id":"P-1","amount":"10.00","tags":["a","b"],"x":1}`},
		{"string for number", `{"id":"P-1","amount":10.00,"tags":["a","b"]}`},
	}
	whole := mustHash(t, "")
	want, err := whole.Sum([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := whole.Sum([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got == want {
				t.Fatalf("Sum(%s) = Sum(%s)", tt.body, base)
			}
		})
	}
}

// A body at the bound whose canonical form is longer (an exponent written
// out) hashes by part as it does whole.
func TestHashSumAtTheBound(t *testing.T) {
	const item = "1e20,"
	n := (payload.MaxBody - len(`{"n":[0]}`)) / len(item)
	body := []byte(`{"n":[` + strings.Repeat(item, n) + `0]}`)
	whole, err := mustHash(t, "").Sum(body)
	if err != nil {
		t.Fatalf("Sum of %d bytes: %v", len(body), err)
	}
	if part, err := mustHash(t, "@").Sum(body); err != nil || digits(part) != digits(whole) {
		t.Fatalf("Sum by the part @ = %s, %v; want the digits of %s", part, err, whole)
	}
}

// digits is a hash without its version.
func digits(hash string) string {
	_, d, _ := strings.Cut(hash, ":")
	return d
}

func TestHashSumErrors(t *testing.T) {
	large := `{"pad":"` + strings.Repeat("x", payload.MaxBody) + `"}`
	tests := []struct {
		name, part, body string
		want             error
	}{
		{"not JSON", "", `{"a":`, payload.ErrNotJSON},
		{"empty", "", ``, payload.ErrNotJSON},
		{"trailing data", "", `{} {}`, payload.ErrNotJSON},
		{"duplicate member", "", `{"a":1,"a":2}`, payload.ErrNotJSON},
		{"invalid UTF-8", "", "\"\xff\"", payload.ErrNotJSON},
		{"lone surrogate", "", `"\ud800"`, payload.ErrNotJSON},
		{"number out of range", "", `[1e400]`, payload.ErrNotJSON},
		{"too large", "", large, payload.ErrNotJSON},
		{"not JSON, with a part", "id", `{"id":`, payload.ErrNotJSON},
		{"part absent", "id", `{"other":1}`, payload.ErrNoPart},
		{"part null", "id", `{"id":null}`, payload.ErrNoPart},
		{"part a function error", "abs(id)", `{"id":"x"}`, payload.ErrNoPart},
		{"part a panic inside the library", "contains(a, b)", `{"a":[{}],"b":{}}`, payload.ErrNoPart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustHash(t, tt.part).Sum([]byte(tt.body))
			if !errors.Is(err, tt.want) || got != "" {
				t.Fatalf("Sum = %q, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestNewHash(t *testing.T) {
	for _, part := range []string{"", "@", "{id: id}"} {
		h, err := payload.NewHash(part)
		if err != nil || h.Part() != part {
			t.Fatalf("NewHash(%q) = part %q, %v", part, h.Part(), err)
		}
	}
	if _, err := payload.NewHash("{id: "); err == nil || !strings.Contains(err.Error(), `"{id: "`) {
		t.Fatalf("NewHash of a syntax error = %v, want an error naming the expression", err)
	}
	if (payload.Hash{}).Part() != "" {
		t.Fatal("the zero Hash has a part")
	}
}

func TestHashSame(t *testing.T) {
	body := []byte(`{"id":"P-1","amount":"10.00"}`)
	h := mustHash(t, "")
	recorded, err := h.Sum(body)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		recorded       string
		body           string
		same, compares bool
	}{
		{"same payload re-encoded", recorded, `{ "amount" : "10.00", "id" : "P-1" }`, true, true},
		{"another payload", recorded, `{"id":"P-1","amount":"10.01"}`, false, true},
		{"legacy unversioned hash", strings.TrimPrefix(recorded, "jcs1:"), string(body), false, false},
		{"another version", "jcs2:" + strings.TrimPrefix(recorded, "jcs1:"), string(body), false, false},
		{"another part", version("@") + ":" + strings.TrimPrefix(recorded, "jcs1:"), string(body), false, false},
		{"empty record hash", "", string(body), false, false},
		{"body does not hash", recorded, `{"id":`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same, compares := h.Same(tt.recorded, []byte(tt.body))
			if same != tt.same || compares != tt.compares {
				t.Fatalf("Same = %v, %v; want %v, %v", same, compares, tt.same, tt.compares)
			}
		})
	}
}

func TestHashVersionOf(t *testing.T) {
	tests := []struct{ hash, want string }{
		{"jcs1:0f", "jcs1"},
		{"jcs2:0f", "jcs2"},
		{"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", ""},
		{"", ""},
		{"jcs1", ""},
		{":0f", ""},
		{"JCS1:0f", ""},
		{"1jcs:0f", ""},
		{"jcs-1:0f", ""},
		{"abcdefghijklmnopq:0f", ""},
		{"abcdefghijklmnop:0f", "abcdefghijklmnop"},
		{version("{id: id}") + ":0f", version("{id: id}")},
	}
	for _, tt := range tests {
		t.Run(tt.hash, func(t *testing.T) {
			if got := payload.HashVersionOf(tt.hash); got != tt.want {
				t.Fatalf("HashVersionOf(%q) = %q, want %q", tt.hash, got, tt.want)
			}
		})
	}
}

// TestHashPartChange: a record hashed under one part and a body hashed
// under another never compare (issue 30: a change of
// PAYLOAD_HASH_EXPRESSION made every order in flight a false conflict),
// while the same part compares as before.
func TestHashPartChange(t *testing.T) {
	body := []byte(`{"id":"P-1","amount":"10.00","trace":"t-1"}`)
	parts := []string{"", "@", "{id: id, amount: amount}", "{id: id, amount: amount, trace: trace}", "{id:id, amount:amount}"}
	for _, old := range parts {
		recorded, err := mustHash(t, old).Sum(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, now := range parts {
			t.Run(old+" then "+now, func(t *testing.T) {
				same, comparable := mustHash(t, now).Same(recorded, body)
				if want := old == now; comparable != want || same != want {
					t.Fatalf("Same = %v, %v; want comparable and same only under one part (%v)", same, comparable, want)
				}
			})
		}
	}
}
