// Package replay brings dead letters back. An [Engine] streams the
// dead-letter queue (DLQ) of each [Route] of a [Request] and, per message,
// replays it to its source queue, parks it in the parking queue, or hides
// it until its backoff has passed, and returns a [Summary] of the run. The
// scheduled replay function and the dlq CLI share it.
//
// The engine's promises, under the assumptions of docs/RELIABILITY.md:
//
//   - Nothing is lost: a message leaves its DLQ only once a send of it, or
//     its final ledger record, has succeeded; one about to reach its
//     DLQ's retention is parked ([ReasonExpiryRescue]) even when the
//     ledger or a gate holds replays.
//   - Nothing loops: a message is replayed at most MaxReplays times, then
//     parked ([ReasonReplayExhausted]); replays the [Breaker] gives back
//     for an outage are bounded too ([Metadata.Refunds]).
//   - Exactly once in effect with an idempotent consumer: every move is
//     claimed in the [Ledger] first (INTENT, leased), so two runs never
//     both send a message; a crash between a send and its final record
//     has the next run send it again, and the consumer absorbs the copy.
//   - Only the engine's own metadata counts: what it writes is sealed
//     ([Metadata.Seal], keyed by [SealKey]); anything else in its
//     attribute ([AttributeName]) travels on as the producer's data.
//   - FIFO routes keep the order of each message group.
//   - A run's memory is bounded by its workers' batches, not by the
//     messages, and it honours [Request.Rate], [Request.Max] and its
//     context's deadline.
//
// What becomes of a message in a run is its [Outcome], counted in
// [Counts] and logged one line per message. A run's gates hold replays,
// never the expiry rescue: [GateHealth] (the downstream probe,
// [Options.Health]), [GateRefill] (the DLQ refilling with replays that
// came back), [GateCanary] (most of the previous run's replays have not
// completed, read through [Completions]; its [Breaker] opens on an outage
// the probe does not see) and [GateSeal]. They judge a lane by its share
// of failing keys, leaving out known failures (docs/RELIABILITY.md).
//
// A route's business key ([Route.Key]) and payload hash
// ([Route.PayloadHash]) are package payload's expressions over the body;
// [Route.Records] says whether the lane's consumer writes the completion
// records the canary, the breaker and the removal of dead letters already
// applied ([ReasonAlreadyApplied]) read (docs/CONTRACT.md). A [Filter]
// selects messages; a dry run ([Request.DryRun]) writes nothing.
//
// The ports are [Queue] (the SQS client), [Ledger] (dynamo's Ledger) and
// [Completions] (dynamo's Completions); package replaytest has their
// in-memory twins, their contract suites, and replaytest.Crash to crash a
// run at any port call. docs/ENGINE.md is the design: the lifecycle of a
// message in a run, the throughput model, FIFO, the bounds and the gates.
package replay
