package payment_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/examples/payment"
)

const valid = `{"eventType":"payment.captured","version":1,"paymentId":"PAY-1","accountId":"ACC-1","capturedAt":"2026-11-29T10:00:00+01:00","amount":"120.5","currency":"EUR"}`

// with replaces one field of valid ("field":value) or, with value "", drops it.
func with(field, value string) string {
	parts := strings.Split(strings.Trim(valid, "{}"), ",")
	out := parts[:0]
	for _, p := range parts {
		if strings.HasPrefix(p, `"`+field+`":`) {
			if value == "" {
				continue
			}
			p = `"` + field + `":` + value
		}
		out = append(out, p)
	}
	return "{" + strings.Join(out, ",") + "}"
}

func TestParseValid(t *testing.T) {
	c, err := payment.Parse([]byte(valid), "ACC-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := payment.PayloadHash([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	want := payment.Captured{PaymentID: "PAY-1", AccountID: "ACC-1", CapturedAt: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), AmountMinor: 12050, Currency: "EUR",
		PayloadHash: hash}
	if c != want {
		t.Fatalf("Parse = %+v, want %+v", c, want)
	}
	if c.Amount() != "120.50" {
		t.Errorf("Amount() = %q", c.Amount())
	}
	// A standard queue has no group: nothing to compare.
	if _, err := payment.Parse([]byte(valid), "", 0); err != nil {
		t.Errorf("without a group: %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range []struct {
		name, body, group, reason string
		max                       int
	}{
		{"not json", `{"eventType":`, "", payment.ReasonNotJSON, 0},
		{"an array", `[1]`, "", payment.ReasonNotJSON, 0},
		{"two objects", valid + valid, "", payment.ReasonNotJSON, 0},
		{"other event", with("eventType", `"payment.refunded"`), "", payment.ReasonUnknownEventType, 0},
		{"no event type", with("eventType", ""), "", payment.ReasonUnknownEventType, 0},
		{"version 2", with("version", `2`), "", payment.ReasonUnknownVersion, 0},
		{"version as string", with("version", `"1"`), "", payment.ReasonUnknownVersion, 0},
		{"no payment id", with("paymentId", ""), "", payment.ReasonMissingPaymentID, 0},
		{"empty payment id", with("paymentId", `""`), "", payment.ReasonMissingPaymentID, 0},
		{"payment id with #", with("paymentId", `"PAY#1"`), "", payment.ReasonBadPaymentID, 0},
		{"payment id too long", with("paymentId", `"`+strings.Repeat("P", 65)+`"`), "", payment.ReasonBadPaymentID, 0},
		{"no account", with("accountId", ""), "", payment.ReasonMissingAccountID, 0},
		{"account with space", with("accountId", `"ACC 1"`), "", payment.ReasonBadAccountID, 0},
		{"group is not the account", valid, "ACC-2", payment.ReasonGroupNotAccount, 0},
		{"no captured at", with("capturedAt", ""), "", payment.ReasonBadCapturedAt, 0},
		{"captured at not a time", with("capturedAt", `"yesterday"`), "", payment.ReasonBadCapturedAt, 0},
		{"no amount", with("amount", ""), "", payment.ReasonBadAmount, 0},
		{"amount as number", with("amount", `120.5`), "", payment.ReasonBadAmount, 0},
		{"payment id as number", with("paymentId", `7`), "", payment.ReasonBadPaymentID, 0},
		{"null", `null`, "", payment.ReasonNotJSON, 0},
		{"three decimals", with("amount", `"1.005"`), "", payment.ReasonBadAmount, 0},
		{"zero", with("amount", `"0.00"`), "", payment.ReasonBadAmount, 0},
		{"negative", with("amount", `"-1.00"`), "", payment.ReasonBadAmount, 0},
		{"leading zero", with("amount", `"01.00"`), "", payment.ReasonBadAmount, 0},
		{"13 digits", with("amount", `"1000000000000"`), "", payment.ReasonBadAmount, 0},
		{"unknown currency", with("currency", `"XAU"`), "", payment.ReasonUnknownCurrency, 0},
		{"no currency", with("currency", ""), "", payment.ReasonUnknownCurrency, 0},
		{"too large", valid, "", payment.ReasonPayloadTooLarge, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := payment.Parse([]byte(c.body), c.group, c.max)
			var inv *payment.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("Parse(%s) = %v, want an *InvalidError", c.body, err)
			}
			if reason, detail := inv.Invalid(); reason != c.reason || detail == "" {
				t.Errorf("Invalid() = %q, %q; want reason %q and a detail", reason, detail, c.reason)
			}
		})
	}
}

func TestAmountAtTheBound(t *testing.T) {
	c, err := payment.Parse([]byte(with("amount", `"999999999999.99"`)), "", 0)
	if err != nil || c.AmountMinor != payment.MaxAmountMinor {
		t.Fatalf("Parse = %d, %v; want %d", c.AmountMinor, err, int64(payment.MaxAmountMinor))
	}
}

// The payload hash is the contract of package payload over HashPart: the
// fields Parse validates, canonical.
func TestPayloadHash(t *testing.T) {
	a, err := payment.Parse([]byte(valid), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	const canonical = `{"accountId":"ACC-1","amount":"120.5","capturedAt":"2026-11-29T10:00:00+01:00","currency":"EUR","paymentId":"PAY-1"}`
	sum := sha256.Sum256([]byte(canonical))
	// The version of a part's hashes: "jcs1p" and the first 11 hex digits
	// of the SHA-256 of its text (docs/CONTRACT.md).
	part := sha256.Sum256([]byte(payment.HashPart))
	if want := "jcs1p" + hex.EncodeToString(part[:])[:11] + ":" + hex.EncodeToString(sum[:]); a.PayloadHash != want {
		t.Fatalf("PayloadHash = %s, want %s (of %s)", a.PayloadHash, want, canonical)
	}
	// Key order, spacing, escapes and unknown fields do not change it.
	b, err := payment.Parse([]byte(`{ "currency":"EUR","amount":"120.5","capturedAt":"2026-11-29T10:00:00+01:00","accountId":"ACC-\u0031","paymentId":"PAY-1","version":1,"eventType":"payment.captured","note":"x"}`), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.PayloadHash != b.PayloadHash {
		t.Error("the same payment hashes differently")
	}
	for name, body := range map[string]string{
		"amount":                     with("amount", `"120.51"`),
		"amount spelled differently": with("amount", `"120.50"`),
		"the time's zone":            with("capturedAt", `"2026-11-29T09:00:00Z"`),
		"account":                    with("accountId", `"ACC-2"`),
	} {
		c, err := payment.Parse([]byte(body), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.PayloadHash == c.PayloadHash {
			t.Errorf("another %s hashes the same", name)
		}
	}
}

// A body that decodes but is not I-JSON has no payload hash: it is
// rejected as not JSON.
func TestParseRefusesABodyThatDoesNotHash(t *testing.T) {
	body := strings.Replace(valid, `"currency":"EUR"`, `"currency":"EUR","currency":"EUR"`, 1)
	_, err := payment.Parse([]byte(body), "", 0)
	var inv *payment.InvalidError
	if !errors.As(err, &inv) || inv.Reason != payment.ReasonNotJSON {
		t.Fatalf("Parse = %v, want %s", err, payment.ReasonNotJSON)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(valid), "ACC-1")
	f.Add([]byte(`{}`), "")
	f.Fuzz(func(t *testing.T, body []byte, group string) {
		c, err := payment.Parse(body, group, 0)
		var inv *payment.InvalidError
		switch {
		case err != nil && !errors.As(err, &inv):
			t.Fatalf("an error that is no rejection: %v", err)
		case err == nil && (c.AmountMinor <= 0 || c.AmountMinor > payment.MaxAmountMinor || c.PaymentID == "" || c.AccountID == ""):
			t.Fatalf("accepted %+v", c)
		}
	})
}

// TestPaymentsContractIsTheExamples pins the payments lane's contract in
// the sample stack (infra/payments.go, another module, which cannot import
// this one) to this package's: a key or a hashed part that drifted would
// silently turn the replay's already-applied removal off.
func TestPaymentsContractIsTheExamples(t *testing.T) {
	src, err := os.ReadFile("../../infra/payments.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"PaymentsKey": payment.KeyExpr, "PaymentsPayloadHash": payment.HashPart} {
		line := fmt.Sprintf("\t%s = %q\n", name, want)
		if !strings.Contains(string(src), line) {
			t.Errorf("infra/payments.go does not declare %s as this package does: want the line %q", name, strings.TrimSpace(line))
		}
	}
}
