// Package dynamo holds the DynamoDB adapters of the project's stores.
//
// [IdempotencyStore] implements idempotency.Store on a table whose partition
// key is the String attribute [KeyAttribute] and whose TTL attribute is
// [TTLAttribute] (epoch seconds). Every state change is one conditional
// write, so two invocations racing for the same key cannot both win, and the
// expiry of a record and of a lock is checked in the condition itself: the
// store never depends on DynamoDB's TTL deletion, which lags by up to 48 hours
// and which emulators do not run.
//
// Items of the idempotency table:
//
//	pk            S  "<consumer>#<orderId>"
//	status        S  IN_PROGRESS | COMPLETED
//	payloadHash   S  hash of the validated payload
//	result        S  the effect's result (the invoice number), once COMPLETED
//	lockToken     S  the claim that wrote the item
//	lockExpiresAt N  epoch milliseconds: the holder's invocation deadline (IN_PROGRESS only)
//	expiresAt     N  epoch seconds: the item counts as absent from then on (also the TTL attribute)
package dynamo
