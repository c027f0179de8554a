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
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
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

	// mu guards the fields below (and sends, deletes, overlap): the
	// engine's goroutines share them.
	mu sync.Mutex
	// received are the messages this run received from the queue it reads,
	// by id; byBody the ids by body. A message the run sends is told by
	// its body and, among messages of one body, by what the run holds: not
	// by the metadata it carries, which a producer may have copied.
	received map[string]receivedMessage
	byBody   map[string][]string
	intended map[string]bool // DLQ message ids whose INTENT this run marked
	// unintended are the DLQ message ids whose INTENT mark by this run
	// failed (an injected fault, a key over DynamoDB's limits): the engine
	// then parks without the ledger, and does not remove a dead letter as
	// already applied (that needs its RESOLVED record).
	unintended map[string]bool
	sent       map[string]bool // DLQ message ids this run sent (replayed or parked)
	deleted    map[string]bool // DLQ message ids this run deleted
	// deleteFailed are the DLQ message ids whose delete by this run failed
	// by an injected fault: another run may send them again.
	deleteFailed map[string]bool
	replayedPubs []int // the publications this run replayed to the source queue
	// evidence: the run ended without an error, its summary on the
	// ledger, having replayed at least two messages: the breaker can judge
	// it (replay's minEvidence). Set when it ends.
	evidence bool
}

// receivedMessage is what a run received of one message, as the engine
// reads it: its metadata when the seal verifies (see Sim.ours), else none
// (a producer's copy or forgery is not the engine's, whatever it says).
type receivedMessage struct {
	body    string
	orig    string          // the original message id its metadata names, or its id
	count   int             // the replay count its metadata names
	refunds int             // the refunds its metadata names
	meta    replay.Metadata // its metadata, when sealed (zero otherwise)
	sealed  bool            // its metadata is the engine's
	sentAt  time.Time       // its SentTimestamp; zero when absent
}

// firstDeadLettered is the FirstDeadLetteredAt the engine writes on a send
// of the message (its metadata's, else its SentTimestamp); zero when the
// engine would use its clock (no SentTimestamp).
func (m receivedMessage) firstDeadLettered() time.Time {
	if m.sealed && !m.meta.FirstDeadLetteredAt.IsZero() {
		return m.meta.FirstDeadLetteredAt
	}
	return m.sentAt
}

// derives reports whether sent, sealed metadata the engine wrote on a send
// (a park when park; in a reset-count run when reset), is what the engine
// writes for m: the same original id, first dead-lettering and reset; a
// count one more (a replay) or the same (a park), or one given back with a
// refund more; a park keeps the last replay time. The engine builds a
// send's metadata from the message it sends (replay/plan.go, build), so
// among messages of one body this tells which one a send carries (copies
// of one send aside, which carry the same).
func derives(sent replay.Metadata, m receivedMessage, park, reset bool) bool {
	count, refunds, last, resetAt := m.count, m.refunds, m.meta.LastReplayAt, m.meta.ResetAt
	if reset {
		// A reset restarts the count and the refunds (replay/plan.go).
		count, refunds, last, resetAt = 0, 0, time.Time{}, sent.ResetAt
	}
	if sent.OriginalMessageID != m.orig || !sent.ResetAt.Equal(resetAt) {
		return false
	}
	if first := m.firstDeadLettered(); !first.IsZero() && !sent.FirstDeadLetteredAt.Equal(first) {
		return false
	}
	if park && !sent.LastReplayAt.Equal(last) {
		return false
	}
	return countFollows(sent, count, refunds, park)
}

// countFollows reports whether the count and refunds of sent follow from
// count and refunds: a replay counts one more, a park as many; either may
// give one back with a refund more.
func countFollows(sent replay.Metadata, count, refunds int, park bool) bool {
	c, r := sent.ReplayCount, sent.Refunds
	switch {
	case park:
		return (c == count && r == refunds) || (c == count-1 && r == refunds+1)
	default:
		return (c == count+1 && r == refunds) || (c == count && r == refunds+1)
	}
}

// source returns the message this run received that a send of body, with
// metadata sent, carries: of the messages of that body not taken by another
// entry of the same call, one whose metadata sent derives from (when the
// engine sealed sent: see derives), else one whose lease this run holds,
// else one sent's original id names, else one whose count and refunds the
// sent ones follow, else one not sent yet by this run. It returns "" when
// the run received no message of that body. The metadata of a message is
// evidence only when its seal verifies: a producer may have copied it.
// Copies of one message (a send repeated after a crash) carry the same
// metadata: which of them a send carries is settled when the run deletes
// one (see resettle). Callers hold r.mu.
func (r *runState) source(l *leases, body string, sent replay.Metadata, sealed, park bool, now time.Time, taken map[string]bool) string {
	best, score := "", -1
	for _, id := range r.byBody[body] {
		n := 0
		if !taken[id] {
			n += 128
		}
		got := r.received[id]
		if sealed && derives(sent, got, park, r.reset) {
			n += 64
		}
		if h, ok := l.get(id); ok && h.run == r.id && now.Before(h.until) {
			n += 32
		}
		if id == sent.OriginalMessageID || got.orig == sent.OriginalMessageID {
			n += 16
		}
		if countFollows(sent, got.count, got.refunds, park) {
			n += 8
		}
		if !r.sent[id] {
			n++
		}
		if n > score {
			best, score = id, n
		}
	}
	return best
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

func (l *ledger) fault(ctx context.Context, op, key string, counted bool) error {
	s := l.s
	if l.run.inv.dead() {
		return errCrashed
	}
	if err := s.expired(ctx); err != nil {
		return fmt.Errorf("ledger %s: %w", op, err)
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
func (l *ledger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	err := l.fault(ctx, "mark", r.HistoryKey+"/"+r.MessageID+"/"+string(r.State), true)
	if err == nil {
		err = checkKeys(r.HistoryKey, r.ID())
	}
	if err != nil {
		if r.State == record.Intent && r.RunID == l.run.id {
			l.run.mu.Lock()
			l.run.unintended[r.MessageID] = true
			l.run.mu.Unlock()
		}
		return record.Message{}, false, err
	}
	cur, ok, err := l.Ledger.Mark(ctx, r)
	if err == nil && ok {
		l.s.leases.mark(r)
		if r.State == record.Intent && r.RunID == l.run.id {
			l.run.mu.Lock()
			l.run.intended[r.MessageID] = true
			l.run.mu.Unlock()
		}
	}
	return cur, ok, err
}

// MarkBatch implements replay.Ledger's MarkBatch: each record as Mark, with its
// faults, so that the engine's batched path runs in the simulation.
func (l *ledger) MarkBatch(ctx context.Context, records []record.Message) []record.Marked {
	out := make([]record.Marked, len(records))
	for i, r := range records {
		out[i].Record, out[i].OK, out[i].Err = l.Mark(ctx, r)
	}
	return out
}

// History implements replay.Ledger.
func (l *ledger) History(ctx context.Context, historyKey string) ([]record.Message, error) {
	if err := l.fault(ctx, "history", historyKey, false); err != nil {
		return nil, err
	}
	if err := checkKeys(historyKey, ""); err != nil {
		return nil, err
	}
	return l.Ledger.History(ctx, historyKey)
}

// PutRun implements replay.Ledger.
func (l *ledger) PutRun(ctx context.Context, sum replay.Summary, expiresAt time.Time) error {
	if err := l.fault(ctx, "put-run", sum.RunID, true); err != nil {
		return err
	}
	return l.Ledger.PutRun(ctx, sum, expiresAt)
}

// LastRun implements replay.Ledger.
func (l *ledger) LastRun(ctx context.Context) (replay.Summary, bool, error) {
	if err := l.fault(ctx, "last-run", l.run.id, true); err != nil {
		return replay.Summary{}, false, err
	}
	return l.Ledger.LastRun(ctx)
}

// Runs implements replay.Ledger.
func (l *ledger) Runs(ctx context.Context, n int) ([]replay.Summary, error) {
	if err := l.fault(ctx, "runs", l.run.id, true); err != nil {
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
