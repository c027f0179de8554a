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
// The business key is [KeyExpr] and the payload hash the generic contract
// of package payload over [HashPart] (the order's fields, RFC 8785
// canonical, SHA-256, the part's version), so that the replay computes both from the
// route's configuration with no domain code. The same order re-encoded
// (white space, member order, escapes, fields the sample does not read)
// hashes the same; a body that is not I-JSON has no hash and is invalid as
// malformed JSON. Records written by an earlier build hold the order's own,
// unversioned hash: the receiver does not compare it with a versioned hash, so
// they keep their meaning (a duplicate, an order in flight) until they
// expire.
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
