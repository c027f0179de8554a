package order

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckOrderID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"plain", "ORD-2026-000123", true},
		{"every allowed punctuation", "a-b_c.d:e/f#g", true},
		{"longest", strings.Repeat("A", MaxOrderIDBytes), true},
		{"one too long", strings.Repeat("A", MaxOrderIDBytes+1), false},
		{"empty", "", false},
		{"control character", "ORD-1\n", false},
		{"tab inside", "ORD\t1", false},
		{"space inside", "ORD 1", false},
		{"DEL", "ORD\x7f1", false},
		{"replacement character", "ORD-\uFFFD", false},
		{"invalid UTF-8", "ORD-\xff", false},
		{"non-ASCII letter", "ORDÉ-1", false},
		{"quote", `ORD"1`, false},
		{"backslash", `ORD\1`, false},
		{"leading space", " ORD-1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detail := CheckOrderID(tt.id)
			if got := detail == ""; got != tt.ok {
				t.Fatalf("CheckOrderID(%q) = %q, want ok=%v", tt.id, detail, tt.ok)
			}
			if len(detail) > 200 {
				t.Fatalf("detail too long: %q", detail)
			}
		})
	}
}

// Ids outside the grammar are invalid with their own reason, before the
// JSON decoder can collapse invalid UTF-8 or a lone surrogate into U+FFFD
// (two different ids would then share one idempotency key).
func TestParseRejectsOrderIDsOutsideTheGrammar(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"control character", derive(set("orderId", "ORD-1\u0001"))},
		{"too long", derive(set("orderId", strings.Repeat("9", MaxOrderIDBytes+1)))},
		{"invalid UTF-8", strings.Replace(sample, `"ORD-2026-000123"`, "\"ORD-\xff\"", 1)},
		{"other invalid UTF-8", strings.Replace(sample, `"ORD-2026-000123"`, "\"ORD-\xfe\"", 1)},
		{"lone surrogate escape", strings.Replace(sample, `"ORD-2026-000123"`, `"ORD-\ud800"`, 1)},
		{"escaped replacement character", strings.Replace(sample, `"ORD-2026-000123"`, `"ORD-\ufffd"`, 1)},
		{"space inside", derive(set("orderId", "ORD 1"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.body), 0)
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Reason != ReasonInvalidOrderID {
				t.Fatalf("err = %v, want %s", err, ReasonInvalidOrderID)
			}
			if strings.ContainsRune(inv.Detail, '\uFFFD') || strings.ContainsAny(inv.Detail, "\x00\x01") || strings.Contains(inv.Detail, "\xff") {
				t.Fatalf("detail %q repeats the bad bytes", inv.Detail)
			}
		})
	}
}
