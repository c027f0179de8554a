package printable

import (
	"io"
	"unicode"
	"unicode/utf8"
)

// String returns s with every control character (C0, DEL, C1), format
// character (Unicode Cf: bidi controls, zero-width characters, U+FEFF,
// tags), line or paragraph separator and byte of invalid UTF-8 escaped:
// \xHH below U+0080 and for a byte of invalid UTF-8, \uHHHH up to U+FFFF,
// \UHHHHHHHH above. Line feeds and tabs are escaped too, so that a value
// keeps to its line and column. A run of backslashes is doubled only
// before an escape or before text that reads as one (x, u or U and 2, 4
// or 8 hexadecimal digits): a JSON body's \n or \" shows as it is. The
// result is valid UTF-8; two strings never give the same. It is pure and
// safe for concurrent use.
func String(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	return string(appendShown(make([]byte, 0, len(s)+16), s, false))
}

// escapes reports whether r is shown escaped. \n and \t are, except in
// layout, the text of a [Writer].
func escapes(r rune, layout bool) bool {
	if layout && (r == '\n' || r == '\t') {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// needsEscape reports whether s would change: it has a rune that escapes,
// invalid UTF-8, or (not in layout) a backslash.
func needsEscape(s string, layout bool) bool {
	for i, r := range s {
		if r == '\\' && !layout || r == utf8.RuneError && isInvalid(s[i:]) || escapes(r, layout) {
			return true
		}
	}
	return false
}

// isInvalid reports whether s starts with a byte of invalid UTF-8.
func isInvalid(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && n == 1
}

// appendShown appends s to b as [String] shows it or, in layout, as
// [Writer] does: line feeds and tabs as they are, backslashes untouched.
func appendShown(b []byte, s string, layout bool) []byte {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = appendHex(append(b, '\\', 'x'), uint32(s[i]), 2)
		case escapes(r, layout):
			b = appendEscape(b, r)
		case r == '\\' && !layout:
			run := i
			for i < len(s) && s[i] == '\\' {
				i++
			}
			b = append(b, s[run:i]...)
			if i < len(s) && (readsAsEscape(s[i:]) || startsEscaped(s[i:])) {
				b = append(b, s[run:i]...) // doubled
			}
			continue
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

// appendEscape appends the escape of rune r.
func appendEscape(b []byte, r rune) []byte {
	switch {
	case r < utf8.RuneSelf:
		return appendHex(append(b, '\\', 'x'), uint32(r), 2)
	case r <= 0xFFFF:
		return appendHex(append(b, '\\', 'u'), uint32(r), 4)
	default:
		return appendHex(append(b, '\\', 'U'), uint32(r), 8)
	}
}

func appendHex(b []byte, v uint32, digits int) []byte {
	const hex = "0123456789abcdef"
	for d := digits - 1; d >= 0; d-- {
		b = append(b, hex[v>>(4*d)&0xf])
	}
	return b
}

// startsEscaped reports whether s starts with what [String] escapes.
func startsEscaped(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isInvalid(s) || escapes(r, false)
}

// readsAsEscape reports whether s starts with text that, after a
// backslash, reads as an escape: x, u or U and 2, 4 or 8 hexadecimal
// digits.
func readsAsEscape(s string) bool {
	digits := 0
	switch s[0] {
	case 'x':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	}
	if digits == 0 || len(s) <= digits {
		return false
	}
	for _, c := range []byte(s[1 : 1+digits]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Writer writes text to an io.Writer with what [String] escapes escaped,
// but for line feeds and tabs, which are the text's layout, and
// backslashes, which it leaves as they are: text that String returned
// passes unchanged. A rune cut at the end of one Write is completed by the
// next; [Writer.Flush] writes a cut one left at the end. A Writer is not
// safe for concurrent use.
type Writer struct {
	w    io.Writer
	tail []byte // the start of a rune cut at the end of the last Write
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p escaped. It returns len(p) when it wrote it all, and the
// error of the underlying writer otherwise.
func (w *Writer) Write(p []byte) (int, error) {
	s := string(append(w.tail, p...))
	w.tail = w.tail[:0]
	// Hold back the start of a rune that the next Write may complete.
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				w.tail = append(w.tail, s[i:]...)
				s = s[:i]
			}
			break
		}
	}
	if err := w.write(s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the start of a rune that the last Write cut, escaped as
// invalid UTF-8.
func (w *Writer) Flush() error {
	s := string(w.tail)
	w.tail = w.tail[:0]
	return w.write(s)
}

func (w *Writer) write(s string) error {
	if s == "" {
		return nil
	}
	var err error
	if needsEscape(s, true) {
		_, err = w.w.Write(appendShown(make([]byte, 0, len(s)+16), s, true))
	} else {
		_, err = io.WriteString(w.w, s)
	}
	return err
}
