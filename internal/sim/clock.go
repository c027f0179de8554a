package sim

import (
	"context"
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
	dead     bool
	why      string
	cancel   context.CancelFunc // replay runs only

	// consumer invocations: the source message ids published to the
	// invalid queue during this invocation.
	invalid map[string]bool
	records []events.SQSMessage // the batch
}

type invocationKey struct{}

// invocationOf returns the invocation ctx belongs to, or nil.
func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

// kill ends the invocation: every later call of its ports fails.
func (inv *invocation) kill(why string) {
	if inv.dead {
		return
	}
	inv.dead, inv.why = true, why
	if inv.cancel != nil {
		inv.cancel()
	}
}
