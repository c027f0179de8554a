package order

import (
	"errors"
	"fmt"
	"testing"
)

func TestReasons(t *testing.T) {
	reasons := Reasons()
	if len(reasons) != 16 {
		t.Fatalf("Reasons() has %d codes, want 16", len(reasons))
	}
	seen := map[Reason]bool{}
	for _, r := range reasons {
		if r == "" {
			t.Error("Reasons() contains an empty code")
		}
		if seen[r] {
			t.Errorf("Reasons() lists %q twice", r)
		}
		seen[r] = true
	}
	reasons[0] = "changed"
	if Reasons()[0] != ReasonMalformedJSON {
		t.Error("Reasons() shares its slice between calls")
	}
}

func TestInvalidError(t *testing.T) {
	tests := []struct {
		name      string
		err       *InvalidError
		wantError string
	}{
		{"with detail", Invalid(ReasonNoItems, "items is missing or empty"), "no-items: items is missing or empty"},
		{"without detail", Invalid(ReasonNoItems, ""), "no-items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.wantError {
				t.Errorf("Error() = %q, want %q", got, tt.wantError)
			}
			// Another package recognises it through a small interface, wrapped.
			var inv interface {
				Invalid() (reason, detail string)
			}
			if !errors.As(fmt.Errorf("handle order ORD-1: %w", tt.err), &inv) {
				t.Fatal("errors.As through the Invalid interface failed")
			}
			reason, detail := inv.Invalid()
			if reason != string(tt.err.Reason) || detail != tt.err.Detail {
				t.Errorf("Invalid() = (%q, %q), want (%q, %q)", reason, detail, tt.err.Reason, tt.err.Detail)
			}
		})
	}
}
