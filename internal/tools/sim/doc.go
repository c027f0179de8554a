// Package sim is the net under the project's promise: a deterministic
// simulation of the whole system that runs the real code (the batch
// processor, the invoicing handler and the idempotent receiver over
// idempotency.MemoryStore, the invalid-message publisher, the replay engine
// over replaytest.MemoryLedger, and on a FIFO lane the consumer's group
// order over fifotest.Memory and the operator's fifo.Releaser) against
// models of everything around it, on one simulated clock, all driven by one
// seed.
//
// # Models
//
//   - SQS (sqs.go): replaytest.MemoryQueue (visibility, receive counts,
//     SentTimestamp, redrive after maxReceiveCount, retention expiry, FIFO
//     groups: none of a group delivered while one of it is in flight, in
//     order again once its visibility ends; the 5-minute deduplication
//     window) with repeatable message ids, plus what the simulation needs to
//     account for every message: the lineage of each message id back to the
//     producer's publication, the set of ids that were sent and not deleted
//     (an id that vanished from every queue expired), and the visibility its
//     receives and changes set (the next time a group is free).
//   - The event source mapping (esm.go): polls the source queue in batches,
//     invokes the consumer with a context whose deadline is the simulated
//     one, deletes what succeeded, leaves failures to reappear; a function
//     that dies or runs out of time deletes nothing. At-least-once delivery
//     shows as an invocation run twice and as a copy of a message handed to a
//     second consumer while the first is still calling the tax service (on
//     FIFO, the whole batch: its visibility ran out, and a second poller
//     receives it again, in order, making the first's receipt handles
//     stale).
//   - EventBridge (scheduler.go): the replay schedule every few simulated
//     minutes, with ticks whose run starts late or never and pauses of
//     hours (Faults.Ticks; one seed in three late or missed, one in four a
//     pause during an outage the probe misses, some right after a probe),
//     operator runs (filtered by order), runs that crash at a chosen
//     point (after a send, before a delete, after a receive: every later call
//     of that run fails and its context is cancelled), and runs that overlap
//     (an operator run starting while a scheduled run waits on a slow send).
//   - The tax and invoice service (downstream.go): phases of outage,
//     flakiness and slow answers over budget; ambiguous failures (applied,
//     answer lost); a deduplicating or a counting mode; a lookup by
//     Idempotency-Key; a health probe that can say up while invoices fail;
//     orders it fails for ever with a 503 of their own (KindPoison); and
//     freezes (Freeze), a 503 for the orders of one message group, or of
//     some of them, for a while (issue 22's frozen account).
//   - Producers that put replay metadata the engine did not write on what
//     they publish (forge.go): well-formed copies of what the engine wrote
//     on a message it replayed or parked (one copy on two orders, too), and
//     forgeries (a count or refunds of 99, a last replay a year ahead, a
//     20 KiB original id).
//   - Faults in the stores (faults.go, stores.go): DynamoDB throttling on the
//     idempotency store, the ledger and the completions reader; key-size
//     limits as DynamoDB enforces them; a crash between the effect and its
//     completion; clock jumps.
//   - The group order of a FIFO lane (groups.go; Lane.Groups, package
//     fifo): the consumer's fifo.Keeper over the simulated queues (a failed
//     head's backoff is a visibility change, a parked record a send to the
//     FIFO parking queue) and one fifotest.Memory of parks, which the
//     consumer and the operator reach through parkStore; the redrive as a
//     distant backstop (maxReceiveCount backstopReceives). Calls fail by
//     hash-decided faults (Faults.GroupErrors, Faults.ReleaseErrors), at
//     most faultsPerKey on one (operation, key), none in a batch with a
//     record on its last receive. The operator looks at the parks every
//     Config.ReleaseEvery and releases (fifo.Releaser, a step a minute for
//     an hour) each group parked behind an invalid head; at the end, once
//     the tax service's trouble is over, it sets aside the orders that can
//     never succeed that lead their group in the parking queue, releases
//     every parked group, and brings back with a reset run what a lane that
//     skips parked alone.
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
//	go test ./internal/tools/sim -run '^TestSim$/^seed=123$'
//	make sim SEED=123
//
// # Lanes
//
// A [Lane] is the sample's (key orderId, records written), or keyed at
// order.ref with a decoy orderId (one seed in four: refKeySeed; a sim-side
// adapter maps the body for the sample's handler, see Lane.sample), or
// keyed by ARNs and URLs of 130 to 600 bytes (one in eight: longKeySeed;
// the consumer is the sample's handler without the orderId grammar's
// bound, longKeyed), or by JSON integers near 2^53 (one in eight:
// intKeySeed; ±2^53 is a key, ±(2^53+1) none and must end invalid, never
// absorbed as the other); and, across those, one whose consumer writes no
// completion records (one seed in four: noRecordsSeed; a double relying on
// the deduplicating service). On the last, the invariants that need the
// consumer's records (conflicts routed, no park of a completed order, the
// breaker's refunds) are not checked, and every run must report the canary
// reading no completions and remove nothing as applied
// (docs/RELIABILITY.md, "Simulation").
//
// Two seeds in five are FIFO (fifoSeed), and on each the consumer keeps its
// groups in order (groupsConfig): fifo.Skip on one FIFO seed in four,
// fifo.Hold on the others, with one to three groups frozen for 3 to 20
// replay schedule periods. A duplicate or a conflict is in the group of the
// order it repeats; on a lane with Groups an order that can never succeed
// shares a group too, and every other one kills its invocations instead of
// failing (KindKiller). Orders with replay metadata the engine did not
// write (Mix.Forged) are published on such lanes too.
//
// # Invariants
//
// After the system quiesces (no message in the source queue or the DLQ, none
// in flight, no release under way) and an operator has brought back what
// was parked (and released the parked groups)
// ([Report] and invariants.go). Each wait for quiet is bounded by
// Config.DrainLimit, and, when the system is still busy then, once more by
// the time the engine's documented pace allows for what is left (2 x
// MaxReplays replays a message, a probe of CanaryLimit or a backoff at most
// BackoffMax apart: see paceBound); busy past that, it is not quiescent:
//
//   - every valid order is invoiced exactly once with a deduplicating
//     service; with a counting one, a second call for an order whose first
//     answer reached the consumer is a violation, and a second call after an
//     answer that was lost (the in-doubt window) is counted and reported;
//   - every invalid order is in the invalid queue with its reason, and never
//     invoiced;
//   - every published message is accounted for in exactly one terminal
//     place: acknowledged by the consumer (its order invoiced), the invalid
//     queue, the parking queue (with a reason; or set aside from it by the
//     operator), or removed by a replay run as already applied;
//   - no message expired unseen, and nothing is left in the DLQ;
//   - on a lane with Groups (order.go): in each message group, the valid
//     orders are first invoiced in their publication order, except a head a
//     lane that skips parked alone (invoiced later, or never;
//     Stats.Groups.Skipped counts them); no park is left; no park ends while
//     the parking queue holds a record of its group; nothing reaches the DLQ
//     (the consumer parks a head before the backstop); and every record
//     handed to the consumer carries its producer's attributes.
//
// While it runs, the simulation also checks promises of single steps: a run
// never sends a message whose ledger lease it no longer holds, and no two
// runs send the same message (unless the first crashed or failed to delete
// it); a message is parked as replay-exhausted only after its own replays; a
// dead letter whose order was already completed with the same payload is
// not parked (unless the run failed to write its INTENT record: the
// removal needs the ledger), nor replayed (replayed-completed); the
// completion is the consumer's record with the consumer's own hash of the
// body, so a route whose key expression cannot match fails it (where the
// route's hash compares with the consumer's: one part expression). "Its
// own replays" are those
// the simulation saw
// sent in its lineage (since a reset of its count), never the counts its
// metadata carries: a message a run sends is told by its body and what the
// run holds, and among copies of one body by metadata only when its seal
// verifies (the engine's: a producer may have copied it). And two
// promises of the whole (invariants.go):
//
//   - bounds: no message is replayed more than 2 x MaxReplays times in its
//     lineage since its publication (or the reset of its count), refunds
//     included;
//   - coverage: every message in the DLQ when a pass starts (visible or
//     not) is examined (its "replay message" line) by that pass or by one
//     of the next three runs of the route, unless it leaves the DLQ; none
//     expires there. Exempt: a message the engine hid as delayed, until its
//     hide ends; on FIFO, the messages behind their group's first (SQS does
//     not deliver them); and passes that a fault ended (an injected error,
//     a crash) do not count.
//
// # Tests
//
// TestSim runs [DefaultSeeds] random seeds in `go test ./...` (fewer orders
// under the race detector, see race_test.go); `make sim SEEDS=N` runs more,
// `make sim SEED=N` one. TestScenario/<name> reproduces each path of the
// issue that opened this package, and of issues 15 and 22, as a named
// scenario; the scenarios of 5,000 dead letters run only where SIM_SEEDS is
// set (make sim), as TestSim/scenario=<name>, and one that reproduces a
// known bug (scenario.pending) only where SIM_PENDING is. The scenarios of
// issue 29 (groups_test.go) are frozen groups, poison, killer and invalid
// heads, releases (and records of a release that park their group again),
// two copies of a batch, heads with ten producer attributes and forged
// release notes. TestCheckOrder and TestOrderBreaksWithoutGroups show that
// the order invariant fails where it should: issue 22's trace on a FIFO
// lane without Groups breaks it, the same trace with Groups keeps it.
package sim
