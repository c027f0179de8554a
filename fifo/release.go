package fifo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

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
type Releaser struct {
	Store      Store
	Queue      ReleaseQueue
	ParkingURL string
	SourceURL  string
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

// Release takes one step of releasing group: it sends the group's parked
// records back unless a round is still pending, and ends the park when the
// parking queue holds none of them (the scan finds none, and every record
// counted parked was moved) and every one sent back was applied.
// Call it again until Done; a pending round waits for the consumer.
func (r *Releaser) Release(ctx context.Context, group string) (Step, error) {
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
	case moved > 0 || p.Applied < p.Moved || p.Waiting() > 0:
		// A record counted parked and not moved is still in the parking
		// queue, out of the scan's sight while a receive holds it (a
		// failed step's, another caller's): the next step moves it.
		return Step{Moved: moved, Pending: max(p.Moved-p.Applied, 0)}, nil
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
	var others []string // receipt handles of messages not moved, shown again at the end
	defer func() {
		for _, h := range others {
			_, _ = r.Queue.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(r.ParkingURL), ReceiptHandle: aws.String(h), VisibilityTimeout: 0})
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
				others = append(others, aws.ToString(m.ReceiptHandle))
				continue
			}
			if err := r.sendBack(ctx, group, round, m); err != nil {
				for _, rest := range out.Messages[i:] {
					others = append(others, aws.ToString(rest.ReceiptHandle))
				}
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

func newRound() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
