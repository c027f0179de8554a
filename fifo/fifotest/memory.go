// Package fifotest keeps the parks of a FIFO lane in memory, for tests.
package fifotest

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/homingdlq/homing/fifo"
)

// Memory is a [fifo.Store] in memory. The zero value is ready; it is safe
// for concurrent use.
type Memory struct {
	mu    sync.Mutex
	parks map[string]fifo.Park
	// Err, when set, is returned by every call.
	Err error
}

var _ fifo.Store = (*Memory)(nil)

func (m *Memory) lock() error {
	m.mu.Lock()
	if m.parks == nil {
		m.parks = map[string]fifo.Park{}
	}
	return m.Err
}

// Parked implements [fifo.Store].
func (m *Memory) Parked(_ context.Context, groups []string) (map[string]fifo.Park, error) {
	defer m.mu.Unlock()
	if err := m.lock(); err != nil {
		return nil, err
	}
	out := map[string]fifo.Park{}
	for _, g := range groups {
		if p, ok := m.parks[g]; ok {
			out[g] = p
		}
	}
	return out, nil
}

// Park implements [fifo.Store].
func (m *Memory) Park(_ context.Context, p fifo.Park) (fifo.Park, error) {
	defer m.mu.Unlock()
	if err := m.lock(); err != nil {
		return fifo.Park{}, err
	}
	if cur, ok := m.parks[p.Group]; ok {
		return cur, nil
	}
	p.Moved, p.Applied, p.Releasing = 0, 0, ""
	m.parks[p.Group] = p
	return p, nil
}

// Repark implements [fifo.Store].
func (m *Memory) Repark(_ context.Context, group, head, reason, queue string) error {
	defer m.mu.Unlock()
	if err := m.lock(); err != nil {
		return err
	}
	p, ok := m.parks[group]
	if !ok {
		return fifo.ErrNotParked
	}
	if p.Releasing != "" {
		p.Previous = p.Releasing
	}
	p.Head, p.Reason, p.Queue, p.Releasing = head, reason, queue, ""
	m.parks[group] = p
	return nil
}

// Count implements [fifo.Store].
func (m *Memory) Count(_ context.Context, group string, parked, moved, applied int, round string) error {
	defer m.mu.Unlock()
	if err := m.lock(); err != nil {
		return err
	}
	p, ok := m.parks[group]
	switch {
	case !ok:
		return fifo.ErrNotParked
	case round != "" && p.Releasing != round:
		return fifo.ErrChanged
	}
	p.Parked += parked
	p.Moved += moved
	p.Applied += applied
	m.parks[group] = p
	return nil
}

// Begin implements [fifo.Store].
func (m *Memory) Begin(_ context.Context, group, round string) error {
	defer m.mu.Unlock()
	if err := m.lock(); err != nil {
		return err
	}
	p, ok := m.parks[group]
	if !ok {
		return fifo.ErrNotParked
	}
	p.Releasing = round
	m.parks[group] = p
	return nil
}

// Release implements [fifo.Store].
func (m *Memory) Release(_ context.Context, p fifo.Park) error {
	defer m.mu.Unlock()
	if err := m.lock(); err != nil {
		return err
	}
	cur, ok := m.parks[p.Group]
	switch {
	case !ok:
		return nil
	case cur.Parked != p.Parked || cur.Moved != p.Moved || cur.Applied != p.Applied || cur.Releasing != p.Releasing:
		return fifo.ErrChanged
	}
	delete(m.parks, p.Group)
	return nil
}

// List implements [fifo.Store].
func (m *Memory) List(context.Context) ([]fifo.Park, error) {
	defer m.mu.Unlock()
	if err := m.lock(); err != nil {
		return nil, err
	}
	out := make([]fifo.Park, 0, len(m.parks))
	for _, p := range m.parks {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b fifo.Park) int { return cmp.Compare(a.Group, b.Group) })
	return out, nil
}
