package invoicing

import (
	"sync"

	"github.com/homingdlq/homing/payload"
)

// KeyExpr is the business key of an order.created body, the expression
// (payload.NewKey) the orders route of the replay is configured with.
const KeyExpr = "orderId"

// HashPart selects the part of an order.created body that its payload hash
// covers (payload.NewHash): the fields Parse validates, so that a field the
// sample does not read (a producer's trace id, a note on an item) changes
// nothing, while any change to a field it reads is another payload. The
// orders route of the replay is configured with the same expression, so that
// it computes, with no domain code, the hash the consumer's records hold. It
// fits the construct's bound on an expression (deadletter.MaxExpressionBytes,
// 256 bytes: TestHashPartFitsTheConstruct).
const HashPart = "{eventType: eventType, version: version, orderId: orderId, createdAt: createdAt, " +
	"customer: customer.{name: name, taxId: taxId, email: email}, " +
	"items: items[*].{sku: sku, quantity: quantity, unitPrice: unitPrice}, total: total, currency: currency}"

// orderHash is HashPart compiled, once.
var orderHash = sync.OnceValues(func() (payload.Hash, error) { return payload.NewHash(HashPart) })

// PayloadHash is the payload hash the handler's idempotency record holds
// for a message body: payload.Hash over HashPart, ok=false when the body
// does not hash (not JSON, more than payload.MaxBody bytes). The replay
// engine compares it with the consumer's completed records to remove dead
// letters that were applied already (replay.Options.PayloadHash).
func PayloadHash(body string) (hash string, ok bool) {
	h, err := orderHash()
	if err != nil {
		return "", false
	}
	sum, err := h.Sum([]byte(body))
	return sum, err == nil
}
