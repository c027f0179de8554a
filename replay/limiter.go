package replay

import (
	"context"
	"sync"
	"time"
)

// limiter spaces sends to a rate with virtual scheduling: taking n tokens
// pushes the next free slot n intervals on, and waits until the current one.
// A batch of up to 10 therefore leaves at once, and the next one waits for
// the time the previous one used up. It is safe for concurrent use (the
// workers of a run share it).
type limiter struct {
	mu       sync.Mutex
	interval time.Duration // time per token
	next     time.Time     // when the next token is free
	now      func() time.Time
	sleep    func(context.Context, time.Duration) error
}

func newLimiter(rate float64, now func() time.Time, sleep func(context.Context, time.Duration) error) *limiter {
	return &limiter{interval: time.Duration(float64(time.Second) / rate), now: now, sleep: sleep}
}

// delay is how long a wait would sleep now.
func (l *limiter) delay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(0, l.next.Sub(l.now()))
}

// wait takes n tokens, sleeping until the first is free. It returns ctx's
// error when ctx ends first; the tokens stay taken.
func (l *limiter) wait(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	l.mu.Lock()
	now := l.now()
	if l.next.Before(now) {
		l.next = now
	}
	d := l.next.Sub(now)
	l.next = l.next.Add(time.Duration(n) * l.interval)
	l.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return l.sleep(ctx, d)
}
