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
	p = fifo.Park{Group: p.Group, Reason: p.Reason, Head: p.Head, Queue: p.Queue, Since: p.Since}
	m.parks[p.Group] = p
	return p, nil
}

// update applies f to the park of group: ErrNotParked when there is none.
func (m *Memory) update(group string, f func(p *fifo.Park) error) error {
	defer m.mu.Unlock()
	if err := m.lock(); err != nil {
		return err
	}
	p, ok := m.parks[group]
	if !ok {
		return fifo.ErrNotParked
	}
	if err := f(&p); err != nil {
		return err
	}
	m.parks[group] = p
	return nil
}

// Repark implements [fifo.Store].
func (m *Memory) Repark(_ context.Context, group, head, reason, queue string) error {
	return m.update(group, func(p *fifo.Park) error {
		if p.Releasing != "" {
			p.Previous = p.Releasing
		}
		p.Head, p.Reason, p.Queue, p.Releasing = head, reason, queue, ""
		return nil
	})
}

// Count implements [fifo.Store].
func (m *Memory) Count(_ context.Context, group string, c fifo.Count) error {
	return m.update(group, func(p *fifo.Park) error {
		if c.Seq != "" {
			if c.Seq <= p.Seq {
				return nil
			}
			p.Seq = c.Seq
		}
		p.Parked += c.Parked
		p.Applied = max(p.Applied, c.Index)
		return nil
	})
}

// Begin implements [fifo.Store].
func (m *Memory) Begin(_ context.Context, group, round string) error {
	return m.update(group, func(p *fifo.Park) error {
		if p.Releasing != "" || p.Applied < p.Moved {
			return fifo.ErrChanged
		}
		p.Releasing, p.Previous, p.Applied = round, "", p.Moved
		return nil
	})
}

// Move implements [fifo.Store].
func (m *Memory) Move(_ context.Context, group, round, id string, index int) (bool, error) {
	current := false
	err := m.update(group, func(p *fifo.Park) error {
		switch {
		case p.LastMoved == id && p.Moved == index:
		case p.Moved != index-1:
			return fifo.ErrChanged
		default:
			p.Moved, p.LastMoved = index, id
		}
		current = p.Releasing == round
		return nil
	})
	return current, err
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
