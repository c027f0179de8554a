// Package fifotest keeps the parks of a FIFO lane in memory, for tests.
package fifotest

import (
	"cmp"
	"context"
	"errors"
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
			out[g] = clone(p)
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
		return clone(cur), nil
	}
	p = fifo.Park{Group: p.Group, Reason: p.Reason, Head: p.Head, Queue: p.Queue, Since: p.Since}
	m.parks[p.Group] = p
	return p, nil
}

func clone(p fifo.Park) fifo.Park {
	p.Batch, p.Keys, p.Recent, p.Rounds = slices.Clone(p.Batch), slices.Clone(p.Keys), slices.Clone(p.Recent), slices.Clone(p.Rounds)
	return p
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
	p = clone(p)
	if err := f(&p); err != nil {
		return err
	}
	m.parks[group] = p
	return nil
}

// Count implements [fifo.Store].
func (m *Memory) Count(_ context.Context, group string, c fifo.Count) error {
	err := m.update(group, func(p *fifo.Park) error {
		switch {
		case c.Seq != "" && c.Seq <= p.Seq:
			return errCounted
		case c.Index > 0 && p.Releasing != c.Round:
			return fifo.ErrChanged
		case c.Index > 0 && p.Settled >= c.Index:
			return errCounted
		}
		if c.Seq != "" {
			p.Seq = c.Seq
		}
		p.Parked += c.Parked
		p.Settled = max(p.Settled, c.Index)
		if c.Stop > 0 {
			p.Stop, p.Head, p.Reason, p.Queue = c.Stop, c.Head, c.Reason, c.Queue
		}
		return nil
	})
	if errors.Is(err, errCounted) {
		return nil
	}
	return err
}

// errCounted stops a Count of a record counted already.
var errCounted = errors.New("counted already")

// Begin implements [fifo.Store].
func (m *Memory) Begin(_ context.Context, group, round string, batch, keys []string) error {
	return m.update(group, func(p *fifo.Park) error {
		if p.Releasing != "" {
			return fifo.ErrChanged
		}
		p.Releasing, p.Batch, p.Keys, p.Sent, p.Settled, p.Stop = round, slices.Clone(batch), slices.Clone(keys), 0, 0, 0
		return nil
	})
}

// Sent implements [fifo.Store].
func (m *Memory) Sent(_ context.Context, group, round string, n int) error {
	return m.update(group, func(p *fifo.Park) error {
		if p.Releasing != round {
			return fifo.ErrChanged
		}
		p.Sent = max(p.Sent, n)
		return nil
	})
}

// End implements [fifo.Store].
func (m *Memory) End(_ context.Context, group, round string) error {
	return m.update(group, func(p *fifo.Park) error {
		if p.Releasing != round || p.Settled < p.Sent {
			return fifo.ErrChanged
		}
		*p = p.Ended()
		return nil
	})
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
	case cur.Releasing != "" || cur.Parked != p.Parked || cur.Moved != p.Moved:
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
		out = append(out, clone(p))
	}
	slices.SortFunc(out, func(a, b fifo.Park) int { return cmp.Compare(a.Group, b.Group) })
	return out, nil
}
