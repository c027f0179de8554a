package clip_test

import (
	"testing"

	"github.com/homingdlq/homing/internal/clip"
)

func TestString(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		want     string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "abcde..."},
		{"on a rune boundary", "abcdé", 5, "abcd..."},
		{"invalid UTF-8 dropped", "a\xffb", 5, "ab"},
		{"zero", "abc", 0, "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clip.String(tt.in, tt.n); got != tt.want {
				t.Fatalf("String(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}
