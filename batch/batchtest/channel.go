package batchtest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
)

// Rejected is one record an [InvalidChannel] accepted: the message as it
// was published and why it was rejected.
type Rejected struct {
	Message   events.SQSMessage
	Rejection batch.Rejection
}

// InvalidChannel is an in-memory batch.InvalidChannel. Its zero value is
// ready to use and accepts every record. It is safe for concurrent use.
type InvalidChannel struct {
	mu       sync.Mutex
	rejected []Rejected
	fail     error
}

var _ batch.InvalidChannel = (*InvalidChannel)(nil)

// Publish records msg with r and returns nil, unless ctx is done or the
// channel was told to fail ([InvalidChannel.FailWith]): it then records
// nothing and returns ctx.Err() or the FailWith error, wrapped with the
// message id, so that the processor leaves the record to SQS, as it does
// when an invalid queue did not store it.
func (c *InvalidChannel) Publish(ctx context.Context, msg events.SQSMessage, r batch.Rejection) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish %s to the invalid channel: %w", msg.MessageId, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return fmt.Errorf("publish %s to the invalid channel: %w", msg.MessageId, c.fail)
	}
	c.rejected = append(c.rejected, Rejected{Message: msg, Rejection: r})
	return nil
}

// FailWith makes every later Publish fail with err, recording nothing;
// FailWith(nil) makes it accept records again.
func (c *InvalidChannel) FailWith(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = err
}

// Rejected returns the records accepted so far, in the order they were
// published (for the records of a standard queue processed concurrently,
// an order the test should not rely on). The slice is a copy; the messages
// share their maps with the records the processor was given.
func (c *InvalidChannel) Rejected() []Rejected {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.rejected)
}

// Reasons returns how many records were accepted with each reason.
func (c *InvalidChannel) Reasons() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.rejected))
	for _, r := range c.rejected {
		out[r.Rejection.Reason]++
	}
	return out
}
