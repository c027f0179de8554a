package replay

import (
	"context"
	"hash/fnv"
	"log/slog"
	"slices"
)

// maxReplayedKeys bounds RouteSummary.ReplayedKeys.
const maxReplayedKeys = 100

// account counts the outcomes of a finished batch, gives back the
// reservations of moves that did not happen, and reports progress. It
// holds the run's lock.
func (w *worker) account(b *batch) {
	r, p := w.r, w.p
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
		f := facts{ExpiresAt: b.plan.expiresAt(it.msg)}
		p.rs.Expiry.see(it.msg.sentAt, f.ExpiresAt, r.e.opts.Policy.expiring(f, b.plan.now))
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
			if b.plan.slot(it) {
				replays++
			}
			known := it.knownFailure()
			if known {
				p.rs.Retried++
			}
			if p.keys.add(it.msg.key, known) {
				p.rs.ReplayedKeys, p.rs.RetriedKeys = p.keys.lists()
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

// keySample is the sample of the keys a run replayed on a route that the
// next runs' gates judge it by ([RouteSummary.ReplayedKeys]): at most
// maxReplayedKeys keys of at most maxSampledBytes in all, so the summary
// stays small however many a run replays
// (the counts stay exact). Past that many, it keeps the keys of least
// rank: first the keys that were not only known failures', then by a hash
// of the key. A uniform sample of the run's keys, the same whatever the
// order of the receives, that a burst of one kind at the head of the
// queue does not fill, and that known failures never crowd out.
type keySample struct {
	keys  []sampledKey // in the order first replayed
	bytes int          // of the keys
}

type sampledKey struct {
	key     string
	retried bool // only known failures carried it
	hash    uint64
}

func (k sampledKey) less(o sampledKey) bool {
	if k.retried != o.retried {
		return !k.retried
	}
	return k.hash < o.hash
}

// maxSampledBytes bounds the bytes of a sample's keys: the summary is one
// DynamoDB item. Keys of any length are sampled (the completions reader
// bounds them as the consumer's records do); a lane of very long keys
// keeps fewer of them.
const maxSampledBytes = 16 << 10

// add notes a replay of a message of key k; retried says it was a known
// failure. It reports whether the sample changed.
func (s *keySample) add(k string, retried bool) bool {
	if k == "" || len(k) > maxSampledBytes {
		return false
	}
	if i := slices.IndexFunc(s.keys, func(x sampledKey) bool { return x.key == k }); i >= 0 {
		if retried || !s.keys[i].retried {
			return false
		}
		s.keys[i].retried = false
		return true
	}
	n := sampledKey{key: k, retried: retried, hash: keyHash(k)}
	s.keys = append(s.keys, n)
	s.bytes += len(k)
	changed := true
	for len(s.keys) > maxReplayedKeys || s.bytes > maxSampledBytes {
		worst := 0
		for i, x := range s.keys {
			if s.keys[worst].less(x) {
				worst = i
			}
		}
		changed = changed && s.keys[worst].key != k
		s.bytes -= len(s.keys[worst].key)
		s.keys = slices.Delete(s.keys, worst, worst+1)
	}
	return changed
}

// keyHash is a hash of k whose every bit depends on every byte of k:
// FNV-1a, then SplitMix64's finalizer (FNV-1a's high bits hardly depend
// on a key's last bytes).
func keyHash(k string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(k))
	x := h.Sum64()
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// lists returns the sampled keys, and those of them only known failures
// carried.
func (s *keySample) lists() (keys, retried []string) {
	for _, x := range s.keys {
		keys = append(keys, x.key)
		if x.retried {
			retried = append(retried, x.key)
		}
	}
	return keys, retried
}

func (r *run) progress(rs *RouteSummary) {
	if r.e.opts.OnProgress != nil {
		r.e.opts.OnProgress(Progress{RunID: r.id, Route: rs.Route, Depth: rs.Depth, Counts: rs.Counts.clone()})
	}
}

// logItems writes one line per message of a finished batch.
func (w *worker) logItems(ctx context.Context, b *batch) {
	for _, it := range b.items {
		w.logItem(ctx, it)
	}
}

func (w *worker) logItem(ctx context.Context, it *item) {
	r, p := w.r, w.p
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
