package order

import (
	"fmt"
	"unicode/utf8"
)

// MaxOrderIDBytes is the longest orderId the contract accepts.
const MaxOrderIDBytes = 128

// orderIDPunctuation are the characters besides ASCII letters and digits an
// orderId may contain.
const orderIDPunctuation = "-_.:/#"

// CheckOrderID returns "" when id is in the orderId grammar, and otherwise a
// short sentence saying which rule it breaks (never repeating the id's bytes).
//
// The grammar: 1..[MaxOrderIDBytes] bytes of ASCII letters, digits and the
// punctuation - _ . : / # (so no white space, no control character, nothing
// outside ASCII, and therefore valid UTF-8 that is safe as an HTTP header,
// a URL path segment once escaped, and a DynamoDB key). Parse applies it to
// the orderId after removing surrounding white space.
func CheckOrderID(id string) string {
	switch {
	case id == "":
		return "orderId is empty"
	case len(id) > MaxOrderIDBytes:
		return fmt.Sprintf("orderId is %d bytes, the limit is %d", len(id), MaxOrderIDBytes)
	case !utf8.ValidString(id):
		return "orderId is not valid UTF-8"
	}
	for i, r := range id {
		if !orderIDRune(r) {
			if r == utf8.RuneError {
				return "orderId is not valid UTF-8 (invalid bytes or a lone surrogate decode to U+FFFD)"
			}
			return fmt.Sprintf("orderId has %U at byte %d: allowed are ASCII letters, digits and %s", r, i, orderIDPunctuation)
		}
	}
	return ""
}

func orderIDRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	for _, p := range orderIDPunctuation {
		if r == p {
			return true
		}
	}
	return false
}
