// Package dynamo holds the DynamoDB adapters of the project's stores:
// [IdempotencyStore] (idempotency.Store), [Ledger] (replay.Ledger),
// [Completions] (replay.Completions, read from the idempotency table) and
// [GroupStore] (fifo.Store). Each takes an [API], which a *dynamodb.Client
// or a fake has; every type is safe for concurrent use.
//
// Every state change is one conditional write, its expiry checked in the
// condition, never left to TTL deletion. A failed condition is an answer:
// Claim and Mark return the standing record with false; Complete and Release
// return idempotency.ErrLeaseLost when the caller no longer holds the key; a
// claim that keeps losing races returns idempotency.ErrInProgress. Any other
// failure wraps the SDK's error with the operation, the key and the table.
//
// The tables' items and the reasons are in docs/PACKAGES.md#dynamo.
package dynamo
