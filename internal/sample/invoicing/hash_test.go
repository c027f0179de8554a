package invoicing_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/internal/sample/tax"
	"github.com/homingdlq/homing/payload"
)

// The sample's payload hash is the generic contract over HashPart: the
// fields of the order, canonical (RFC 8785), so that the replay computes it
// from configuration alone.
func TestPayloadHashIsTheContract(t *testing.T) {
	raw, err := os.ReadFile("../../../events/order-valid.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	body := ev.Records[0].Body
	// The part HashPart selects, written out canonically: members sorted by
	// name, no white space.
	const canonical = `{"createdAt":"2026-11-29T10:00:00Z","currency":"BRL",` +
		`"customer":{"email":"ana@example.com","name":"Ana Souza","taxId":"123.456.789-09"},` +
		`"eventType":"order.created","items":[{"quantity":2,"sku":"SKU-1","unitPrice":"49.90"}],` +
		`"orderId":"ORD-2026-000123","total":"99.80","version":1}`
	sum := sha256.Sum256([]byte(canonical))
	want := partVersion(invoicing.HashPart) + ":" + hex.EncodeToString(sum[:])
	if got, ok := invoicing.PayloadHash(body); !ok || got != want {
		t.Fatalf("PayloadHash = %q, %v; want %q", got, ok, want)
	}
	h, err := payload.NewHash(invoicing.HashPart)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.Sum([]byte(body)); err != nil || got != want {
		t.Fatalf("payload.NewHash(HashPart).Sum = %q, %v; want %q", got, err, want)
	}
	k, err := payload.NewKey(invoicing.KeyExpr)
	if err != nil {
		t.Fatal(err)
	}
	if key, ok := k.Of([]byte(body)); !ok || key != "ORD-2026-000123" {
		t.Fatalf("the key of the order = %q, %v", key, ok)
	}
}

// The construct carries the expression in the functions' environment and
// bounds it (infra/deadletter.MaxExpressionBytes, in another module).
func TestHashPartFitsTheConstruct(t *testing.T) {
	const maxExpressionBytes = 256
	for name, expr := range map[string]string{"KeyExpr": invoicing.KeyExpr, "HashPart": invoicing.HashPart} {
		if len(expr) > maxExpressionBytes {
			t.Errorf("%s is %d bytes, the construct takes at most %d", name, len(expr), maxExpressionBytes)
		}
	}
}

// The same order re-encoded hashes the same: white space, member order,
// string escapes and fields the sample does not read.
func TestPayloadHashEqual(t *testing.T) {
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(valid), "", "    "); err != nil {
		t.Fatal(err)
	}
	reordered := `{"currency":"BRL","total":"99.80","items":[{"unitPrice":"49.90","quantity":2,"sku":"SKU-1"}],
		"customer":{"email":"ana@example.com","taxId":"123.456.789-09","name":"Ana Souza"},
		"createdAt":"2026-11-29T10:00:00Z","orderId":"ORD-1","version":1,"eventType":"order.created"}`
	tests := []struct{ name, body string }{
		{"same body", valid},
		{"indented", indented.String()},
		{"key order", reordered},
		{"unknown fields", strings.NewReplacer(`"version":1,`, `"version":1,"traceId":"abc",`,
			`"ana@example.com"`, `"ana@example.com","phone":"+55"`, `"quantity":2`, `"quantity":2,"note":"gift"`).Replace(valid)},
		{"escaped strings", strings.Replace(valid, `"SKU-1"`, `"\u0053KU-1"`, 1)},
	}
	want := mustPayloadHash(t, valid)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustPayloadHash(t, tt.body); got != want {
				t.Errorf("PayloadHash = %s, want %s", got, want)
			}
		})
	}
}

// Any change to a field the sample reads is another payload. The last three
// hashed the same under the order's own hash (order.Order.Hash), which
// normalised them; the generic contract compares what was sent, so that
// the replay needs no domain code to compute it.
func TestPayloadHashDiffers(t *testing.T) {
	tests := []struct{ name, body string }{
		{"total and price", strings.NewReplacer(`"49.90"`, `"50.00"`, `"99.80"`, `"100.00"`).Replace(valid)},
		{"quantity and total", strings.NewReplacer(`"quantity":2`, `"quantity":3`, `"99.80"`, `"149.70"`).Replace(valid)},
		{"sku", strings.Replace(valid, `"SKU-1"`, `"SKU-2"`, 1)},
		{"orderId", strings.Replace(valid, `"ORD-1"`, `"ORD-2"`, 1)},
		{"createdAt", strings.Replace(valid, `10:00:00Z`, `10:00:01Z`, 1)},
		{"createdAt absent", strings.Replace(valid, `"createdAt":"2026-11-29T10:00:00Z",`, ``, 1)},
		{"name", strings.Replace(valid, `"Ana Souza"`, `"Ana Souza Lima"`, 1)},
		{"email", strings.Replace(valid, `"ana@example.com"`, `"ana@example.org"`, 1)},
		{"tax id punctuation", strings.Replace(valid, `"123.456.789-09"`, `"12345678909"`, 1)},
		{"currency", strings.Replace(valid, `"BRL"`, `"USD"`, 1)},
		{"item added", strings.Replace(valid, `"unitPrice":"49.90"}`, `"unitPrice":"49.90"},{"sku":"SKU-9","quantity":1,"unitPrice":"0.00"}`, 1)},
		{"money without trailing zero", strings.Replace(valid, `"total":"99.80"`, `"total":"99.8"`, 1)},
		{"same instant, other offset", strings.Replace(valid, `2026-11-29T10:00:00Z`, `2026-11-29T07:00:00-03:00`, 1)},
		{"orderId with spaces around", strings.Replace(valid, `"ORD-1"`, `" ORD-1 "`, 1)},
	}
	seen := map[string]string{mustPayloadHash(t, valid): "the order"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.body == valid {
				t.Fatal("the case changes nothing")
			}
			got := mustPayloadHash(t, tt.body)
			if prev, dup := seen[got]; dup {
				t.Errorf("PayloadHash equals the hash of %s", prev)
			}
			seen[got] = tt.name
		})
	}
}

func TestPayloadHashOfWhatDoesNotHash(t *testing.T) {
	for _, body := range []string{`{"orderId":`, `{"orderId":"x","orderId":"y"}`, "{\"orderId\":\"\xff\"}", ""} {
		if h, ok := invoicing.PayloadHash(body); ok || h != "" {
			t.Errorf("PayloadHash(%q) = %q, %v; want no hash", body, h, ok)
		}
	}
}

// A body Parse accepts but that is not I-JSON (here a duplicate member) has
// no payload hash: it is invalid as malformed JSON, and never invoiced.
func TestHandleRefusesABodyThatDoesNotHash(t *testing.T) {
	tx := &stubTax{}
	body := strings.Replace(valid, `"currency":"BRL"`, `"currency":"BRL","currency":"BRL"`, 1)
	if _, err := order.Parse([]byte(body), 0); err != nil {
		t.Fatalf("Parse: %v; the case needs a body that Parse accepts", err)
	}
	err := handler(idempotency.NewMemoryStore(), tx).Handle(context.Background(), msg(body))
	if got := reasonOf(t, err); got != order.ReasonMalformedJSON || tx.calls != 0 {
		t.Fatalf("reason = %s, tax calls %d; want %s and none", got, tx.calls, order.ReasonMalformedJSON)
	}
}

// An upgrade never turns an order in flight into a false conflict: records
// written by the earlier build hold the order's own hash (unversioned,
// order.Order.Hash); the same order now arrives with a versioned hash. The
// record keeps its meaning until it expires.
func TestHandleAcrossTheHashUpgrade(t *testing.T) {
	o, err := order.Parse([]byte(valid), 0)
	if err != nil {
		t.Fatal(err)
	}
	conflicting := strings.NewReplacer(`"49.90"`, `"50.00"`, `"99.80"`, `"100.00"`).Replace(valid)
	tests := []struct {
		name       string
		complete   bool        // the old record is COMPLETED (INV-old); else an IN_PROGRESS lock
		expired    bool        // the lock has expired (its holder died)
		lookup     *stubLookup // nil: none configured
		body       string      // what arrives now
		wantCalls  int         // tax calls
		wantErr    bool        // a transient error (never an invalid order)
		wantResult string      // the record's result after the call; "" for none
	}{
		{"completed: a duplicate, absorbed", true, false, nil, valid, 0, false, "INV-old"},
		{"in flight, its holder alive: in progress", false, false, &stubLookup{}, valid, 0, true, ""},
		{"in flight, its holder died after invoicing: recorded, not a conflict", false, true,
			&stubLookup{inv: tax.Invoice{Number: "INV-old"}, applied: true}, valid, 0, false, "INV-old"},
		{"in flight, its holder died before invoicing: invoiced once", false, true, &stubLookup{}, valid, 1, false, "INV-ORD-1"},
		{"in flight, no lookup: invoiced in doubt", false, true, nil, valid, 1, false, "INV-ORD-1"},
		// The price of the rule: across the change a conflicting payload is
		// taken for a duplicate rather than sent to the invalid lane.
		{"completed, a conflicting payload: absorbed", true, false, nil, conflicting, 0, false, "INV-old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store, tx := idempotency.NewMemoryStore(), &stubTax{}
			now := time.Now()
			old := idempotency.Lease{Key: idempotency.Key("invoice", o.OrderID), PayloadHash: o.Hash(), Token: "old",
				Now: now.Add(-time.Minute), Until: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
			if tt.expired {
				old.Until = now.Add(-time.Second)
			}
			if _, claimed, err := store.Claim(ctx, old); err != nil || !claimed {
				t.Fatal(claimed, err)
			}
			if tt.complete {
				if err := store.Complete(ctx, old, "INV-old"); err != nil {
					t.Fatal(err)
				}
			}
			h := handler(store, tx)
			if tt.lookup != nil {
				h.Lookup = tt.lookup
			}
			err := h.Handle(ctx, msg(tt.body))
			checkErr(t, err, "", tt.wantErr)
			if tx.calls != tt.wantCalls {
				t.Fatalf("tax calls %d, want %d", tx.calls, tt.wantCalls)
			}
			rec, _ := store.Get(idempotency.Key("invoice", o.OrderID))
			if tt.wantResult != "" && (rec.Status != idempotency.Completed || rec.Result != tt.wantResult) {
				t.Fatalf("record = %+v, want COMPLETED with %s", rec, tt.wantResult)
			}
			if tt.wantErr && rec.Status != idempotency.InProgress {
				t.Fatalf("record = %+v, want the live lock kept", rec)
			}
		})
	}
}

// partVersion is the version of the hashes of part, as docs/CONTRACT.md
// spells it: "jcs1p" and the first 11 hex digits of the SHA-256 of its text.
func partVersion(part string) string {
	sum := sha256.Sum256([]byte(part))
	return "jcs1p" + hex.EncodeToString(sum[:])[:11]
}

func mustPayloadHash(t *testing.T, body string) string {
	t.Helper()
	if _, err := order.Parse([]byte(body), 0); err != nil {
		t.Fatalf("the case is not a valid order: %v\n%s", err, body)
	}
	h, ok := invoicing.PayloadHash(body)
	if !ok || payload.HashVersionOf(h) != partVersion(invoicing.HashPart) {
		t.Fatalf("PayloadHash = %q, %v", h, ok)
	}
	return h
}
