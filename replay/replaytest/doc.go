// Package replaytest holds the in-memory twins of the replay engine's ports
// and their contract suites:
//
//   - [MemoryQueue], a faithful in-memory SQS for the replay.Queue port
//     (visibility timeouts on an injected clock, receive counts, batch limits,
//     FIFO groups and deduplication, redrive to a DLQ, retention, per-entry
//     and per-call failures on demand), held to the emulators by [RunQueue];
//   - [MemoryLedger], an in-memory replay.Ledger with the DynamoDB one's
//     semantics, and [RunLedger], the contract every replay.Ledger passes
//     (MemoryLedger in unit tests, the DynamoDB ledger on the emulator);
//   - [MemoryCompletions] and [RunCompletions], the same for
//     replay.Completions;
//   - [Clock], a manual clock whose Sleep advances it.
//
// The twins are safe for concurrent use and fail as the real services do
// (MemoryQueue returns the SQS error types, e.g. *types.QueueDoesNotExist,
// and reports batch entries in Successful or Failed).
//
// Each suite is a table of named test functions, as watermill's
// pubsub/tests are: every rule is an exported function taking the
// *testing.T and the suite's harness ([TestSeenIsWrittenOnce] takes a
// [LedgerHarness]), [LedgerTests], [QueueTests] and [CompletionsTests] list
// them, and RunLedger, RunQueue and RunCompletions run each as a subtest
// named after its function, so a failure names the rule and one rule runs
// alone:
//
//	go test -run 'TestMemoryLedgerContract/TestSeenIsWrittenOnce'
//
// Each test derives its keys and queue names from t.Name(), so none reads
// what another left behind.
//
// A harness declares what its implementation has in positive features, as
// watermill's tests.Features do ([QueueFeatures], [LedgerFeatures]; the
// zero value declares none): a test that needs an undeclared feature skips
// with the feature named, never passing silently. [SQSFeatures] declares
// every behaviour SQS documents, and [RunQueueGaps] runs the check of each
// one a harness declares absent and fails when the implementation shows it
// after all, so a declared gap cannot outlive the gap.
package replaytest
