// Package invoicing is the invoice consumer's record handler: it turns one
// order.created message into exactly one invoice.
//
// [Handler.Handle] plugs into batch. For each record it validates
// the order (an invalid order goes to the invalid lane with its reason), then
// issues the invoice through the tax service inside the idempotent receiver
// keyed by orderId: a duplicate or replayed delivery returns the stored
// invoice number without calling the service again, and the same orderId with
// a different payload is a conflicting duplicate (invalid lane). A rejection
// by the tax service (HTTP 422) is invalid too; every other failure is
// transient, so SQS delivers the record again and, after maxReceiveCount
// receives, moves it to the dead-letter queue.
//
// Once the service has issued the invoice the record is acknowledged, even
// when the idempotency record cannot be completed (logged as unrecorded and
// counted: a redelivery would issue a second invoice). When a delivery takes
// over the expired claim of one that died after calling the service, the
// handler first asks the service, through [Handler].Lookup, whether that
// Idempotency-Key was applied, and records the invoice it already issued
// instead of calling again. The record's log line carries inDoubt,
// resolution and unrecorded when they apply.
package invoicing
