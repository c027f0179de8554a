package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/homingdlq/homing/internal/settings"
)

// MaxKeyBytes bounds every key [Key] returns, far below DynamoDB's 2,048-byte
// partition key limit.
const MaxKeyBytes = 256

// hashedMarker starts the id part of a hashed key. An id that starts with
// the marker is hashed too, so a plain id can never spell a hashed key.
const hashedMarker = "sha256~"

// Key is the one format of an idempotency key, used wherever a key is built
// or read (the receiver, the replay engine's completion check, the audit):
// settings.ScopedKey, "<scope>#<id>", when that fits in [MaxKeyBytes] (an
// id of up to 128 bytes that does not start with "sha256~" does, for a
// scope of up to 127 bytes), otherwise "<scope>#sha256~<hex SHA-256 of
// id>", or "sha256~<hex SHA-256 of scope, NUL, id>" when even that would
// not fit (a very long scope). The result never exceeds MaxKeyBytes
// whatever the input; two different (scope, id) pairs get different keys
// (up to SHA-256 collisions) provided scope contains no
// settings.KeySeparator. docs/CONTRACT.md states this format for other
// runtimes. It is pure and safe for concurrent use.
func Key(scope, id string) string {
	if len(scope)+len(settings.KeySeparator)+len(id) <= MaxKeyBytes && !strings.HasPrefix(id, hashedMarker) {
		return settings.ScopedKey(scope, id)
	}
	if len(scope)+len(settings.KeySeparator)+len(hashedMarker)+2*sha256.Size <= MaxKeyBytes {
		sum := sha256.Sum256([]byte(id))
		return settings.ScopedKey(scope, hashedMarker+hex.EncodeToString(sum[:]))
	}
	sum := sha256.Sum256([]byte(scope + "\x00" + id))
	return hashedMarker + hex.EncodeToString(sum[:])
}
