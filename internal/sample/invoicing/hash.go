package invoicing

import "github.com/homingdlq/homing/internal/sample/order"

// PayloadHash is the payload hash the handler's idempotency record holds
// for a message body: the order's canonical hash, ok=false when the body is
// not a valid order (the largest one SQS carries is accepted). The replay
// engine compares it with the consumer's completed records to remove dead
// letters that were applied already (replay.Options.PayloadHash).
func PayloadHash(body string) (hash string, ok bool) {
	o, err := order.Parse([]byte(body), 1<<20)
	if err != nil {
		return "", false
	}
	return o.Hash(), true
}
