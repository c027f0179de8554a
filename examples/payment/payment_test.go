package payment_test

import (
	"errors"
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
	want := payment.Captured{PaymentID: "PAY-1", AccountID: "ACC-1", CapturedAt: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), AmountMinor: 12050, Currency: "EUR"}
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

func TestHash(t *testing.T) {
	a, _ := payment.Parse([]byte(valid), "", 0)
	// Key order, spacing, unknown fields and the time's zone do not change it.
	b, err := payment.Parse([]byte(`{ "currency":"EUR","amount":"120.50","capturedAt":"2026-11-29T09:00:00Z","accountId":"ACC-1","paymentId":"PAY-1","version":1,"eventType":"payment.captured","note":"x"}`), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash() != b.Hash() {
		t.Error("the same payment hashes differently")
	}
	c, _ := payment.Parse([]byte(with("amount", `"120.51"`)), "", 0)
	if a.Hash() == c.Hash() {
		t.Error("another amount hashes the same")
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
