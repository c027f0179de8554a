// Package clip cuts text to a byte bound, for the strings we quote from
// others (a service's error message, a rejection's detail) into our own
// bounded metadata.
package clip

import (
	"strings"
	"unicode/utf8"
)

// Marker ends a string that was cut.
const Marker = "..."

// String returns s when it has at most n bytes, and otherwise its first n
// bytes or fewer, cut on a rune boundary, followed by [Marker] (so at most
// n+3 bytes). A string String returned is returned as it is (at most n
// bytes followed by Marker is taken as cut already), so cutting twice cuts
// once: a bounded value read back and written again does not change.
// Invalid UTF-8 is dropped either way. It is pure and safe for concurrent
// use.
func String(s string, n int) string {
	if len(s) <= n || strings.HasSuffix(s, Marker) && len(s)-len(Marker) <= max(n, 0) {
		return strings.ToValidUTF8(s, "")
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + Marker
}
