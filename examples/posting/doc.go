// Package posting is the example lane's consumer: it turns payment.captured
// messages from a FIFO queue into ledger entries, exactly once each and in
// order within an account, with nothing but homing's public packages.
//
//   - batch runs the records of one SQS batch, one message group (account)
//     at a time in order, reports partial failures, and sends invalid
//     records to the invalid queue (batch.InvalidQueue) with their reason;
//   - payment validates a message into a payment or a stable reason code;
//   - idempotency's Receiver, on dynamo's store, claims the paymentId so a
//     redelivered or replayed payment is not applied again, and a paymentId
//     seen before with another content is a conflicting duplicate;
//   - ledger appends the entry, honouring the paymentId itself, and
//     resolves an in-doubt delivery by looking the payment up.
//
// [NewProcessor] builds the whole handler from a [Config] and [Deps], so
// that the Lambda main only loads, wires and starts it.
package posting
