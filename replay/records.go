package replay

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// The canary's detection of a consumer that consumes its replays without
// recording them (see unrecordedRuns).

// recordsGone is the detail of a route whose records are missing.
func (c *canaryGate) recordsGone(p *pass) string {
	return fmt.Sprintf("records missing: for %d runs the replays of route %s were consumed (none came back to the DLQ) but none completed in the records of consumer %q under key expression %q; check that the consumer writes homing's completion records (<CONSUMER_NAME>#<key>, see docs/RELIABILITY.md), that CONSUMER_NAME is its scope, and that the route's key expression is the consumer's key; until a replayed key completes the route runs without records",
		unrecordedRuns, p.route.Name, c.o.Consumer, p.route.Key)
}

// noteUnrecorded updates the route's count of runs held at the canary with
// replays that neither completed nor came back, once its pass is over, and
// reports the records missing when it reaches unrecordedRuns and the
// first of those runs started at least the time a failed replay takes to
// come back (returnBound) before this one (runs close together, a late run
// or an operator's, count, but do not make that time): a log line at
// WARN; the summary's RecordsMissing and the metric of the same name
// follow from it.
func (c *canaryGate) noteUnrecorded(ctx context.Context, p *pass) {
	rs, last := p.rs, c.last
	rs.Returned = nil
	for _, w := range p.watched {
		rs.Returned = append(rs.Returned, w.Return)
	}
	if rs.RecordsMissing || !p.unrecorded {
		return
	}
	if !sawAll(rs.StopReason) {
		return // the pass did not see the whole DLQ: no evidence either way
	}
	if slices.ContainsFunc(p.watched, func(w watched) bool { return w.Back > 0 }) {
		return
	}
	rs.Unrecorded = 1
	if last != nil {
		rs.Unrecorded += last.Unrecorded
	}
	since := p.unrecordedSince
	if since.IsZero() {
		since = p.started
	}
	if rs.Unrecorded < unrecordedRuns || p.started.Sub(since) < returnBound(p) {
		return // too soon: the replays of the first run held may still come back
	}
	rs.RecordsMissing = true
	rs.RecordsMissingDetail = c.recordsGone(p)
	c.warnRecordsMissing(ctx, p)
}

// returnBound is how long a failed replay of the route takes to come back
// to the DLQ, as far as the engine knows: the source's maxReceiveCount ×
// visibility timeout, or the time the replays that opened its breaker took
// on the DLQ signal, whichever is longer.
func returnBound(p *pass) time.Duration {
	d := p.returnBound
	if b := p.rs.Breaker; b != nil {
		d = max(d, b.ReturnAfter)
	}
	return d
}

// warnRecordsMissing logs, at WARN, that the route's records are missing:
// once a run while they are.
func (c *canaryGate) warnRecordsMissing(ctx context.Context, p *pass) {
	c.o.Logger.LogAttrs(ctx, slog.LevelWarn, "replay records missing",
		slog.String("runId", c.runID), slog.String("queue", p.route.DLQURL), slog.String("route", p.route.Name),
		slog.String("consumer", c.o.Consumer), slog.String("key", p.route.Key), slog.String("reason", p.rs.RecordsMissingDetail))
}
