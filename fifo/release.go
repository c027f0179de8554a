package fifo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ReleaseQueue is the part of the SQS client a [Releaser] uses.
type ReleaseQueue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Releaser releases parked groups: an operator's decision that a group goes
// on. Its parked records go back to the source in order, each marked with
// the release round, and the consumer applies them before any later record
// of the group; the park ends once all are back and applied.
//
// A Releaser remembers, between the steps it takes, which groups its scans
// may have left in flight (see Release): keep one for the steps of a
// release. It is safe for concurrent use.
type Releaser struct {
	Store      Store
	Queue      ReleaseQueue
	ParkingURL string
	SourceURL  string
	// Now is the clock. Default time.Now.
	Now func() time.Time

	mu     sync.Mutex
	since  map[string]time.Time // group -> this Releaser's first step of it
	hidden map[string]time.Time // group -> until when a message of it may be in flight: a scan's restore of it failed
}

// Step is what one [Releaser.Release] did.
type Step struct {
	Done    bool // the group is not parked (any more)
	Moved   int  // records sent back to the source by this step
	Pending int  // records back in the source, not applied yet
}

// scanVisibility hides the parking queue's messages of other groups while
// a step scans it, so that the scan reaches every message once.
const scanVisibility = 120

// unseenFor is how long a scan of a Releaser may hold a message in flight,
// with a margin.
const unseenFor = (scanVisibility + 30) * time.Second

// Release takes one step of releasing group: it sends the group's parked
// records back unless a round is still pending, and ends the park when the
// parking queue holds none of them and every one sent back was applied.
// A scan that finds none while the counts say some were parked and not
// moved is believed only once no scan of this Releaser, nor of one before
// it, can still hold one of them in flight.
// Call it again until Done; a pending round waits for the consumer.
func (r *Releaser) Release(ctx context.Context, group string) (Step, error) {
	r.begin(group)
	parks, err := r.Store.Parked(ctx, []string{group})
	if err != nil {
		return Step{}, err
	}
	p, ok := parks[group]
	if !ok {
		return Step{Done: true}, nil
	}
	if p.Releasing != "" && p.Applied < p.Moved {
		return Step{Pending: p.Moved - p.Applied}, nil
	}
	round := newRound()
	if err := r.Store.Begin(ctx, group, round); err != nil {
		return Step{}, err
	}
	moved, err := r.move(ctx, group, round)
	if err != nil {
		return Step{Moved: moved}, err
	}
	parks, err = r.Store.Parked(ctx, []string{group})
	if err != nil {
		return Step{Moved: moved}, err
	}
	p, ok = parks[group]
	switch {
	case !ok:
		return Step{Done: true, Moved: moved}, nil
	case moved > 0 || p.Applied < p.Moved:
		return Step{Moved: moved, Pending: max(p.Moved-p.Applied, 0)}, nil
	case p.Waiting() > 0 && r.mayBeHidden(group):
		// Records counted parked and not moved, yet none in the scan:
		// a receive may hold one in flight (a scan whose restore of it
		// failed, a step that failed, a Releaser before this one), and
		// a FIFO queue shows none of a group then. Or a batch parked
		// twice counted a record twice: once no such receive can last,
		// a scan that finds none is believed.
		return Step{}, nil
	}
	if err := r.Store.Release(ctx, p); err != nil {
		if errors.Is(err, ErrChanged) {
			return Step{}, nil
		}
		return Step{}, err
	}
	return Step{Done: true}, nil
}

// move sends the parking queue's records of group to the source, in order,
// marked with round; it returns how many.
func (r *Releaser) move(ctx context.Context, group, round string) (int, error) {
	var others []types.Message // messages not moved, shown again at the end
	defer func() {
		for _, m := range others {
			_, err := r.Queue.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(r.ParkingURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			if err != nil {
				r.hide(m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)])
			}
		}
	}()
	moved := 0
	for {
		out, err := r.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.ParkingURL),
			MaxNumberOfMessages: 10, VisibilityTimeout: scanVisibility,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId},
			MessageAttributeNames:       []string{"All"}})
		if err != nil {
			return moved, fmt.Errorf("fifo: receive from the parking queue: %w", err)
		}
		if len(out.Messages) == 0 {
			return moved, nil
		}
		for i, m := range out.Messages {
			if m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] != group {
				others = append(others, m)
				continue
			}
			if err := r.sendBack(ctx, group, round, m); err != nil {
				others = append(others, out.Messages[i:]...)
				return moved, err
			}
			moved++
		}
	}
}

func (r *Releaser) sendBack(ctx context.Context, group, round string, m types.Message) error {
	id := aws.ToString(m.MessageId)
	attrs, err := ReleasedAttributes(m.MessageAttributes, id, round, aws.ToString(m.Body))
	if err != nil {
		return err
	}
	_, err = r.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(r.SourceURL), MessageBody: m.Body,
		MessageAttributes: attrs, MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String("release-" + id)})
	if err != nil {
		return fmt.Errorf("fifo: send %s back to the source: %w", id, err)
	}
	if err := r.Store.Count(ctx, group, 0, 1, 0, round); err != nil {
		return err
	}
	if _, err := r.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.ParkingURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		// It stays in the parking queue and a later step moves it again
		// (its send then dropped as a duplicate, or applied twice): this
		// move does not count, or Applied would never reach Moved.
		_ = r.Store.Count(context.WithoutCancel(ctx), group, 0, -1, 0, round)
		return fmt.Errorf("fifo: delete %s from the parking queue: %w", id, err)
	}
	return nil
}

func (r *Releaser) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// begin notes this Releaser's first step of group.
func (r *Releaser) begin(group string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.since == nil {
		r.since, r.hidden = map[string]time.Time{}, map[string]time.Time{}
	}
	if _, ok := r.since[group]; !ok {
		r.since[group] = r.now()
	}
}

// hide notes that a message of group may stay in flight for a scan's
// visibility.
func (r *Releaser) hide(group string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hidden[group] = r.now().Add(unseenFor)
}

// mayBeHidden reports whether a receive may still hold a message of group
// in flight: a scan of this Releaser whose restore of one failed, or, for
// its first unseenFor, one of a Releaser before it.
func (r *Releaser) mayBeHidden(group string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	return now.Before(r.since[group].Add(unseenFor)) || now.Before(r.hidden[group])
}

func newRound() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
