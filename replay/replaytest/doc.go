// Package replaytest holds the in-memory twins of the replay engine's ports
// and their contract suites:
//
//   - [MemoryQueue], a faithful in-memory SQS for the replay.Queue port
//     (visibility timeouts on an injected clock, receive counts, batch limits,
//     FIFO groups and deduplication, redrive to a DLQ, retention, per-entry
//     and per-call failures on demand), checked against the emulators by
//     [RunQueue] (redrive after maxReceiveCount and FIFO deduplication
//     included), with [QueueFeatures] declaring the documented behaviours
//     an implementation lacks and [RunQueueGaps] keeping each declaration
//     true;
//   - [MemoryLedger], an in-memory replay.Ledger with the DynamoDB one's
//     semantics, and [RunLedger], the contract every replay.Ledger passes
//     (MemoryLedger in unit tests, the DynamoDB ledger on the emulator);
//   - [MemoryCompletions] and [RunCompletions], the same for
//     replay.Completions;
//   - [Clock], a manual clock whose Sleep advances it.
//
// The twins are safe for concurrent use and fail as the real services do
// (MemoryQueue returns the SQS error types, e.g. *types.QueueDoesNotExist,
// and reports batch entries in Successful or Failed). Each Run* suite takes
// the *testing.T of a test function and runs one named subtest per rule, so a
// failure names the rule; implementations declare their known gaps
// ([QueueFeatures], idempotencytest.Gap) rather than fail or pass silently.
package replaytest
