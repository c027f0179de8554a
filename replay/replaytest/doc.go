// Package replaytest holds the in-memory twins of the replay engine's ports
// and their contract suites: [MemoryQueue] (SQS on an injected clock, with
// failures on demand) and [RunQueue]; [MemoryLedger]; [MemoryCompletions]
// and [RunCompletions]; and [Clock], a manual clock.
// The twins are safe for concurrent use and fail with the services' own
// error types.
//
// Each suite runs its rules (queueRules, completionsRules) as subtests
// named after them, so one rule runs alone:
//
//	go test -run 'TestMemoryQueueContract/TestMessageComesBackAsSent'
//
// A harness declares its features ([QueueFeatures]): a test that needs an
// undeclared one skips, naming it, and [RunQueueGaps]
// fails when a declared gap is gone. The reasons are in
// docs/PACKAGES.md#replaytest.
package replaytest
