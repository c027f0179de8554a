// Package hold keeps each message group of a FIFO lane in publication order
// through any failure of that group: a transient failure over any number of
// schedule periods, a poison message, an operator's replay.
//
// SQS FIFO holds a group's later messages only while an earlier one is in
// the source queue: once the redrive moves it to the dead-letter queue, the
// group is free, and its successors reach the consumer before it comes back.
// So the consumer holds them:
//
//   - When a record of a group fails, the consumer (package batch, with
//     [batch.Options.Groups]) writes the group's [Hold], naming the record
//     as its head, before it reports the failure. The head goes on as any
//     failed record does: SQS delivers it again, then dead-letters it, and
//     the replay sends it back under its policy (backoff, budget, gates,
//     parking).
//   - While a group is held, every other record of it is stored, in order,
//     behind the hold ([Store.Append]) and acknowledged: it is not applied,
//     and it costs no receive and no replay.
//   - When the head is applied, the hold turns [Draining]: the consumer
//     applies the held records in their order, each exactly once through
//     the lane's idempotent receiver, then ends the hold. A held record that
//     fails becomes the head: it goes back to the source queue (carrying its
//     original id in [Attribute]), where SQS retries and dead-letters it as
//     the broker does any failure, and the rest stay held behind it.
//   - A head that can never succeed (invalid, or parked by the replay) leaves
//     the group held, with the reason in [Hold.Parked], until an operator
//     releases it (dlq groups release), or, on a lane whose [Keeper.OnError]
//     is [Skip], at once.
//
// The records of a group stay in the source queue's order because only the
// group's consumer writes them, one batch of a group at a time, and their
// order key is the source's SequenceNumber. A drain the invocation cannot
// finish sends a trigger record to the source ([Keeper.Trigger]) so that
// the next invocation goes on; the replay's scheduled run sends one for a
// hold left draining by a crash. docs/ORDER.md has the protocol, its races
// and what each costs.
//
// [Store] is the port; dynamo.NewHoldStore stores holds in the lane's hold
// table (HOLD_TABLE), holdtest.Memory in memory, and holdtest.Tests is the
// contract both pass.
package hold
