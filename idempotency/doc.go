// Package idempotency is the idempotent receiver: a replayed or duplicated
// message never applies its effect twice.
//
// The key is a business key (the id the producer gives the record, such as
// a shipment id), scoped by consumer, never the SQS message id: a message
// replayed from the dead-letter queue is a new SQS message with a new id,
// and standard queues deliver at least once.
//
// Keys have one format, [Key]: "<scope>#<id>", hashed when long, so that a
// key is bounded ([MaxKeyBytes]) whatever the input. A scope is never empty
// and never contains '#', and a key is never empty: [Receiver.Validate] and
// [Receiver.Do] refuse them ([ErrInvalidScope], [ErrEmptyKey]).
//
// [Receiver.Do] claims the key with a conditional write in a [Store]: it
// succeeds when no record exists, when the record has expired, or when an
// IN_PROGRESS lock of the same payload (or one found void, see below) has
// passed its expiry (the invocation deadline of the holder, which then can
// no longer be running). It runs the effect, then completes the record with
// the result (what the downstream call returned, such as the id it gave the
// effect) and a hash of the payload. A failure before the effect releases
// the claim so the next delivery can proceed.
//
// An effect's error is either known not applied (it has a NotApplied() bool
// method that says true: the downstream answered with a failure) or
// ambiguous (a timeout, a connection reset after the request was sent: the
// effect may have happened). The first releases the claim. The second, with
// a [Resolver], looks the key up first: applied, the claim is completed
// with the result found and the call succeeds; never applied, released;
// unknown, the claim is kept until its lock expires, so that the next
// delivery is an in-doubt takeover (below) rather than a fresh claim, which
// a conflicting payload of the same key could win and be handed this
// payload's result. Without a resolver an ambiguous error releases, as a
// known failure does.
//
// After the effect, the effect is never redone by that call: the completion
// is retried with backoff within the invocation's time; if it still cannot
// be recorded, the call succeeds with [Outcome].Unrecorded set and
// [Receiver].OnUnrecorded is told, so the message is acknowledged and the
// gap counted rather than the effect applied twice.
//
// A takeover of an expired IN_PROGRESS lock is in doubt: the dead holder may
// have applied the effect before it could complete. [Receiver.DoResolving]
// then asks a [Resolver] (the downstream, by Idempotency-Key) whether it was
// applied, and records its result instead of calling again when it was
// ([Outcome].InDoubt, [Outcome].Resolution); when the lookup fails, it keeps
// its claim (a transient [ErrInProgress]), so that the doubt survives until
// a lookup answers. An expired lock of another payload is in doubt too, and
// resolved first: never applied, the claim was void and the new payload
// takes the key over; applied, the holder's result is recorded and the new
// payload is a conflict; unknown, a transient [ErrInProgress]. Exactly once
// in effect therefore rests on this receiver and on a downstream that
// honours the key; without a resolver or such a downstream, a second effect
// is possible only inside that in-doubt window.
//
// Outcomes:
//
//   - first delivery: the effect runs once and its result is stored;
//   - a completed key with the same payload hash, or one of another hash
//     version: the stored result is returned and the effect does not run
//     ([Outcome].Duplicate);
//   - a completed key with another payload hash of the same version, or an
//     expired lock of another payload found applied: [ErrConflict] (the caller routes the
//     message to the invalid lane as a conflicting duplicate);
//   - an expired lock of another payload found never applied: the effect
//     runs for the new payload, which now owns the key;
//   - an effect that failed ambiguously and was found applied: its result
//     is stored and returned ([Outcome].InDoubt);
//   - a key held by another live invocation, or by an expired lock of
//     another payload that could not be resolved, or a doubt of this call
//     (a takeover, an ambiguous failure) that the resolver could not
//     resolve, the claim kept: [ErrInProgress], a transient failure; SQS
//     delivers the message again later.
//
// Payload hashes compare only within one version ([payload.HashVersionOf]:
// "jcs1" for [payload.Hash] of a whole body, "jcs1p" and the part's
// identity for a part, "" for an unversioned hash an earlier build wrote).
// A record whose hash is of another version than the caller's keeps its
// meaning until it expires: COMPLETED, it is a duplicate absorbed; a live
// lock, in progress; an expired lock, taken over in doubt as one of the
// same payload. So an upgrade of the hash, or a change of the hashed part,
// never turns a record in flight into a false conflict; the price is that a
// conflicting payload that arrives across the change is taken for a
// duplicate, not sent to the invalid lane.
//
// Records outlive source plus DLQ retention (default [DefaultLifetime]). The
// expiry is checked in the write condition; the store also sets a TTL
// attribute so that DynamoDB can clean up, but never relies on its deletion,
// which lags by up to 48 hours and is not run by emulators.
//
// Implementations: [MemoryStore] here, for tests and single-process use, and
// dynamo for DynamoDB. Both pass the contract suite in
// idempotencytest.
package idempotency
