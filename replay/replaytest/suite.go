package replaytest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// maxQueueBase bounds the part of a queue name that queueName takes from
// t.Name(), so that the role and ".fifo" fit in SQS's 80 characters.
const maxQueueBase = 60

// queueName is a queue name of t's own: t.Name() in the letters, digits and
// hyphens SQS allows (a long name keeps its tail and gains a hash of the
// whole), then "-" and role; a role ending in ".fifo" names a FIFO queue.
func queueName(t *testing.T, role string) string {
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	if len(base) > maxQueueBase {
		sum := sha256.Sum256([]byte(t.Name()))
		base = base[len(base)-maxQueueBase+9:] + "-" + hex.EncodeToString(sum[:4])
	}
	return base + "-" + role
}
