// Package fifo keeps each message group of a FIFO lane in publication order
// through any failure of that group, with SQS's own group lock.
//
// A record that fails stays in the source: the consumer (package batch,
// [batch.Options.Groups]) sets its visibility to a backoff, so its group
// waits in SQS, in order. A head that can never succeed (invalid, about to
// expire, delivered too often) parks its group: a [Park] in the [Store]
// routes the group's later records to the parking queue, in order, until an
// operator releases it ([Releaser]): rounds of up to ten marked copies go
// back to the source, and leave the parking queue once the consumer settled
// them. A copy that parks again stops the release. A lane whose [OnError]
// is [Skip] parks no group.
//
// dynamo.NewGroupStore keeps parks in the lane's ledger, fifotest.Memory in
// memory. docs/ORDER.md has the protocol and its races.
package fifo
