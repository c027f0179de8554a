package payment

import (
	"fmt"
	"sync"

	"github.com/homingdlq/homing/payload"
)

// KeyExpr is the business key of a payment.captured body: the JMESPath
// expression (payload.NewKey) that the lane's replay route is configured
// with.
const KeyExpr = "paymentId"

// HashPart selects the part of a payment.captured body that its payload
// hash covers (payload.NewHash): the fields Parse validates, so that member
// order, spacing, escapes and fields the lane does not read do not change
// it, and any change to a field it reads (the time's zone included) is
// another content. The lane's replay route is configured with the same
// expression, so that it computes, with no domain code, the hash the
// consumer's records hold.
const HashPart = "{paymentId: paymentId, accountId: accountId, capturedAt: capturedAt, amount: amount, currency: currency}"

// hash is HashPart compiled, once.
var hash = sync.OnceValues(func() (payload.Hash, error) { return payload.NewHash(HashPart) })

// PayloadHash is the payload hash of a payment.captured body: the contract
// of package payload (the part's version, ":" and the SHA-256 of the RFC
// 8785 form of the part HashPart selects). The error wraps
// payload.ErrNotJSON when the body does not hash. It is safe for concurrent
// use.
func PayloadHash(body []byte) (string, error) {
	h, err := hash()
	if err != nil {
		return "", fmt.Errorf("payment hash %q: %w", HashPart, err)
	}
	sum, err := h.Sum(body)
	if err != nil {
		return "", fmt.Errorf("payment hash: %w", err)
	}
	return sum, nil
}
