package idempotency_test

import (
	"strings"
	"testing"

	"github.com/homingdlq/homing/idempotency"
)

func TestKey(t *testing.T) {
	long := strings.Repeat("9", 3000)
	tests := []struct {
		name, scope, id string
		want            string // "" when the key is hashed
	}{
		{"plain", "invoice", "ORD-1", "invoice#ORD-1"},
		{"grammar's longest id", "invoice", strings.Repeat("A", 128), "invoice#" + strings.Repeat("A", 128)},
		{"over the bound", "invoice", long, ""},
		{"looks hashed", "invoice", "sha256~abc", ""},
		{"long scope", strings.Repeat("s", 300), "ORD-1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := idempotency.Key(tt.scope, tt.id)
			if len(got) > idempotency.MaxKeyBytes {
				t.Fatalf("key is %d bytes, bound is %d", len(got), idempotency.MaxKeyBytes)
			}
			if got != idempotency.Key(tt.scope, tt.id) {
				t.Fatal("not deterministic")
			}
			if tt.want != "" && got != tt.want {
				t.Fatalf("Key = %q, want %q", got, tt.want)
			}
			if tt.want == "" && strings.Contains(got, tt.id) {
				t.Fatalf("Key = %q, want the id hashed", got)
			}
		})
	}
	if idempotency.Key("invoice", long) == idempotency.Key("invoice", long+"0") {
		t.Fatal("two long ids share a key")
	}
	if idempotency.Key("invoice", long) == idempotency.Key("shipping", long) {
		t.Fatal("two scopes share a key")
	}
	// A plain id can never spell the hashed key of another id.
	hashed := idempotency.Key("invoice", long)
	id, _ := strings.CutPrefix(hashed, "invoice#")
	if idempotency.Key("invoice", id) == hashed {
		t.Fatal("an id equal to a hashed key's tail gets that key")
	}
}
