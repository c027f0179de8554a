// Package sim is the net under the project's promise: a deterministic
// simulation of the whole system that runs the real code (the batch
// processor, the invoicing handler and the idempotent receiver over
// idempotency.MemoryStore, the invalid-message publisher, and the replay
// engine over replay.MemoryLedger) against models of everything around it,
// on one simulated clock, all driven by one seed.
//
// # Models
//
//   - SQS (sqs.go): replaytest.MemoryQueue (visibility, receive counts,
//     redrive after maxReceiveCount, retention expiry, FIFO groups and the
//     5-minute deduplication window) with repeatable message ids, plus what
//     the simulation needs to account for every message: the lineage of each
//     message id back to the producer's publication, and the set of ids that
//     were sent and not deleted (an id that vanished from every queue expired).
//   - The event source mapping (esm.go): polls the source queue in batches,
//     invokes the consumer with a context whose deadline is the simulated
//     one, deletes what succeeded, leaves failures to reappear; a function
//     that dies or runs out of time deletes nothing. At-least-once delivery
//     shows as an invocation run twice and as a copy of a message handed to a
//     second consumer while the first is still calling the tax service.
//   - EventBridge (scheduler.go): the replay schedule every few simulated
//     minutes, operator runs (filtered by order), runs that crash at a chosen
//     point (after a send, before a delete, after a receive: every later call
//     of that run fails and its context is cancelled), and runs that overlap
//     (an operator run starting while a scheduled run waits on a slow send).
//   - The tax and invoice service (downstream.go): phases of outage,
//     flakiness and slow answers over budget; ambiguous failures (applied,
//     answer lost); a deduplicating or a counting mode; a lookup by
//     Idempotency-Key; a health probe that can say up while invoices fail.
//   - Faults in the stores (faults.go, stores.go): DynamoDB throttling on the
//     idempotency store, the ledger and the completions reader; key-size
//     limits as DynamoDB enforces them; a crash between the effect and its
//     completion; clock jumps.
//
// # Determinism
//
// One seed drives the configuration, the workload and every fault. The
// consumer runs with Concurrency 1. The engine calls its ports from
// goroutines, so a fault is not drawn from a shared sequential generator but
// decided by a hash of (seed, operation, key, how many times that operation
// was tried on that key); the clock moves only on sequential paths (or by
// fixed amounts whose sum does not depend on the interleaving). Message ids,
// run ids and claim tokens are counters. The same seed therefore gives the
// same run, and a failing seed prints its trace (time, actor, operation,
// message and order ids) and the command that replays it. One seed in
// three (concurrentSeed) runs the engine as production does, with several
// workers per route and each batch's finish overlapping the next receive:
// those seeds check the same invariants under real interleavings, and
// replay their configuration and faults but not necessarily every
// interleaving; the others run one worker in lockstep (Options.Lockstep)
// and replay event for event:
//
//	go test ./internal/sim -run 'TestSim/seed=123'
//	make sim SEED=123
//
// # Invariants
//
// After the system quiesces (no message in the source queue or the DLQ, none
// in flight) and an operator has brought back what was parked
// ([Report] and invariants.go):
//
//   - every valid order is invoiced exactly once with a deduplicating
//     service; with a counting one, a second call for an order whose first
//     answer reached the consumer is a violation, and a second call after an
//     answer that was lost (the in-doubt window) is counted and reported;
//   - every invalid order is in the invalid queue with its reason, and never
//     invoiced;
//   - every published message is accounted for in exactly one terminal
//     place: acknowledged by the consumer (its order invoiced), the invalid
//     queue, the parking queue (with a reason), or removed by a replay run as
//     already applied;
//   - no message expired unseen, and nothing is left in the DLQ.
//
// While it runs, the simulation also checks promises of single steps: a run
// never sends a message whose ledger lease it no longer holds; a message is
// parked as replay-exhausted only after its own replays; a dead letter whose
// order was already completed with the same payload is not parked.
//
// # Tests
//
// TestSim runs [DefaultSeeds] random seeds in `go test ./...` (fewer orders
// under the race detector, see race_test.go); `make sim SEEDS=N` runs more,
// `make sim SEED=N` one. TestScenario/<name> reproduces each path of the
// issue that opened this package as a named scenario.
package sim
