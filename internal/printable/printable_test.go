package printable_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/homingdlq/homing/internal/printable"
)

func TestString(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "order ORD-1 é 日本 🙂", "order ORD-1 é 日本 🙂"},
		{"empty", "", ""},
		{"clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"window title (OSC 0)", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"hyperlink (OSC 8)", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example\x1b\click\x1b]8;;\x1b\`},
		{"carriage return", "ok\rFAKE", `ok\x0dFAKE`},
		{"line feed and tab stay in the value", "a\nb\tc", `a\x0ab\x09c`},
		{"NUL, backspace, BEL, DEL", "\x00\b\a\x7f", `\x00\x08\x07\x7f`},
		{"C1 CSI", "\u009b2J", `\u009b2J`},
		{"C1 NEL", "a\u0085b", `a\u0085b`},
		{"bidi override", "txt.\u202eexe", `txt.\u202eexe`},
		{"bidi isolates and marks", "\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"zero width and BOM", "a\u200bb\u200dc\ufeff", `a\u200bb\u200dc\ufeff`},
		{"line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"tag character", "a\U000E0041", `a\U000e0041`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"replacement character is text", "\ufffd", "\ufffd"},
		{"JSON escapes as they are", `{"a":"x\n\"y\\"}`, `{"a":"x\n\"y\\"}`},
		{"Windows path", `C:\temp\new`, `C:\temp\new`},
		{"backslash before hex text doubled", `\x1b \u202e \U0001f600 \X41`, `\\x1b \\u202e \\U0001f600 \X41`},
		{"backslash before too few digits", `\x1 \u20 \xg1`, `\x1 \u20 \xg1`},
		{"backslash run before an escape", "\\\\\x1b", `\\\\\x1b`},
		{"backslash run at the end", `a\\`, `a\\`},
		{"JSON-escaped ESC as text", `{"k":"\u001b[2J"}`, `{"k":"\\u001b[2J"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := printable.String(tt.in)
			if got != tt.want {
				t.Fatalf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if back, ok := unescape(got); !ok || back != tt.in {
				t.Fatalf("String(%q) = %q reads back as %q (%v)", tt.in, got, back, ok)
			}
		})
	}
}

func TestWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"layout kept", []string{"a\tb\n", "c\n"}, "a\tb\nc\n"},
		{"controls escaped", []string{"x\x1b]0;t\x07\r\u202e\u009b\n"}, `x\x1b]0;t\x07\x0d\u202e\u009b` + "\n"},
		{"backslashes left as they are", []string{`\x1b \\ ` + "\n"}, `\x1b \\ ` + "\n"},
		{"what String returned passes", []string{printable.String("a\x1b\\x1b\n")}, printable.String("a\x1b\\x1b\n")},
		{"a rune cut between writes", []string{"caf\xc3", "\xa9 \xe2\x80", "\xae\n"}, `café \u202e` + "\n"},
		{"a cut rune at the end", []string{"a\xe2\x80"}, `a\xe2\x80`},
		{"invalid UTF-8", []string{"\xff\xfe"}, `\xff\xfe`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := printable.NewWriter(&out)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Fatalf("wrote %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// unescape reads back what String returned: a run of backslashes before
// text that reads as an escape is half literal backslashes and, when odd,
// an escape; any other run is literal. ok is false on what String cannot
// have returned.
func unescape(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		run := i
		for i < len(s) && s[i] == '\\' {
			i++
		}
		m := i - run
		digits := escapeDigits(s[i:])
		if digits == 0 {
			b.WriteString(s[run:i])
			continue
		}
		b.WriteString(strings.Repeat(`\`, m/2))
		if m%2 == 0 {
			continue
		}
		v, err := strconv.ParseUint(s[i+1:i+1+digits], 16, 32)
		if err != nil || strings.ToLower(s[i+1:i+1+digits]) != s[i+1:i+1+digits] {
			return "", false
		}
		switch r := rune(v); {
		case s[i] == 'x' && v >= utf8.RuneSelf:
			b.WriteByte(byte(v)) // a byte of invalid UTF-8
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			b.WriteRune(r)
		default:
			return "", false // String escapes nothing else
		}
		i += 1 + digits
	}
	return b.String(), true
}

// escapeDigits is the number of hexadecimal digits of the escape s starts
// with after a backslash (x: 2, u: 4, U: 8); 0 when it reads as none.
func escapeDigits(s string) int {
	if s == "" {
		return 0
	}
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if digits == 0 || len(s) < 1+digits {
		return 0
	}
	if _, err := strconv.ParseUint(s[1:1+digits], 16, 64); err != nil { // ParseUint in base 16 takes no sign, prefix or _
		return 0
	}
	return digits
}
