package printable_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/homingdlq/homing/internal/printable"
)

// FuzzString shows text of every class a producer or an endpoint can send
// (escape sequences, C0 and C1 controls, bidi overrides, separators,
// JSON-escaped controls as text, backslashes, invalid UTF-8). Properties:
//   - String's result is valid UTF-8 with no control, format or separator
//     rune (what a terminal acts on), the same on every call, and reads
//     back as the input (unescape): String is injective;
//   - a Writer given the input cut at any point writes valid UTF-8 with no
//     such rune but line feeds and tabs, the same as given it whole, and
//     passes what String returned unchanged.
func FuzzString(f *testing.F) {
	for _, s := range []string{
		"\x1b[2J\x1b[H", "\x1b]0;pwned\x07", "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",
		"ok\rFAKE\nnext\tcol", "\u009b31m\u0085", "txt.\u202eexe\u2066\u200b\ufeff\u2028", "\U000E0041",
		`{"orderId":"\u001b[2J"}`, `\x1b \\\u202e \U0001f600`, "\\\x1b", "a\xff\xc3", "plain ORD-1 é",
	} {
		f.Add(s, len(s)/2)
	}
	f.Fuzz(func(t *testing.T, s string, cut int) {
		got := printable.String(s)
		if !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q: invalid UTF-8", s, got)
		}
		if i := strings.IndexFunc(got, acts); i >= 0 {
			t.Fatalf("String(%q) = %q: %U at %d", s, got, []rune(got[i:])[0], i)
		}
		if again := printable.String(s); again != got {
			t.Fatalf("String(%q) = %q, then %q", s, got, again)
		}
		if back, ok := unescape(got); !ok || back != s {
			t.Fatalf("String(%q) = %q reads back as %q (%v)", s, got, back, ok)
		}

		cut = min(max(cut, 0), len(s))
		whole, pieces := written(t, s), written(t, s[:cut], s[cut:])
		if pieces != whole {
			t.Fatalf("Writer: %q whole wrote %q, cut at %d %q", s, whole, cut, pieces)
		}
		if !utf8.ValidString(whole) {
			t.Fatalf("Writer: %q wrote %q: invalid UTF-8", s, whole)
		}
		if i := strings.IndexFunc(whole, func(r rune) bool { return r != '\n' && r != '\t' && acts(r) }); i >= 0 {
			t.Fatalf("Writer: %q wrote %q: %U at %d", s, whole, []rune(whole[i:])[0], i)
		}
		if w := written(t, got); w != got {
			t.Fatalf("Writer: String's %q wrote %q", got, w)
		}
	})
}

// acts reports whether a terminal may act on r.
func acts(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) }

// written is what a Writer writes of the writes, flushed.
func written(t *testing.T, writes ...string) string {
	var out bytes.Buffer
	w := printable.NewWriter(&out)
	for _, s := range writes {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
