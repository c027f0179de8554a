// Package replaytest holds the in-memory twins of the replay engine's ports
// and their contract suites:
//
//   - [MemoryQueue], a faithful in-memory SQS for the replay.Queue port
//     (visibility timeouts on an injected clock, receive counts, batch limits,
//     FIFO groups and deduplication, redrive to a DLQ, retention, per-entry
//     and per-call failures on demand), checked against the emulators by
//     [RunQueue], with [QueueFeatures] declaring the documented behaviours
//     an implementation lacks and [RunQueueGaps] keeping each declaration
//     true;
//   - [RunLedger], the contract every replay.Ledger passes (replay's
//     MemoryLedger in unit tests, the DynamoDB ledger on the emulator);
//   - [MemoryCompletions] and [RunCompletions], the same for
//     replay.Completions;
//   - [Clock], a manual clock whose Sleep advances it.
package replaytest
