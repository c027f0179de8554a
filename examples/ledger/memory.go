package ledger

import (
	"context"
	"slices"
	"sync"
)

// Memory is a Ledger in memory. Its zero value is an empty ledger. It is
// safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	accounts map[string][]Entry
	payments map[string]Entry
	frozen   map[string]bool
}

var _ Ledger = (*Memory)(nil)

// Append implements Ledger.
func (m *Memory) Append(_ context.Context, p Posting) (Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.payments[p.PaymentID]; ok {
		return e, nil
	}
	if m.frozen[p.AccountID] {
		return Entry{}, notApplied("append %s to %s: %w", p.PaymentID, p.AccountID, ErrFrozen)
	}
	if m.accounts == nil {
		m.accounts = map[string][]Entry{}
		m.payments = map[string]Entry{}
	}
	e := Entry{Posting: p, Seq: int64(len(m.accounts[p.AccountID]) + 1)}
	m.accounts[p.AccountID] = append(m.accounts[p.AccountID], e)
	m.payments[p.PaymentID] = e
	return e, nil
}

// Lookup implements Ledger.
func (m *Memory) Lookup(_ context.Context, paymentID string) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.payments[paymentID]
	return e, ok, nil
}

// Entries implements Ledger.
func (m *Memory) Entries(_ context.Context, accountID string) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.accounts[accountID]), nil
}

// Freeze implements Ledger.
func (m *Memory) Freeze(_ context.Context, accountID string, frozen bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.frozen == nil {
		m.frozen = map[string]bool{}
	}
	m.frozen[accountID] = frozen
	return nil
}
