package replay

import (
	"context"
	"log/slog"
	"slices"
)

// maxReplayedKeys bounds RouteSummary.ReplayedKeys.
const maxReplayedKeys = 100

// account counts the outcomes of a finished batch, gives back the
// reservations of moves that did not happen, and reports progress. It
// holds the run's lock.
func (r *run) account(p *pass, b *batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &p.rs.Counts
	c.Examined += len(b.items)
	for _, it := range b.items {
		if it.msg.sentAt.IsZero() {
			continue
		}
		if p.rs.Expiry == nil {
			p.rs.Expiry = &Expiry{}
		}
		f := Facts{ExpiresAt: b.plan.expiresAt(it.msg)}
		p.rs.Expiry.see(it.msg.sentAt, f.ExpiresAt, r.e.opts.Policy.Expiring(f, b.plan.now))
	}
	moves, replays := 0, 0
	for _, it := range b.items {
		if it.first && !it.msg.hasMeta {
			// A message with the engine's verified metadata is one of its
			// replays that came back, not a new dead letter.
			c.DeadLettered++
		}
		o := it.outcome
		done := it.sent || r.req.DryRun
		if (o.moves() || o == OutcomeApplied) && !done {
			o = "" // not sent, and no failure recorded (a crash stopped the batch)
		}
		c.count(o, it.reason)
		if o.moves() {
			moves++ // an applied removal is no move: the cap counts replays and parks
		}
		if o == OutcomeReplayed {
			replays++
			// The canary's keys: at most maxReplayedKeys keys of at most
			// MaxKeyID bytes (a longer one is no consumer's key), so the
			// summary stays small however many a run replays; the counts
			// stay exact.
			if k := it.msg.key; k != "" && len(k) <= MaxKeyID && len(p.rs.ReplayedKeys) < maxReplayedKeys && !slices.Contains(p.rs.ReplayedKeys, k) {
				p.rs.ReplayedKeys = append(p.rs.ReplayedKeys, k)
			}
		}
		if it.warn != nil {
			c.Errors++
		}
	}
	r.moved += moves - b.moves
	if p.replayLeft >= 0 {
		p.replayLeft += b.replays - replays
	}
	r.progress(p.rs)
}

func (r *run) progress(rs *RouteSummary) {
	if r.e.opts.OnProgress != nil {
		r.e.opts.OnProgress(Progress{RunID: r.id, Route: rs.Route, Depth: rs.Depth, Counts: rs.Counts.clone()})
	}
}

// logItems writes one line per message of a finished batch.
func (r *run) logItems(ctx context.Context, p *pass, b *batch) {
	for _, it := range b.items {
		r.logItem(ctx, p, it)
	}
}

func (r *run) logItem(ctx context.Context, p *pass, it *item) {
	level := slog.LevelDebug
	switch {
	case it.outcome == OutcomeFailed || it.warn != nil:
		level = slog.LevelWarn
	case it.outcome.leaves():
		level = slog.LevelInfo
	}
	if !r.e.opts.Logger.Enabled(ctx, level) {
		return
	}
	count := it.count
	if !it.outcome.moves() {
		count = it.facts.ReplayCount
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("runId", r.id), slog.String("messageId", it.msg.id), slog.String("outcome", string(it.outcome)),
		slog.String("queue", p.route.DLQURL), slog.Int("replayCount", count))
	if it.msg.key != "" {
		attrs = append(attrs, slog.String("key", it.msg.key))
	}
	switch it.outcome {
	case OutcomeParked, OutcomeApplied:
		attrs = append(attrs, slog.String("reason", it.reason))
	case OutcomeSkipped:
		attrs = append(attrs, slog.String("reason", it.msg.reason))
	}
	if it.outcome.moves() {
		attrs = append(attrs, slog.String("to", it.dest))
	}
	if r.req.DryRun {
		attrs = append(attrs, slog.Bool("dryRun", true))
	}
	if it.err != nil {
		attrs = append(attrs, slog.String("error", it.err.Error()))
	}
	if it.warn != nil {
		attrs = append(attrs, slog.String("warning", it.warn.Error()))
	}
	r.e.opts.Logger.LogAttrs(ctx, level, "replay message", attrs...)
}
