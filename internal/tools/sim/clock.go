package sim

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// deadlineCtx is a context whose deadline is a simulated time.
// context.WithDeadline would arm a timer on the real clock; this one only
// answers Deadline, and its Done is nil (cancellation comes from a
// context.WithCancel around it, which needs no goroutine for a parent that
// is never done).
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

// withSimDeadline returns a context that reports deadline and carries the
// values of parent.
func withSimDeadline(parent context.Context, deadline time.Time) context.Context {
	return deadlineCtx{Context: parent, deadline: deadline}
}

// Deadline implements context.Context.
func (c deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// invocation is one run of a Lambda function: the consumer, or a replay
// run. A function that dies (a crash, or its deadline passed) makes every
// later call of its ports fail without effect.
type invocation struct {
	id       string
	deadline time.Time
	mu       sync.Mutex // the replay engine's goroutines read it
	killed   bool
	why      string
	cancel   context.CancelFunc // replay runs only

	// consumer invocations: the source message ids published to the
	// invalid queue during this invocation.
	invalid map[string]bool
	records []events.SQSMessage // the batch
	// outcomes is the latest outcome the consumer logged for each message
	// id of the batch in this invocation.
	outcomes map[string]string
}

// newConsumerInvocation returns a consumer invocation of records that
// publishes to the invalid queue into invalid.
func newConsumerInvocation(id string, deadline time.Time, records []events.SQSMessage, invalid map[string]bool) *invocation {
	return &invocation{id: id, deadline: deadline, invalid: invalid, records: records, outcomes: map[string]string{}}
}

type invocationKey struct{}

// invocationOf returns the invocation ctx belongs to, or nil.
func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

// kill ends the invocation: every later call of its ports fails.
func (inv *invocation) kill(why string) {
	inv.mu.Lock()
	if inv.killed {
		inv.mu.Unlock()
		return
	}
	inv.killed = true
	inv.why = why
	inv.mu.Unlock()
	if inv.cancel != nil {
		inv.cancel()
	}
}

// dead reports whether the invocation was killed.
func (inv *invocation) dead() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.killed
}

// reason says why it was killed.
func (inv *invocation) reason() string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.why
}
