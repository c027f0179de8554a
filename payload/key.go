package payload

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Key is a business key: a JMESPath expression over a JSON message body (the
// convention of Powertools' eventKeyJmesPath). The zero Key has no
// expression and never evaluates. A Key is safe for concurrent use.
type Key struct {
	e expr
}

// maxExactInt is the largest integer a JSON number keeps exactly in an IEEE
// double (2^53), the precision JMESPath evaluates numbers with.
const maxExactInt = 1 << 53

// NewKey compiles expr. An empty expr gives the zero Key, which never
// evaluates. A syntax error, an expr that is not valid UTF-8, or one with
// the object wildcard (see the package doc) is an error naming the
// expression.
func NewKey(expr string) (Key, error) {
	if expr == "" {
		return Key{}, nil
	}
	e, err := compile("key", expr)
	if err != nil {
		return Key{}, err
	}
	return Key{e: e}, nil
}

// Expr is the expression's text, "" for the zero Key.
func (k Key) Expr() string { return k.e.text }

// IsZero reports whether k has no expression.
func (k Key) IsZero() bool { return k.e.jp == nil }

// Of evaluates k over body. A string result, trimmed of white space,
// non-empty and valid UTF-8, is the key; so is an integral JSON number (its decimal text,
// "12" for 12 or 12.0) of at most 2^53 in magnitude, beyond which a double
// no longer tells two numbers apart. Anything else is ok=false: the zero
// Key, an absent field, null, an object, an array, a bool, a fraction, a
// body that is not JSON or is larger than MaxBody, an empty string. Of never
// panics.
func (k Key) Of(body []byte) (key string, ok bool) {
	if k.IsZero() {
		return "", false
	}
	v, ok := decode(body)
	if !ok {
		return "", false
	}
	out, ok := k.e.search(v)
	if !ok {
		return "", false
	}
	switch r := out.(type) {
	case string:
		s := strings.TrimSpace(r)
		return s, s != "" && utf8.ValidString(s)
	case float64:
		if r != math.Trunc(r) || math.Abs(r) > maxExactInt {
			return "", false
		}
		return strconv.FormatInt(int64(r), 10), true
	}
	return "", false
}
