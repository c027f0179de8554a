// Package replay brings dead letters back: it streams a dead-letter queue
// (DLQ) and, per message, replays it to its source queue, parks it, or hides
// it until its backoff has passed. The scheduled replay Lambda and the
// operator CLI share its [Engine].
//
// # Routes and runs
//
// A run serves one or several [Route]s (a DLQ, its source queue and its
// parking queue; FIFO when the URLs end in ".fifo"). Per route, the engine
// reads the DLQ's MessageRetentionPeriod and depth once, evaluates the gates,
// then receives batches of 10 with a short visibility timeout (the decision
// window), decides, acts, and deletes from the DLQ only what a batch call
// reports as sent (or parked) successfully. Memory does not grow with the
// number of messages: a batch is finished before the next is received, and
// what a run remembers across batches is bounded (the ids of the messages
// on their way, a 256 KiB filter of the ids of the messages it examined and
// left in their DLQ, made when the first is left, at most 1000 receipt
// handles it holds, at most 100 replayed keys per route for the
// canary). A message deleted from its DLQ is forgotten: it cannot be
// received again, and a copy SQS delivers twice finds the ledger's final
// record and is removed as recovered.
//
// # Keys and completion records
//
// A route names its lane's business key as a JMESPath expression over the
// JSON body ([Route.Key]: the sample's order id field, "shipment.id" for a
// lane keyed by a nested field), evaluated with package payload; a message
// whose key does not evaluate is decided by its original message id alone.
// The key is the partition of the message's history in the ledger, what
// [Filter.Keys] matches, and, on a route whose consumer writes homing's
// completion records ([Route.Records]), the key the canary gate, the
// [Breaker] and the removal of dead letters already applied read
// [Completions] by, comparing payload hashes with the route's
// [Route.PayloadHash] (package payload's versioned hash: a record of
// another version never counts as the same payload). A route whose
// consumer writes no records reads none: its canary gate is skipped and
// says so, and its breaker counts the replays that come back to the DLQ.
//
// # Decisions
//
// Filters apply first: a message a [Filter] rejects is left alone, whatever
// its state. The engine trusts only the metadata it wrote: each is sealed
// ([Metadata.Seal]: an HMAC under a key kept in the ledger, see [SealKey],
// over the metadata, the body and the queue it was sent to). An attribute
// of our name that does not decode, is not sealed for this message and
// this route's queue, or holds more than the engine writes, is the
// producer's: it travels on as data under "homing-replay.prev" and the
// message counts as one without metadata. A run that cannot read the key
// closes the seal gate. FIFO deduplication ids derive from the id of the
// message in the queue the engine reads, so two messages never share one. A
// message whose key the consumer has already
// completed with the same payload (its route's payload hash against
// [Completions]) is removed with a RESOLVED ledger record
// ([ReasonAlreadyApplied]): it is work for nobody.
//
// The replay budget belongs to the message, not to its key: two events
// of one key each get their replays. Decisions come from what the
// message carries, so the hot path reads nothing per message: the replay
// count is the one in our metadata attribute ([AttributeName], packed
// beside the producer's attributes by internal/envelope, kept by SQS's
// redrive), less a replay given back by the [Breaker] (at most MaxReplays
// are given back to a message, so it is replayed at most 2 x MaxReplays
// times between two resets). Then, in this order
// ([Policy.Decide]):
//
//   - count >= MaxReplays: park with reason [ReasonReplayExhausted];
//   - not due yet (due = last replay, or the time it was dead-lettered, plus
//     exponential backoff with full jitter): hide it until due (visibility,
//     at most 12 h), but never past the start of its rescue window, and do
//     not count it as replayed ("delayed"); when the message is within the
//     expiry-rescue window of its DLQ retention, park it with reason
//     [ReasonExpiryRescue] instead, so nothing expires unseen;
//   - otherwise replay: send the body and the producer's attributes unchanged,
//     plus our attribute with the incremented count, to the source queue;
//     a message that no longer fits the source queue's MaximumMessageSize
//     with our attribute is parked instead ([ReasonTooLarge]).
//
// The rescue does not depend on the ledger: when the ledger cannot be
// written for a message, it is not replayed, but it is parked when it is
// about to expire.
//
// The jitter is derived from the original message id and the count, so a
// message's due time is the same in every run instead of being re-drawn.
//
// Assumptions about SQS timestamps. The time a message was dead-lettered is
// approximated by its SentTimestamp in the DLQ: SQS resets the enqueue
// timestamp when it moves a message to a FIFO DLQ, so there it is exact; it
// keeps the original enqueue timestamp for standard queues, so there it is
// earlier and the first replay may come sooner (the schedule and the gates
// still space it). ApproximateFirstReceiveTimestamp is not used: in the DLQ
// it can be the first receive by an earlier run, which would move the due
// time from one run to the next. The expiry of a message is SentTimestamp
// plus the DLQ's retention: exact for standard queues; for FIFO queues, if
// SentTimestamp showed the original send, the engine would rescue early,
// which is the safe side.
//
// # Exactly once in effect
//
// Every DLQ message a run acts on has a record in the [Ledger], keyed by
// its DLQ message id inside its key's partition (the key is bounded
// whatever the id: [HistoryKey]). A move goes INTENT (a conditional write
// leased until the message's visibility ends) -> send -> SENT, PARKED or
// RESOLVED (conditional on our INTENT) -> delete; a message that stays in
// the DLQ (delayed, blocked) gets a SEEN record. The INTENT write is also
// the batch's look-up, in the same round trip: a message whose record is
// final was sent by an earlier run that could not delete it, and is deleted
// without sending again ("recovered"); one whose INTENT another run holds
// is hidden until that lease ends. A run never sends a message whose lease
// it no longer holds: before each send call it renews the lease of every
// message whose lease ends within half the decision window (its
// visibility, then its INTENT), and does not send a message it cannot
// renew, so a concurrent run that took it over is the only one to send it.
// A crash between the send and the SENT write leaves INTENT; the next run,
// once the lease has passed, sends again; the duplicate is absorbed by the
// idempotent consumer (and, for FIFO, by the deterministic deduplication id
// within SQS's 5-minute window). The ledger is the audit and the recovery
// record; the consumer is what makes the effect happen once.
//
// # Throughput
//
// A route is served by [Options.Workers] receive loops (default 4). A
// batch costs a worker four round trips: the receive; the claim (the
// batch's INTENT records in one call when the ledger is a [BatchLedger],
// as dynamo's is: one TransactWriteItems; the completions read beside
// it); the send; and the finish (the final records, the SEEN records and
// the delete, together). On a standard route a worker runs this batch's
// deletes beside the next receive and claim, and this batch's final
// records ride in the next claim's ledger call; and each worker keeps one
// receive ahead: it sends the next receive out beside this send and takes
// it for its next batch. A batch ahead is examined only if the run would
// start a batch when it arrives (cap, deadline, pass budget, a stop), else
// held and released when the pass ends; the receive's visibility leaves
// room for one more batch's rate-limit wait. Each batch ahead is a batch
// more in memory: BenchmarkEngineMemory keeps a run of 100,000 messages
// with four workers under 1 MiB of live heap. A batch then costs a worker two
// or three round trips on its path where the raw SDK loop (receive, send,
// delete) takes three, and two DynamoDB calls (a TransactWriteItems and the
// completions' BatchGetItem) beside its three SQS calls: at 10 ms a round
// trip, about 300 messages/s per worker, until the rate limit
// ([Request.Rate], [Options.Rate]), SQS's throttling or the ledger's
// capacity bounds it. The workers share the run's rate limit, cap
// and lock. On AWS (in-region round trips of 5 to 10 ms) four workers
// move about 1,200 to 2,000 messages/s, so the rate limit binds first (its
// ceiling, [MaxRate], is SQS FIFO's 3,000 messages/s of batched calls at
// 300 calls/s per action; standard queues have no such limit). The ledger
// costs two transactional writes per message (4 WCU on demand: 2,000 WCU/s
// at 500 messages/s, within a new on-demand table's 4,000; 12,000 at
// 3,000 messages/s, which an on-demand table reaches once it has seen
// such peaks) and one consistent read of its completion (1 RCU). Within
// Lambda's 15 minutes a run at 500 messages/s moves 100,000 messages in
// under 4 minutes. What a run holds in memory is bounded by the workers (a
// batch, a finishing one and a batch ahead each), not by the messages.
// Receives are short polls while messages come.
//
// # FIFO
//
// The MessageGroupId is kept, the deduplication id is derived from the
// original message id and the replay count (after a [Request.ResetCount],
// from the id of the message reset, so a retried reset sends the same ids),
// and order is kept within a group:
// the messages of a group in a batch are sent in rounds of one per group,
// and once a message of a group is not moved (delayed, skipped, deferred,
// failed) the later ones of that group in the batch are not sent either. SQS
// itself does not deliver later messages of a group while an earlier one is
// in flight, which carries the rule across batches, workers and runs: the
// workers of a FIFO route run in parallel across groups, each finishing a
// batch (its deletes free its groups) before it receives the next.
//
// # Bounds
//
// A run honours a rate limit (messages sent per second, across routes), a cap
// on messages moved, and the invocation deadline: it does not start a batch
// when less than the deadline margin plus the longest batch so far (plus any
// rate-limit wait) is left. A route's pass ends when a receive comes back
// empty or when it has received as many messages as the DLQ held at the
// start (plus one batch); an empty short poll before the starting depth
// is reached is confirmed by a long poll of a second. A message received
// again in the same pass (it
// reappeared after its decision window) is recognised with a fixed-size
// probabilistic filter, not examined again, and held with the messages left
// for a later run. The summary's StopReason is the reason of the worker
// that ended the pass last ("drained" hides no cap or deadline). Every text
// a summary quotes is clipped to 1 KiB and its lists are bounded, so a run
// record stays a small DynamoDB item.
//
// # Gates
//
// Evaluated before streaming and reported in the [Summary]. Gates hold
// replays only: a route behind a closed gate is still streamed, and what is
// about to expire, or has had its replays, is parked; the rest is left for
// a later run.
//
//   - health: [Options.Health] fails -> closed;
//   - canary: some keys replayed by the previous run have not completed
//     (read through [Completions]) -> limited, the route replays at most
//     CanaryLimit messages; the [Breaker] -> closed while it is open, limited
//     to a probe when one is due; skipped on a route whose consumer writes
//     no completion records, whose [Breaker] reads the DLQ instead (most of
//     a recent run's replays back: [SignalDLQ]); and not held on a route
//     whose records are missing (its replays neither complete nor come back
//     for [UnrecordedRuns] runs: [RouteSummary.RecordsMissing]), which runs
//     as one without records until a replayed key completes;
//   - refill: the DLQ holds more than RefillThreshold messages more than the
//     previous run left in it -> closed for that route;
//   - seal: the seal key cannot be read from the ledger -> closed for the
//     run (it cannot tell its metadata from a producer's).
//
// # Filters and dry runs
//
// A [Filter] selects messages by reason (the parking reason in our metadata,
// else the invalid lane's reason in its attribute, else
// [ReasonDeadLettered]), by age since first dead-lettered, and by key; a
// message it rejects is counted as skipped and left untouched. A dry run decides and
// reports everything but sends, deletes and writes nothing: no ledger record
// at all, not even the run summary, and no metrics.
//
// Messages left for a later run (skipped, deferred by a gate, the cap or
// the canary, every message of a dry run) are held: hidden until the pass
// expects to end (the run's deadline; without one, three times the rest of
// the pass at its pace so far), never past the start of the message's
// rescue window. Released at once, a message would come straight back in
// the next receive (SQS FIFO returns the first message of a group; the
// emulator, and often SQS for small queues, the oldest messages), and the
// pass would go round the same messages instead of reaching the rest. So a
// pass examines every message its DLQ held at its start, however many it
// holds, in bounded memory: it remembers the first 1000 it holds and
// releases them (visibility 0) when it ends; the others become visible when
// their hide ends.
//
// An operator who fixed the cause of parked messages brings them back with a
// run whose route streams the parking queue and [Request.ResetCount]: the
// count restarts, and later runs count only the replays since the reset
// ([Metadata.ResetAt]). [Options.OnProgress] reports a run's progress per
// batch (the dlq CLI draws its progress bar with it).
//
// Implementations of the ports: [MemoryLedger] here and dynamo's
// Ledger for the ledger (both pass the suite in replaytest); replaytest's
// MemoryQueue and the SQS client for [Queue]; dynamo's Completions
// and replaytest's for [Completions].
package replay
