package replaytest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/replay"
)

// MemoryLedger is an in-memory [replay.Ledger] with the same semantics as the
// DynamoDB one, for tests and single-process use. It is safe for concurrent
// use.
type MemoryLedger struct {
	now func() time.Time

	mu        sync.Mutex
	histories map[string]map[string]record.Message // history key -> DLQ message id -> record
	runs      []storedRun                          // sorted by StartedAt, then RunID
}

type storedRun struct {
	startedAt time.Time
	runID     string
	summary   []byte // JSON, as the DynamoDB ledger stores it
	expiresAt time.Time
}

// NewMemoryLedger returns an empty ledger whose clock (for expiry) is now;
// nil means time.Now.
func NewMemoryLedger(now func() time.Time) *MemoryLedger {
	if now == nil {
		now = time.Now
	}
	return &MemoryLedger{now: now, histories: map[string]map[string]record.Message{}}
}

var _ replay.Ledger = (*MemoryLedger)(nil)

// maxPartitionKey is DynamoDB's limit on a partition key, in bytes; the
// memory ledger enforces it too, so that a key that grows with its input
// fails here as it would there.
const maxPartitionKey = 2048

func checkKey(key string) error {
	if len(key) > maxPartitionKey {
		return fmt.Errorf("ValidationException: partition key of %d bytes, over the %d-byte limit", len(key), maxPartitionKey)
	}
	return nil
}

// Mark implements [replay.Ledger].
func (m *MemoryLedger) Mark(_ context.Context, r record.Message) (record.Message, bool, error) {
	if err := checkKey(r.HistoryKey); err != nil {
		return record.Message{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	msgs := m.histories[r.HistoryKey]
	var cur *record.Message
	if c, ok := msgs[r.ID()]; ok && m.now().Before(c.ExpiresAt) {
		cur = &c
	}
	if !record.Transition(cur, r) {
		if cur == nil {
			return record.Message{}, false, nil
		}
		return *cur, false, nil
	}
	if cur != nil && !cur.FirstSeenAt.IsZero() {
		r.FirstSeenAt = cur.FirstSeenAt
	}
	if r.State != record.Intent {
		r.LeaseUntil = time.Time{}
	}
	if msgs == nil {
		msgs = map[string]record.Message{}
		m.histories[r.HistoryKey] = msgs
	}
	msgs[r.ID()] = r
	if cur == nil {
		return record.Message{}, true, nil
	}
	return *cur, true, nil
}

// MarkBatch implements replay.Ledger's MarkBatch.
func (m *MemoryLedger) MarkBatch(ctx context.Context, records []record.Message) []record.Marked {
	out := make([]record.Marked, len(records))
	for i, r := range records {
		out[i].Record, out[i].OK, out[i].Err = m.Mark(ctx, r)
	}
	return out
}

// History implements [replay.Ledger]; the records come sorted by FirstSeenAt.
func (m *MemoryLedger) History(_ context.Context, historyKey string) ([]record.Message, error) {
	if err := checkKey(historyKey); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []record.Message
	for _, r := range m.histories[historyKey] {
		if now.Before(r.ExpiresAt) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b record.Message) int {
		return cmp.Or(a.FirstSeenAt.Compare(b.FirstSeenAt), cmp.Compare(a.MessageID, b.MessageID))
	})
	return out, nil
}

// PutRun implements [replay.Ledger].
func (m *MemoryLedger) PutRun(_ context.Context, s replay.Summary, expiresAt time.Time) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", s.RunID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	run := storedRun{startedAt: s.StartedAt, runID: s.RunID, summary: b, expiresAt: expiresAt}
	i, found := slices.BinarySearchFunc(m.runs, run, compareRuns)
	if found {
		m.runs[i] = run
		return nil
	}
	m.runs = slices.Insert(m.runs, i, run)
	return nil
}

func compareRuns(a, b storedRun) int {
	return cmp.Or(a.startedAt.Compare(b.startedAt), cmp.Compare(a.runID, b.runID))
}

// LastRun implements [replay.Ledger].
func (m *MemoryLedger) LastRun(ctx context.Context) (replay.Summary, bool, error) {
	runs, err := m.Runs(ctx, 1)
	if err != nil || len(runs) == 0 {
		return replay.Summary{}, false, err
	}
	return runs[0], true, nil
}

// Runs implements [replay.Ledger].
func (m *MemoryLedger) Runs(_ context.Context, n int) ([]replay.Summary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []replay.Summary
	for i := len(m.runs) - 1; i >= 0 && len(out) < n; i-- {
		if !now.Before(m.runs[i].expiresAt) {
			continue
		}
		var s replay.Summary
		if err := json.Unmarshal(m.runs[i].summary, &s); err != nil {
			return nil, fmt.Errorf("decode run %s: %w", m.runs[i].runID, err)
		}
		out = append(out, s)
	}
	return out, nil
}
