package idempotency

import (
	"context"
	"sync"
	"time"
)

// MemoryStore is an in-memory [Store] with the same semantics as the
// DynamoDB one. It is safe for concurrent use; its zero value is ready.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]Record
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Claim implements [Store].
func (m *MemoryStore) Claim(_ context.Context, l Lease) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[l.Key]
	if ok && stands(r, l) {
		return r, false, nil
	}
	if m.records == nil {
		m.records = map[string]Record{}
	}
	m.records[l.Key] = Record{
		Key: l.Key, Status: InProgress, PayloadHash: l.PayloadHash, Token: l.Token,
		LockExpiresAt: l.Until, ExpiresAt: l.ExpiresAt,
	}
	if ok && l.Now.Before(r.ExpiresAt) {
		return r, true, nil // took over an expired lock: in doubt
	}
	return Record{}, true, nil
}

// stands mirrors the DynamoDB condition: a record stands unless it expired,
// or it is an IN_PROGRESS lock past its expiry of the same payload, or the
// one the lease supersedes.
func stands(r Record, l Lease) bool {
	if !l.Now.Before(r.ExpiresAt) {
		return false
	}
	if r.Status == Completed || l.Now.Before(r.LockExpiresAt) {
		return true
	}
	return r.PayloadHash != l.PayloadHash && (l.Supersedes == "" || r.Token != l.Supersedes)
}

// Complete implements [Store].
func (m *MemoryStore) Complete(_ context.Context, l Lease, result string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[l.Key]
	switch {
	case ok && r.Status == Completed && r.Token == l.Token:
		return nil // completed by this claim already
	case !ok || r.Status != InProgress || r.Token != l.Token:
		return ErrLeaseLost
	}
	r.Status, r.Result, r.ExpiresAt, r.LockExpiresAt = Completed, result, l.ExpiresAt, time.Time{}
	m.records[l.Key] = r
	return nil
}

// Release implements [Store].
func (m *MemoryStore) Release(_ context.Context, l Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[l.Key]
	if !ok || r.Status != InProgress || r.Token != l.Token {
		return ErrLeaseLost
	}
	delete(m.records, l.Key)
	return nil
}

// Get returns the record of a full key ("<scope>#<key>"), for tests and audits.
func (m *MemoryStore) Get(key string) (Record, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[key]
	return r, ok
}
