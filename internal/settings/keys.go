package settings

import "strings"

// KeySeparator joins a scope and an id in a key: an idempotency key is
// "<scope>#<id>" (the consumer's name, then the orderId), a replay ledger
// key "order#<orderId>" or "message#<messageId>". A consumer's name never
// contains it (see [ConsumerName]), so the first one ends the scope.
const KeySeparator = "#"

// ScopedKey is the one spelling of a scoped key: scope, [KeySeparator], id.
func ScopedKey(scope, id string) string { return scope + KeySeparator + id }

// SplitKey splits a [ScopedKey] at its first separator; ok is false when key
// has none.
func SplitKey(key string) (scope, id string, ok bool) {
	return strings.Cut(key, KeySeparator)
}

// FIFOSuffix ends the name, and so the URL and the ARN, of every SQS FIFO
// queue.
const FIFOSuffix = ".fifo"

// IsFIFO reports whether a queue name, URL or ARN names a FIFO queue.
func IsFIFO(nameURLOrARN string) bool { return strings.HasSuffix(nameURLOrARN, FIFOSuffix) }

// DefaultRouteName names a lane's route in REPLAY_ROUTES when the construct
// is not told otherwise; `dlq` assumes it when the replay function's
// configuration names none.
const DefaultRouteName = "orders"

// MaxRouteNameBytes bounds a replay route's name: it travels in the replay
// metadata the engine seals, which must stay within the engine's bounds to
// verify. The replay (replay.Route.Validate) and the construct refuse a
// longer one.
const MaxRouteNameBytes = 256
