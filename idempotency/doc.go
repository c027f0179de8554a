// Package idempotency is the idempotent receiver: a replayed or duplicated
// message never applies its effect twice.
//
// [Receiver.Do] claims a business key ([Key]: "<scope>#<id>", at most
// [MaxKeyBytes]) in a [Store] with a conditional write, runs the effect
// once, and completes the record with the effect's result and the payload's
// hash. A completed key with the same payload returns the stored result
// ([Outcome].Duplicate); with another payload, [ErrConflict]; a key held by
// a live invocation, or a doubt no lookup resolved, [ErrInProgress]
// (transient). An effect's error whose NotApplied() says true releases
// the claim. [Receiver.DoResolving] asks a [Resolver] whether an effect in
// doubt (an ambiguous error, a takeover of an expired lock) was applied,
// and records its result instead of calling again. An empty key or a bad
// scope is refused ([ErrEmptyKey], [ErrInvalidScope]).
//
// [MemoryStore] is here, dynamo has the DynamoDB store, idempotencytest the
// contract suite. The protocol and its races: docs/PACKAGES.md#idempotency.
package idempotency
