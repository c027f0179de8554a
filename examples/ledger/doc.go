// Package ledger keeps the accounts' ledger entries: the effect of the
// example lane. [Ledger.Append] adds one entry per payment at the end of
// its account, with the next sequence number, and honours the payment id as
// an idempotency key: appending a payment already in the ledger adds
// nothing and returns the entry it has. [Ledger.Lookup] answers whether a
// payment was applied, which is what resolves an in-doubt delivery in
// homing's idempotent receiver (idempotency.Resolver).
//
// An account can be frozen (for a reconciliation, say): appends to it fail
// with [ErrFrozen], a transient failure known not to have applied, until it
// is thawed. The e2e test freezes an account to make its payments
// dead-letter, as a downstream outage would.
//
// Implementations: [Memory] for tests, and [Table] on one DynamoDB table
// whose items are:
//
//	pk "account#<accountId>"  sk "head"               seq N (entries so far), frozen BOOL
//	pk "account#<accountId>"  sk "entry#<seq, %012d>" paymentId, amountMinor N, currency, capturedAt
//	pk "payment#<paymentId>"  sk "payment"            accountId, seq N: the idempotency marker
//
// An append is one transaction (head, entry, marker), conditional on the
// head's sequence and the marker's absence, so entries never skip or repeat
// a number and a payment is applied at most once. Both pass the contract
// suite of package ledgertest.
package ledger
