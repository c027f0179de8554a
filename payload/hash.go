package payload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gowebpki/jcs"
)

// HashVersion is the version of a hash of the whole body: "jcs1:" +
// lowercase hex SHA-256 of the RFC 8785 canonical JSON of the body. The
// hash of a part carries the part's own version (see [Hash.Sum]).
const HashVersion = "jcs1"

// Hash is the payload hash contract, versioned. The zero Hash hashes the
// whole body. A Hash is safe for concurrent use.
type Hash struct {
	part    expr
	version string
}

// NewHash compiles part, the JMESPath expression selecting the hashed part
// of the body (Powertools' payloadValidationJmesPath); "" hashes the whole
// body. A syntax error, a part that is not valid UTF-8, or one with the
// object wildcard (see the package doc) is an error naming the expression.
func NewHash(part string) (Hash, error) {
	if part == "" {
		return Hash{}, nil
	}
	e, err := compile("hash part", part)
	if err != nil {
		return Hash{}, err
	}
	return Hash{part: e, version: partVersion(part)}, nil
}

// partVersion is the version of the hashes of part: HashVersion, "p", and
// the first 11 lowercase hex digits of the SHA-256 of part's text, 16
// characters in all. Another part is another version, so a record hashed
// under the old part is never compared with a body hashed under the new.
func partVersion(part string) string {
	sum := sha256.Sum256([]byte(part))
	return HashVersion + "p" + hex.EncodeToString(sum[:])[:11]
}

// Part is the part expression's text, "" when the whole body is hashed.
func (h Hash) Part() string { return h.part.text }

// versionOf is the version h writes.
func (h Hash) versionOf() string {
	if h.version == "" {
		return HashVersion
	}
	return h.version
}

// Sum returns the body's hash: its version ([HashVersion] for the whole body,
// "jcs1p" and 11 hex digits for a part), ":", and 64 lowercase hex digits
// (docs/CONTRACT.md#payload-hash). The error wraps ErrNotJSON when the body
// is not I-JSON or is larger than MaxBody, and ErrNoPart when the part
// expression yields null or nothing, or fails. Sum never panics.
func (h Hash) Sum(body []byte) (string, error) {
	if len(body) > MaxBody {
		return "", fmt.Errorf("hash a body of %d bytes (at most %d): %w", len(body), MaxBody, ErrNotJSON)
	}
	canon, err := canonical(body)
	if err != nil {
		return "", fmt.Errorf("hash body: %w", err)
	}
	if h.part.jp != nil {
		if canon, err = h.selected(canon); err != nil {
			return "", err
		}
	}
	sum := sha256.Sum256(canon)
	return h.versionOf() + ":" + hex.EncodeToString(sum[:]), nil
}

// selected is the canonical JSON of the part h selects in canon.
func (h Hash) selected(canon []byte) ([]byte, error) {
	// Not decode: canon is bounded by the body it came from, but may be
	// longer than it (1e20 is 21 digits in RFC 8785).
	var v any
	if err := json.Unmarshal(canon, &v); err != nil {
		return nil, fmt.Errorf("hash body: %w: %v", ErrNotJSON, err)
	}
	out, ok := h.part.search(v)
	if !ok || out == nil {
		return nil, fmt.Errorf("hash part %q: %w", h.part.text, ErrNoPart)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("hash part %q: %w", h.part.text, ErrNoPart)
	}
	c, err := canonical(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("hash part %q: %w", h.part.text, err)
	}
	return c, nil
}

// canonical is the RFC 8785 form of body, an error wrapping ErrNotJSON when
// body is not one JSON value.
func canonical(body []byte) (out []byte, err error) {
	defer func() {
		if recover() != nil {
			out = nil
			err = ErrNotJSON
		}
	}()
	out, err = jcs.Transform(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	return out, nil
}

// Same compares a recorded hash with body's. comparable is false when
// recorded carries another version than the one h writes (an unversioned
// legacy hash, another contract, or the hash of another part) or when body
// does not hash: the caller must not call that a conflict. Otherwise same
// reports whether the two are equal.
func (h Hash) Same(recorded string, body []byte) (same, comparable bool) {
	if HashVersionOf(recorded) != h.versionOf() {
		return false, false
	}
	sum, err := h.Sum(body)
	if err != nil {
		return false, false
	}
	return sum == recorded, true
}

// HashVersionOf is the version a hash carries: the text before its first
// ':' when that is a version name (lowercase letters and digits, starting
// with a letter, at most 16), "" for an unversioned hash.
func HashVersionOf(h string) string {
	v, _, found := strings.Cut(h, ":")
	if !found || !isVersion(v) {
		return ""
	}
	return v
}

// isVersion reports whether v is a version name.
func isVersion(v string) bool {
	if v == "" || len(v) > 16 || v[0] < 'a' || v[0] > 'z' {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
