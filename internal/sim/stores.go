package sim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/settings"
)

// store is the idempotency store as DynamoDB would behave under load: the
// in-memory store, with throttled calls, the key-size limit, and a
// consumer that dies between its effect and the completion. Methods other
// than Claim, Complete and Release (the store's port may grow) pass through
// without faults.
type store struct {
	*idempotency.MemoryStore
	s *Sim
}

var _ idempotency.Store = (*store)(nil)

// fault returns the error of a call, or nil when it may go ahead.
func (st *store) fault(ctx context.Context, op, key string) error {
	s := st.s
	if inv := invocationOf(ctx); inv != nil && inv.dead() {
		return errKilled
	}
	if len(key) > maxPartitionKeyBytes {
		return fmt.Errorf("%s %d-byte key: %w", op, len(key), errKeyTooBig)
	}
	if s.dice.chance("store-"+op, key, s.cfg.Faults.StoreErrors) {
		s.trace.add(s.clock.Now(), "dynamodb", op+" throttled", unscoped(key), "")
		return fmt.Errorf("%s: %w", op, errThrottled)
	}
	return nil
}

// Claim implements idempotency.Store.
func (st *store) Claim(ctx context.Context, l idempotency.Lease) (idempotency.Record, bool, error) {
	if err := st.fault(ctx, "claim", l.Key); err != nil {
		return idempotency.Record{}, false, err
	}
	prev, had := st.MemoryStore.Get(l.Key)
	cur, claimed, err := st.MemoryStore.Claim(ctx, l)
	if claimed && had && prev.Status == idempotency.InProgress && prev.ExpiresAt.After(l.Now) {
		st.s.stats.Takeovers++
		st.s.trace.add(st.s.clock.Now(), "consumer", "takeover (in doubt)", unscoped(l.Key), "")
	}
	return cur, claimed, err
}

// Complete implements idempotency.Store.
func (st *store) Complete(ctx context.Context, l idempotency.Lease, result string) error {
	s := st.s
	if err := st.fault(ctx, "complete", l.Key); err != nil {
		return err
	}
	once := false
	if id := unscoped(l.Key); slices.Contains(s.cfg.Faults.CrashFirstCompletion, id) && !s.crashed[id] {
		s.crashed[id] = true
		once = true
	}
	if inv := invocationOf(ctx); inv != nil && (once || s.dice.chance("crash-after-effect", l.Key, s.cfg.Faults.CrashAfterEffect)) {
		inv.kill("crash between the effect and its completion")
		s.stats.CrashesAfterEffect++
		s.trace.add(s.clock.Now(), "consumer", "crash after effect", unscoped(l.Key), result)
		return errKilled
	}
	if s.dice.chance("complete-hiccup", l.Key, s.cfg.Faults.CompleteErrors) {
		s.trace.add(s.clock.Now(), "dynamodb", "complete failed", unscoped(l.Key), result)
		return fmt.Errorf("complete: %w", errThrottled)
	}
	return st.MemoryStore.Complete(ctx, l, result)
}

// Release implements idempotency.Store.
func (st *store) Release(ctx context.Context, l idempotency.Lease) error {
	if err := st.fault(ctx, "release", l.Key); err != nil {
		return err
	}
	return st.MemoryStore.Release(ctx, l)
}

// runState is one replay run as the simulation sees it.
type runState struct {
	id      string
	inv     *invocation
	crash   crashPlan
	overlap func(ctx context.Context) error // called once, at the first send: a slow call, another run starts
	reset   bool                            // the request resets counts
	filter  replay.Filter                   // the request's filter
	sends   int
	deletes int
	recvs   atomic.Int64

	mu      sync.Mutex          // the engine's goroutines share the fields below (and sends, deletes, overlap, orig)
	orig    map[string]string   // original message id -> DLQ message id, from this run's receives
	intents map[string][]string // original message id -> DLQ message ids this run marked INTENT
}

// crashPlan says where a run crashes: at the At-th call of Op ("after-send",
// "before-delete", "after-receive"); zero value: never.
type crashPlan struct {
	Op string
	At int
}

// ledger is the replay ledger of one run: the shared in-memory ledger with
// throttling, DynamoDB's key limits, and the run's crash. Methods beyond
// the five of the port pass through.
type ledger struct {
	replay.Ledger
	s   *Sim
	run *runState
}

func (l *ledger) fault(op, key string, counted bool) error {
	s := l.s
	if l.run.inv.dead() {
		return errCrashed
	}
	hit := s.clock.Now().Before(s.start.Add(s.cfg.Faults.LedgerOutage))
	if !hit && s.cfg.Faults.LedgerErrors > 0 {
		if counted {
			hit = s.dice.roll("ledger-"+op, key) < s.cfg.Faults.LedgerErrors
		} else {
			// Reads of one key in one batch may run concurrently: they
			// share a roll, so the order of the goroutines does not matter.
			hit = s.dice.at("ledger-"+op, l.run.id+"/"+strconv.FormatInt(l.run.recvs.Load(), 10)+"/"+key, 0) < s.cfg.Faults.LedgerErrors
		}
	}
	if hit {
		s.trace.add(s.clock.Now(), "replay/"+l.run.id, "ledger "+op+" throttled", key, "")
		return fmt.Errorf("ledger %s: %w", op, errThrottled)
	}
	return nil
}

func checkKeys(pk, sk string) error {
	switch {
	case len(pk) > maxPartitionKeyBytes:
		return fmt.Errorf("partition key of %d bytes: %w", len(pk), errKeyTooBig)
	case len(sk) > maxSortKeyBytes:
		return fmt.Errorf("sort key of %d bytes: %w", len(sk), errKeyTooBig)
	}
	return nil
}

// Mark implements replay.Ledger.
func (l *ledger) Mark(ctx context.Context, r replay.MessageRecord) (replay.MessageRecord, bool, error) {
	if err := l.fault("mark", r.OrderKey+"/"+r.MessageID+"/"+string(r.State), true); err != nil {
		return replay.MessageRecord{}, false, err
	}
	if err := checkKeys(r.OrderKey, r.MessageID); err != nil {
		return replay.MessageRecord{}, false, err
	}
	cur, ok, err := l.Ledger.Mark(ctx, r)
	if err == nil && ok {
		l.s.leases.mark(r)
		if r.State == replay.Intent && r.RunID == l.run.id {
			l.run.mu.Lock()
			if !slices.Contains(l.run.intents[r.OriginalMessageID], r.MessageID) {
				l.run.intents[r.OriginalMessageID] = append(l.run.intents[r.OriginalMessageID], r.MessageID)
			}
			l.run.mu.Unlock()
		}
	}
	return cur, ok, err
}

// MarkBatch implements replay.BatchLedger: each record as Mark, with its
// faults, so that the engine's batched path runs in the simulation.
func (l *ledger) MarkBatch(ctx context.Context, records []replay.MessageRecord) []replay.Marked {
	out := make([]replay.Marked, len(records))
	for i, r := range records {
		out[i].Record, out[i].OK, out[i].Err = l.Mark(ctx, r)
	}
	return out
}

// OrderHistory implements replay.Ledger.
func (l *ledger) OrderHistory(ctx context.Context, orderKey string) ([]replay.MessageRecord, error) {
	if err := l.fault("history", orderKey, false); err != nil {
		return nil, err
	}
	if err := checkKeys(orderKey, ""); err != nil {
		return nil, err
	}
	return l.Ledger.OrderHistory(ctx, orderKey)
}

// PutRun implements replay.Ledger.
func (l *ledger) PutRun(ctx context.Context, sum replay.Summary, expiresAt time.Time) error {
	if err := l.fault("put-run", sum.RunID, true); err != nil {
		return err
	}
	return l.Ledger.PutRun(ctx, sum, expiresAt)
}

// LastRun implements replay.Ledger.
func (l *ledger) LastRun(ctx context.Context) (replay.Summary, bool, error) {
	if err := l.fault("last-run", l.run.id, true); err != nil {
		return replay.Summary{}, false, err
	}
	return l.Ledger.LastRun(ctx)
}

// Runs implements replay.Ledger.
func (l *ledger) Runs(ctx context.Context, n int) ([]replay.Summary, error) {
	if err := l.fault("runs", l.run.id, true); err != nil {
		return nil, err
	}
	return l.Ledger.Runs(ctx, n)
}

// unscoped is a store key without its scope: the orderId (or its hash), as
// traces name orders.
func unscoped(key string) string {
	if _, id, ok := settings.SplitKey(key); ok {
		return id
	}
	return key
}
