// Package invalid is the codec of the Invalid Message Channel: the verdict
// ([Metadata]: reason, detail, source queue, original message id, time,
// consumer) that travels with a record sent to its own queue because it will
// never be valid, so that it can be fixed at the source instead of burning
// delivery attempts and polluting the dead-letter queue.
//
// The verdict travels in one String attribute named [AttributeName], packed
// by [Stamp] so that the message never exceeds SQS's ten attributes: when the
// producer already used all ten, one is folded into our attribute and [Read]
// restores it. A producer's own attribute called [AttributeName] (an earlier
// verdict sent back, or a forgery) is never decoded: it is kept as data under
// "homing-invalid.prev". Every metadata field is bounded ([MaxDetailBytes]
// and the others), so a message the lane's source queue accepted fits the
// invalid queue whole; a larger one travels in numbered parts.
//
// Errors: [Stamp] fails only when the producer's attributes are more than SQS
// delivers (ten); [Read] fails when our attribute is not what Stamp writes
// (not JSON, a field that does not decode or is over its bound, an overflow
// Stamp could not have written), and then returns no attributes smuggled in
// that way; what it returns, Stamp writes again unchanged. Both are
// pure functions, safe for concurrent use, and never modify their argument.
//
// The package needs no Lambda types: the publisher is batch.InvalidQueue (the
// consumer side), and the replay engine and the operator CLI read verdicts
// with [Read].
package invalid
