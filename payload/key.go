package payload

import (
	"math"
	"strconv"
	"strings"
)

// Key is a business key: a JMESPath expression over a JSON message body (the
// convention of Powertools' eventKeyJmesPath). The zero Key has no
// expression and never evaluates. A Key is safe for concurrent use.
type Key struct {
	e expr
}

// trimmed lists the code points a string key is trimmed of at both ends:
// JSON's own white space (RFC 8259), space, tab, line feed and carriage
// return; no other (docs/CONTRACT.md).
const trimmed = " \t\n\r"

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

// Of returns the key of body: k's result, a string trimmed of JSON white
// space and non-empty, or a number that is as written an integer of at most
// 2^53 in magnitude, as its decimal text ("12" for 12.0). Otherwise
// ok=false: another result, the zero Key, a body not JSON or over MaxBody
// (docs/CONTRACT.md#business-key). Of never panics.
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
		s := strings.Trim(r, trimmed)
		return s, s != ""
	case float64:
		if r != math.Trunc(r) || math.Abs(r) > maxExactInt {
			return "", false
		}
		return strconv.FormatInt(int64(r), 10), true
	}
	return "", false
}
