// Package fifo keeps each message group of a FIFO lane in publication order
// through any failure of that group, with SQS's own group lock.
//
// A record that fails stays in the source: the consumer (package batch,
// [batch.Options.Groups]) reports it and sets its visibility to a backoff
// with jitter, so its group waits in SQS, in order, holding nothing of ours.
// A head that can never succeed (invalid, about to expire, delivered too
// often) parks its group: the head goes to the invalid or parking queue with
// its reason, and a [Park] in the [Store] routes the group's later records
// to the parking queue, in order, until an operator releases the group
// (dlq groups release). A lane whose [OnError] is [Skip] parks no group.
//
// [Store] is the port; dynamo.NewGroupStore keeps parks in the lane's ledger,
// fifotest.Memory in memory. docs/ORDER.md has the protocol and its races.
package fifo
