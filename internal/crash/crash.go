// Package crash makes a replay run crash at a chosen call to its queue or
// ledger, for the tests of what a crashed run leaves behind.
package crash

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/replay"
)

// ErrCrash is the error of every call a [Crash] stops.
var ErrCrash = errors.New("crash: the process crashed")

// Call is one call of a port a [Crash] wraps: its operation (the method's
// name: "SendMessageBatch", "MarkBatch", ...) and its number among the
// calls of every port the Crash wraps, from 1.
type Call struct {
	Op string
	N  int
}

// Crash is a process that dies at a chosen call of the engine's ports: the
// calls before it go through, and the chosen one and every later one fail
// with [ErrCrash] without reaching the port, as nothing a dead process had
// still to do gets done. Calls already under way when it crashes finish, as
// requests already on the wire would. Wrap the engine's queue and ledger
// with the same Crash; run the recovery on the unwrapped ports. It is safe
// for concurrent use.
type Crash struct {
	at func(Call) bool

	mu      sync.Mutex
	n       int
	crashed bool
}

// NewCrash returns a Crash at the first call for which at is true; nil never
// crashes (a Crash that counts the calls of a run: see [Crash.Calls]).
func New(at func(Call) bool) *Crash {
	if at == nil {
		at = func(Call) bool { return false }
	}
	return &Crash{at: at}
}

// AtCall crashes at the n-th call.
func AtCall(n int) func(Call) bool { return func(c Call) bool { return c.N == n } }

// AtFirst crashes at the first call of op, e.g. "DeleteMessageBatch": after
// a batch's sends, before its deletes.
func AtFirst(op string) func(Call) bool { return func(c Call) bool { return c.Op == op } }

// Crashed reports whether the crash has happened.
func (c *Crash) Crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// Calls is the number of calls that went through.
func (c *Crash) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return c.n - 1
	}
	return c.n
}

// enter counts a call of op and reports ErrCrash when it must not happen.
func (c *Crash) enter(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return ErrCrash
	}
	c.n++
	if c.at(Call{Op: op, N: c.n}) {
		c.crashed = true
		return ErrCrash
	}
	return nil
}

// Queue wraps q.
func (c *Crash) Queue(q replay.Queue) replay.Queue { return crashQueue{c, q} }

// Ledger wraps l.
func (c *Crash) Ledger(l replay.Ledger) replay.Ledger { return crashLedger{c, l} }

type crashQueue struct {
	c *Crash
	q replay.Queue
}

func (w crashQueue) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := w.c.enter("ReceiveMessage"); err != nil {
		return nil, err
	}
	return w.q.ReceiveMessage(ctx, in, optFns...)
}

func (w crashQueue) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if err := w.c.enter("SendMessageBatch"); err != nil {
		return nil, err
	}
	return w.q.SendMessageBatch(ctx, in, optFns...)
}

func (w crashQueue) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if err := w.c.enter("DeleteMessageBatch"); err != nil {
		return nil, err
	}
	return w.q.DeleteMessageBatch(ctx, in, optFns...)
}

func (w crashQueue) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if err := w.c.enter("ChangeMessageVisibilityBatch"); err != nil {
		return nil, err
	}
	return w.q.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

func (w crashQueue) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	if err := w.c.enter("ChangeMessageVisibility"); err != nil {
		return nil, err
	}
	return w.q.ChangeMessageVisibility(ctx, in, optFns...)
}

func (w crashQueue) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if err := w.c.enter("GetQueueAttributes"); err != nil {
		return nil, err
	}
	return w.q.GetQueueAttributes(ctx, in, optFns...)
}

type crashLedger struct {
	c *Crash
	l replay.Ledger
}

func (w crashLedger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	if err := w.c.enter("Mark"); err != nil {
		return record.Message{}, false, err
	}
	return w.l.Mark(ctx, r)
}

func (w crashLedger) History(ctx context.Context, historyKey string) ([]record.Message, error) {
	if err := w.c.enter("History"); err != nil {
		return nil, err
	}
	return w.l.History(ctx, historyKey)
}

func (w crashLedger) PutRun(ctx context.Context, s replay.Summary, expiresAt time.Time) error {
	if err := w.c.enter("PutRun"); err != nil {
		return err
	}
	return w.l.PutRun(ctx, s, expiresAt)
}

func (w crashLedger) LastRun(ctx context.Context) (replay.Summary, bool, error) {
	if err := w.c.enter("LastRun"); err != nil {
		return replay.Summary{}, false, err
	}
	return w.l.LastRun(ctx)
}

func (w crashLedger) Runs(ctx context.Context, n int) ([]replay.Summary, error) {
	if err := w.c.enter("Runs"); err != nil {
		return nil, err
	}
	return w.l.Runs(ctx, n)
}

func (w crashLedger) MarkBatch(ctx context.Context, records []record.Message) []record.Marked {
	out := make([]record.Marked, len(records))
	if err := w.c.enter("MarkBatch"); err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	return w.l.MarkBatch(ctx, records)
}
