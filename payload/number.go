package payload

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// maxExactInt is the largest magnitude of a number that is a key (2^53):
// up to it, every integer is one IEEE double, the precision JMESPath
// evaluates numbers with.
const maxExactInt = 1 << 53

// numbers replaces each json.Number in v by the float64 it denotes, except
// a number whose double is an integer within the key's bound while its
// value as written is not that integer (9007199254740993, 12.0000000000000001,
// 1e-400): it stays a json.Number, which JMESPath does not read as a number
// and [Key.Of] refuses, so that two numbers as written never share a key.
// ok is false when a number is out of a double's range.
func numbers(v any) (out any, ok bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if t[k], ok = numbers(e); !ok {
				return nil, false
			}
		}
	case []any:
		for i, e := range t {
			if t[i], ok = numbers(e); !ok {
				return nil, false
			}
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		switch {
		case err != nil:
			return nil, false
		case f != math.Trunc(f) || math.Abs(f) > maxExactInt || exactInteger(string(t)):
			return f, true
		default:
			return t, true
		}
	}
	return v, true
}

// exactInteger reports whether s, a JSON number, is as written an integer
// of at most 2^53 in magnitude: "12", "12.0", "1.2e1" and "-0" are; "12.5",
// "1e-400" and "9007199254740993" are not. It reads the text only, so an
// exponent of any size costs nothing.
func exactInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	mantissa, exponent, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, fraction, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(whole+fraction, "0")
	significant := strings.TrimRight(digits, "0")
	if significant == "" {
		return true // zero, whatever its exponent
	}
	scale := len(digits) - len(significant) - len(fraction)
	if hasExp {
		e, err := strconv.Atoi(exponent)
		if err != nil || e > 1<<20 || e < -(1<<20) {
			return false // far past the bound, or far below 1
		}
		scale += e
	}
	if scale < 0 || len(significant)+scale > len(strconv.Itoa(maxExactInt)) {
		return false
	}
	n, err := strconv.ParseUint(significant+strings.Repeat("0", scale), 10, 64)
	return err == nil && n <= maxExactInt
}

// loneSurrogate reports whether body, JSON text, escapes a UTF-16
// surrogate that is not half of a high-low pair ("\ud800", "\udfff").
// Go's decoder reads each as U+FFFD, so two such keys would be one.
func loneSurrogate(body []byte) bool {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		i++ // the escaped character: "\\" is no escape of what follows
		if i >= len(body) || body[i] != 'u' {
			continue
		}
		r, ok := hex4(body[i+1:])
		if !ok {
			continue // not JSON: the decoder refuses it
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if i+2 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
				if low, ok := hex4(body[i+3:]); ok && low >= 0xDC00 && low <= 0xDFFF {
					i += 6
					continue
				}
			}
			return true
		}
	}
	return false
}

// hex4 reads the four hex digits b starts with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}
