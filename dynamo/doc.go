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
// [Ledger] implements replay.Ledger (and replay.BatchLedger: a batch's
// records in one TransactWriteItems) on a table with partition key
// [KeyAttribute] and sort key [SortKeyAttribute]; [Completions] implements
// replay.Completions by reading the idempotency table that
// [IdempotencyStore] writes. Each takes only the DynamoDB client methods it
// calls ([IdempotencyAPI], [LedgerAPI], [CompletionsAPI]), so a
// *dynamodb.Client or a hand-written fake fits.
//
// Errors: a failed write condition is an answer, not a failure: Claim and
// Mark return the standing record with false; Complete and Release return
// idempotency.ErrLeaseLost when the caller no longer holds the key, and a
// claim that keeps losing races returns idempotency.ErrInProgress (both
// found with errors.Is). Any other failure is the SDK's error wrapped with
// the operation, the key and the table. Every type here is safe for
// concurrent use.
//
// Items of the idempotency table:
//
//	pk            S  "<consumer>#<key>", the business key by the route's key expression
//	status        S  IN_PROGRESS | COMPLETED
//	payloadHash   S  hash of the validated payload
//	result        S  the effect's result (what the downstream call returned), once COMPLETED
//	lockToken     S  the claim that wrote the item
//	lockExpiresAt N  epoch milliseconds: the holder's invocation deadline (IN_PROGRESS only)
//	expiresAt     N  epoch seconds: the item counts as absent from then on (also the TTL attribute)
package dynamo
