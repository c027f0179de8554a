package sim

import (
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Event is one line of a simulation's trace.
type Event struct {
	At      time.Time
	Actor   string // producer, esm, consumer, tax, replay/<run id>, operator, clock, ...
	Op      string
	Subject string // message and order ids the line is about, space separated
	Detail  string
}

// Trace is the event log of one simulation. It is safe for concurrent use;
// its digest does not depend on the order in which concurrent events were
// added.
type Trace struct {
	mu     sync.Mutex
	start  time.Time
	events []Event
	digest uint64
}

func newTrace(start time.Time) *Trace { return &Trace{start: start} }

// add appends an event.
func (t *Trace) add(at time.Time, actor, op, subject, detail string) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s|%s|%s|%s", at.UnixNano(), actor, op, subject, detail)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, Event{At: at, Actor: actor, Op: op, Subject: subject, Detail: detail})
	t.digest += h.Sum64()
}

// Digest is an order-independent hash of every event: two runs of a seed
// agree on it when they did the same things at the same simulated times.
func (t *Trace) Digest() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.digest
}

// Len is the number of events.
func (t *Trace) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.events)
}

// Write writes the events whose subject mentions one of subjects (all events
// when subjects is empty), at most limit of them (the last ones), one a line,
// with the time since the start.
func (t *Trace) Write(w io.Writer, subjects []string, limit int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var picked []Event
	for _, e := range t.events {
		tokens := strings.FieldsFunc(e.Subject, func(r rune) bool { return r == ' ' || r == ',' })
		if len(subjects) == 0 || slices.ContainsFunc(tokens, func(tok string) bool { return slices.Contains(subjects, tok) }) {
			picked = append(picked, e)
		}
	}
	if limit > 0 && len(picked) > limit {
		fmt.Fprintf(w, "  ... %d earlier lines\n", len(picked)-limit)
		picked = picked[len(picked)-limit:]
	}
	for _, e := range picked {
		fmt.Fprintf(w, "  %10s %-18s %-22s %s", fmtOffset(e.At.Sub(t.start)), e.Actor, e.Op, e.Subject)
		if e.Detail != "" {
			fmt.Fprintf(w, "  (%s)", e.Detail)
		}
		fmt.Fprintln(w)
	}
}

func fmtOffset(d time.Duration) string {
	return fmt.Sprintf("+%dh%02dm%02d.%03ds", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60, d.Milliseconds()%1000)
}
