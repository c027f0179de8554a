package fifo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
type Releaser struct {
	Store      Store
	Queue      ReleaseQueue
	ParkingURL string
	SourceURL  string
	// Now is the clock. Default time.Now.
	Now func() time.Time

	empty  map[string]time.Time // since when a group's scans found nothing, its park counting more
	hidden time.Time            // until when a scan of ours may still hide records it failed to show again
}

// Step is what one [Releaser.Release] did.
type Step struct {
	Done    bool // the group is not parked (any more)
	Moved   int  // records sent back to the source by this step
	Pending int  // records back in the source, not applied yet
}

// scanVisibility hides the parking queue's messages of other groups while
// a step scans it, so that the scan reaches every message once.
const scanVisibility = 60

// quiet is how long a group's scans must find nothing before a release
// ends a park that counts more records parked than moved (a record counted
// and not sent, or one hidden by a step that was killed).
const quiet = 2 * scanVisibility * time.Second

// Release takes one step of releasing group: it sends the group's parked
// records back to the source, numbered, in a round the consumer
// recognises, and ends the park once the parking queue holds none of them
// and every one sent back was settled. A round a re-parked record ended
// waits for its records to settle before the next begins. Call it again
// until Done.
func (r *Releaser) Release(ctx context.Context, group string) (Step, error) {
	parks, err := r.Store.Parked(ctx, []string{group})
	if err != nil {
		return Step{}, err
	}
	p, ok := parks[group]
	if !ok {
		return Step{Done: true}, nil
	}
	if p.Releasing == "" {
		if p.Applied < p.Moved { // the records of the round that ended are not all settled
			return Step{Pending: p.Moved - p.Applied}, nil
		}
		round := newRound()
		switch err := r.Store.Begin(ctx, group, round); {
		case errors.Is(err, ErrChanged):
			return Step{}, nil
		case err != nil:
			return Step{}, err
		}
		p.Releasing, p.Previous, p.Applied = round, "", p.Moved
	}
	// The records a round parked again are older than every record
	// parked under the group since: they go back first.
	moved, err := r.move(ctx, &p, ReparkGroup(group))
	if err == nil {
		var n int
		n, err = r.move(ctx, &p, group)
		moved += n
	}
	if errors.Is(err, errRoundEnded) || errors.Is(err, ErrChanged) {
		err = nil // the next step goes on
	}
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
	case moved > 0 || p.Applied < p.Moved || p.Releasing == "":
		delete(r.empty, group)
		return Step{Moved: moved, Pending: max(p.Moved-p.Applied, 0)}, nil
	case p.Moved < p.Parked && !r.quietFor(group):
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

func (r *Releaser) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// quietFor reports whether the scans of group have found nothing for quiet,
// and no scan of ours can still hide a record.
func (r *Releaser) quietFor(group string) bool {
	now := r.now()
	if r.empty == nil {
		r.empty = map[string]time.Time{}
	}
	since, ok := r.empty[group]
	if !ok {
		r.empty[group] = now
		return false
	}
	return now.Sub(since) >= quiet && !now.Before(r.hidden)
}

// move sends the parking queue's records of parked (p's group, or its
// ReparkGroup) back to the source under p's group, in order, numbered in
// p's round; it returns how many.
func (r *Releaser) move(ctx context.Context, p *Park, parked string) (int, error) {
	var others []string // receipt handles of the messages not moved, shown again at the end
	hideEnds := r.now().Add(scanVisibility * time.Second)
	defer func() {
		for _, h := range others {
			_, err := r.Queue.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(r.ParkingURL), ReceiptHandle: aws.String(h), VisibilityTimeout: 0})
			if err != nil && hideEnds.After(r.hidden) {
				r.hidden = hideEnds
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
			if m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] != parked {
				others = append(others, aws.ToString(m.ReceiptHandle))
				continue
			}
			if err := r.sendBack(ctx, p, m); err != nil {
				// Shown again, so that the next step finds them.
				for _, rest := range out.Messages[i:] {
					others = append(others, aws.ToString(rest.ReceiptHandle))
				}
				return moved, err
			}
			moved++
		}
	}
}

// sendBack sends m to the source as the next record of p's round, counts
// it, and deletes it from the parking queue. A step that stopped midway
// sends it again under the same number: SQS drops the copy within its
// deduplication window, the consumer settles a number once after it.
func (r *Releaser) sendBack(ctx context.Context, p *Park, m types.Message) error {
	id := aws.ToString(m.MessageId)
	n := p.Moved + 1
	if p.LastMoved == id {
		n = p.Moved
	}
	attrs, err := ReleasedAttributes(m.MessageAttributes, id, aws.ToString(m.Body), p.Releasing, n)
	if err != nil {
		return err
	}
	_, err = r.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(r.SourceURL), MessageBody: m.Body,
		MessageAttributes: attrs, MessageGroupId: aws.String(p.Group), MessageDeduplicationId: aws.String("release-" + id)})
	if err != nil {
		return fmt.Errorf("fifo: send %s back to the source: %w", id, err)
	}
	current, err := r.Store.Move(ctx, p.Group, p.Releasing, id, n)
	if err != nil {
		return err
	}
	p.Moved, p.LastMoved = n, id
	if _, err := r.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.ParkingURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		return fmt.Errorf("fifo: delete %s from the parking queue: %w", id, err)
	}
	if !current { // a record parked again ended the round: this one follows it
		return errRoundEnded
	}
	return nil
}

// errRoundEnded stops a step whose round a record parked again ended.
var errRoundEnded = errors.New("fifo: the release round ended")

func newRound() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ReparkGroup is the parking queue's group of group's records that a
// release round sent back and that parked again: a release moves it first.
func ReparkGroup(group string) string {
	sum := sha256.Sum256([]byte(group))
	return "homing-repark-" + hex.EncodeToString(sum[:20])
}
