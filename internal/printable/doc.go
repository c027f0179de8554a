// Package printable shows text that others wrote (a message's body and
// attributes, a reason, an endpoint's status line) to a person at a
// terminal without letting it act on the terminal. [String] shows every
// control character (C0, DEL, C1), format character (bidi controls and
// overrides, zero-width characters, U+FEFF, tag characters), line and
// paragraph separator and byte of invalid UTF-8 escaped in Go's syntax
// (\x1b, \u202e, \xff), and a backslash doubled where it would otherwise
// read as one of those escapes: two strings never show the same.
// [Writer] escapes the same characters in a stream of text, but for the
// line feeds and tabs of its layout.
package printable
