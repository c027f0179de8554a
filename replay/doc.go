// Package replay brings dead letters back. An [Engine] streams the
// dead-letter queue of each [Route] of a [Request] and, per message,
// replays it to its source queue, parks it, hides it until its backoff has
// passed, or removes it when already applied, and returns a [Summary] of
// the run. The scheduled replay function and the dlq CLI share it.
//
// Its promises (docs/RELIABILITY.md): a message leaves its DLQ only after
// its send or its final ledger record succeeded; one about to expire is
// parked whatever the gates say; a message is replayed at most MaxReplays
// times, then parked; every move is claimed in the [Ledger] first, so two
// runs never both send a message; only sealed metadata counts; FIFO routes
// keep each group's order; a run honours [Request.Rate], [Request.Max] and
// its deadline.
//
// The ports are [Queue], [Ledger] and [Completions]; replaytest has their
// twins and contract suites. The design: docs/ENGINE.md.
package replay
