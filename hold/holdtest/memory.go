package holdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/homingdlq/homing/hold"
)

// Memory is a [hold.Store] in memory, for tests and the simulation. It is
// safe for concurrent use. The zero value is not usable: use [NewMemory].
type Memory struct {
	mu    sync.Mutex
	holds map[string]hold.Hold
	// held is group -> seq -> the record as JSON: kept encoded, as a
	// real store keeps it, so that neither the caller's copy nor the one
	// Next returned shares its maps with the store.
	held map[string]map[string][]byte
	next int64
}

var _ hold.Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{holds: map[string]hold.Hold{}, held: map[string]map[string][]byte{}}
}

func (m *Memory) version() int64 {
	m.next++
	return m.next
}

// Holds implements [hold.Store].
func (m *Memory) Holds(_ context.Context, groups []string) (map[string]hold.Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]hold.Hold{}
	for _, g := range groups {
		if h, ok := m.holds[g]; ok {
			out[g] = h
		}
	}
	return out, nil
}

// Begin implements [hold.Store].
func (m *Memory) Begin(_ context.Context, h hold.Hold, now time.Time) (hold.Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.holds[h.Group]; ok {
		return cur, nil
	}
	h = hold.Hold{Group: h.Group, Head: h.Head, HeadBody: h.HeadBody, State: hold.Held, Parked: h.Parked, Since: now, Updated: now, Version: m.version()}
	m.holds[h.Group] = h
	return h, nil
}

// Append implements [hold.Store].
func (m *Memory) Append(_ context.Context, group string, msg hold.Message, now time.Time) (hold.Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.holds[group]
	if !ok {
		return hold.Hold{}, hold.ErrNotHeld
	}
	if _, dup := m.held[group][msg.Seq]; dup {
		return h, nil
	}
	if !json.Valid(msg.Record) {
		return hold.Hold{}, fmt.Errorf("holdtest: record %s of group %q is not JSON", msg.Seq, group)
	}
	record := slices.Clone([]byte(msg.Record))
	if m.held[group] == nil {
		m.held[group] = map[string][]byte{}
	}
	m.held[group][msg.Seq] = record
	h.Version, h.Updated = m.version(), now
	m.holds[group] = h
	return h, nil
}

// Next implements [hold.Store].
func (m *Memory) Next(_ context.Context, group string, n int) ([]hold.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seqs := make([]string, 0, len(m.held[group]))
	for s := range m.held[group] {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	out := []hold.Message{}
	for _, s := range seqs[:max(0, min(n, len(seqs)))] {
		out = append(out, hold.Message{Seq: s, Record: slices.Clone(m.held[group][s])})
	}
	return out, nil
}

// Count implements [hold.Store].
func (m *Memory) Count(_ context.Context, group string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held[group]), nil
}

// Remove implements [hold.Store].
func (m *Memory) Remove(_ context.Context, group, seq string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.held[group], seq)
	if len(m.held[group]) == 0 {
		delete(m.held, group)
	}
	return nil
}

// Update implements [hold.Store].
func (m *Memory) Update(_ context.Context, h hold.Hold, now time.Time) (hold.Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.holds[h.Group]
	switch {
	case !ok:
		return hold.Hold{}, hold.ErrNotHeld
	case cur.Version != h.Version:
		return hold.Hold{}, hold.ErrConflict
	}
	cur.Head = h.Head
	cur.HeadBody = h.HeadBody
	cur.State = h.State
	cur.Parked = h.Parked
	cur.Version, cur.Updated = m.version(), now
	m.holds[h.Group] = cur
	return cur, nil
}

// End implements [hold.Store].
func (m *Memory) End(_ context.Context, h hold.Hold) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.holds[h.Group]
	switch {
	case !ok:
		return nil
	case cur.Version != h.Version:
		return hold.ErrConflict
	}
	delete(m.holds, h.Group)
	return nil
}

// List implements [hold.Store].
func (m *Memory) List(context.Context) ([]hold.Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]hold.Hold, 0, len(m.holds))
	for _, h := range m.holds {
		h.HeadBody = ""
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}
