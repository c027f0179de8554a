package main

import "testing"

// TestReleaseText: a release build's stamped version replaces the module
// version and keeps the rest of the build information; other builds show
// the build information as it is.
func TestReleaseText(t *testing.T) {
	for _, tc := range []struct {
		name, stamped, text, want string
	}{
		{"not a release build", "", "(devel) (commit 0123456789ab, go1.26.8)", "(devel) (commit 0123456789ab, go1.26.8)"},
		{"a release build", "v0.1.0", "(devel) (commit 0123456789ab, 2026-12-01T10:00:00Z, go1.26.8)", "v0.1.0 (commit 0123456789ab, 2026-12-01T10:00:00Z, go1.26.8)"},
		{"a release build without details", "v0.1.0", "(devel)", "v0.1.0"},
		{"a release build without build information", "v0.1.0", "unknown (built without module support)", "v0.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := releaseText(tc.stamped, tc.text); got != tc.want {
				t.Errorf("releaseText(%q, %q) = %q, want %q", tc.stamped, tc.text, got, tc.want)
			}
		})
	}
}
