// Package payment is the contract of the example lane's messages: a
// payment.captured event, validated into a [Captured] payment or rejected
// with a stable reason code ([Reason] constants, never renamed, only added).
//
// The event (version 1):
//
//	{"eventType":"payment.captured","version":1,"paymentId":"PAY-2026-000001",
//	 "accountId":"ACC-0001","capturedAt":"2026-11-29T10:00:00Z",
//	 "amount":"120.50","currency":"EUR"}
//
// Money is a decimal string with at most two decimals, never a float; it is
// held in minor units. On a FIFO queue the message group must be the
// account: ledger entries keep their order within an account only because
// SQS delivers one group in order.
//
// A rejection is an [*InvalidError], whose Invalid() (reason, detail)
// method is what homing's batch processor looks for to send the record to
// the invalid queue instead of retrying it.
package payment
