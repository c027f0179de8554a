package payload_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/homingdlq/homing/payload"
)

// FuzzKeyOf evaluates expressions over bodies. Properties:
//   - NewKey and Of never panic, whatever the expression and the body;
//   - a key is non-empty, trimmed of JSON's white space, valid UTF-8, and
//     the same on a second evaluation;
//   - the key of a number (the expression @ over a number) is the integer
//     it is as written, within 2^53;
//   - a body larger than MaxBody has no key.
func FuzzKeyOf(f *testing.F) {
	f.Add("orderId", `{"orderId":"ORD-2026-000123","total":"99.80"}`)
	f.Add("payment.id", `{"payment":{"id":42}}`)
	f.Add("join('-', [tenant, id])", `{"tenant":"acme","id":"7"}`)
	f.Add("items[?quantity > `1`].sku | [0]", `{"items":[{"sku":"A","quantity":1},{"sku":"B","quantity":2}]}`)
	f.Add("to_string(n)", `{"n":1e308}`)
	f.Add("n", `{"n":-9007199254740993}`)
	f.Add("@", `9007199254740993`)
	f.Add("@", `12.0000000000000001`)
	f.Add("@", `"\ud800"`)
	f.Add("sort_by(@, &a)[0].a", `[{"a":"x"},{"a":1}]`)
	f.Add("orderId", "{\"orderId\":\"\xff\"}")
	f.Add("orderId[", `{}`)
	f.Add("@", `"  "`)
	f.Add("", `{"orderId":"x"}`)
	f.Fuzz(func(t *testing.T, expr, body string) {
		k, err := payload.NewKey(expr)
		if err != nil {
			return
		}
		key, ok := k.Of([]byte(body))
		switch {
		case !ok && key != "":
			t.Fatalf("Of = %q with ok=false", key)
		case !ok:
			return
		case len(body) > payload.MaxBody:
			t.Fatalf("Of(a body of %d bytes) = %q: want no key", len(body), key)
		case key == "" || strings.Trim(key, " \t\n\r") != key || !utf8.ValidString(key):
			t.Fatalf("Of = %q: want a non-empty, trimmed, valid UTF-8 key", key)
		}
		if again, ok := k.Of([]byte(body)); !ok || again != key {
			t.Fatalf("Of = %q, then %q, %v", key, again, ok)
		}
		// The key of a number in the body is its value as written, an
		// integer within 2^53 (exponents left out: big.Rat would spell
		// 1e999999999 out; and strings, which json.Number takes too).
		var n json.Number
		if expr == "@" && json.Unmarshal([]byte(body), &n) == nil && !strings.ContainsAny(body, `eE"`) {
			r, ok := new(big.Rat).SetString(n.String())
			limit := new(big.Rat).SetInt64(1 << 53)
			if !ok || !r.IsInt() || new(big.Rat).Abs(r).Cmp(limit) > 0 || r.Num().String() != key {
				t.Fatalf("Of(%s) = %q: not the integer as written within 2^53", body, key)
			}
		}
	})
}

// FuzzHashSum hashes bodies, whole and by part. Properties:
//   - NewHash, Sum and Same never panic;
//   - Sum is either an error wrapping ErrNotJSON or ErrNoPart, or the
//     part's version + ":" + 64 lowercase hex digits, the same on a second call;
//   - the whole body's digits equal those of its part "@" (the canonical
//     form decoded and encoded again changes nothing) unless the body is null;
//   - Same of a body's own hash is same and comparable; of an unversioned
//     hash, not comparable.
func FuzzHashSum(f *testing.F) {
	f.Add("", `{"b":2,"a":[1.0,"x\u00e9"],"c":{"z":null,"y":true}}`)
	f.Add("{id: id, amount: amount}", `{"trace":"t","amount":"10.00","id":"P-1"}`)
	f.Add("items[*].{sku: sku, quantity: quantity}", `{"items":[{"sku":"A","quantity":1,"note":"<&>"}]}`)
	f.Add("n", `{"n":1e21}`)
	f.Add("a / b", `{"a":1,"b":0}`)
	f.Add("", `[1e400]`)
	f.Add("", `{"a":1,"a":2}`)
	f.Add("", `"\ud800"`)
	f.Add("@", `null`)
	f.Add("", strings.Repeat("[", 10001)+strings.Repeat("]", 10001))
	f.Fuzz(func(t *testing.T, part, body string) {
		h, err := payload.NewHash(part)
		if err != nil {
			return
		}
		got, err := h.Sum([]byte(body))
		if err != nil {
			if got != "" || !errors.Is(err, payload.ErrNotJSON) && !errors.Is(err, payload.ErrNoPart) {
				t.Fatalf("Sum = %q, %v: want ErrNotJSON or ErrNoPart and no hash", got, err)
			}
			return
		}
		v, digits, found := strings.Cut(got, ":")
		if !found || v != version(part) || len(digits) != 64 || strings.Trim(digits, "0123456789abcdef") != "" {
			t.Fatalf("Sum = %q: want %s: and 64 lowercase hex digits", got, version(part))
		}
		if again, err := h.Sum([]byte(body)); err != nil || again != got {
			t.Fatalf("Sum = %s, then %s, %v", got, again, err)
		}
		if same, comparable := h.Same(got, []byte(body)); !same || !comparable {
			t.Fatalf("Same(its own hash) = %v, %v", same, comparable)
		}
		if _, comparable := h.Same(digits, []byte(body)); comparable {
			t.Fatal("an unversioned hash compares")
		}
		if part != "" {
			return
		}
		self, err := mustHash(t, "@").Sum([]byte(body))
		switch {
		case errors.Is(err, payload.ErrNoPart) && strings.TrimSpace(body) == "null":
		case err != nil || self != version("@")+":"+digits:
			t.Fatalf("Sum(whole body) = %s, Sum(part @) = %s, %v", got, self, err)
		}
	})
}
