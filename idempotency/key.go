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

// Key returns the idempotency key of id in scope: "<scope>#<id>" when that
// fits in [MaxKeyBytes] and id does not start with "sha256~", otherwise a
// form hashed with SHA-256 (docs/CONTRACT.md#keys-in-the-records). It never
// exceeds MaxKeyBytes; distinct (scope, id) pairs get distinct keys, up to
// SHA-256 collisions, when scope contains no '#'. It is pure and safe for
// concurrent use.
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
