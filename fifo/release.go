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

	"github.com/homingdlq/homing/internal/parking"
)

// ReleaseQueue is the part of the SQS client a [Releaser] uses.
type ReleaseQueue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Releaser releases parked groups: an operator's decision that a group goes
// on. The parking queue keeps the group's records in order; each round
// sends its first ones back to the source as numbered copies, which the
// consumer applies before any later record of the group, and takes out of
// the parking queue those the consumer settled. The park ends once the
// parking queue holds none of the group's records.
type Releaser struct {
	Store      Store
	Queue      ReleaseQueue
	ParkingURL string
	SourceURL  string
	// Now is the clock. Default time.Now.
	Now func() time.Time

	quiet  map[string]time.Time // since when a group's scans found nothing they waited for (by group, or round to end)
	hidden map[string]time.Time // until when a scan of ours may still hide a group's records it failed to show again
}

// Step is what one [Releaser.Release] did.
type Step struct {
	Done    bool // the group is not parked (any more)
	Moved   int  // copies sent to the source by this step
	Pending int  // copies in the source, not settled yet
	// Stopped: a copy parked the group again; the park names the new head
	// and the release is over.
	Stopped bool
}

// scanVisibility hides the parking queue's messages while a step scans it.
const scanVisibility = 60

// quiet is how long a group's scans must find nothing before a release
// believes records it waits for are gone: longer than an invocation lives
// (Lambda's 15 minutes), so that a record the consumer counted is in the
// parking queue by then or never, and than any scan hides a record.
const quiet = 16 * time.Minute

// batchSize is the most records a round sends back: one receive's worth.
const batchSize = 10

// Release takes one step of releasing group: it ends the round in progress
// once every copy is settled, begins the next with the group's first
// records in the parking queue, and ends the park when there are none.
// Call it again until Done or Stopped; a round in progress waits for the
// consumer.
func (r *Releaser) Release(ctx context.Context, group string) (Step, error) {
	p, ok, err := r.park(ctx, group)
	if err != nil || !ok {
		return Step{Done: err == nil}, err
	}
	if p.Releasing != "" {
		if p.Sent < len(p.Batch) { // a step stopped before sending them all
			st, gone, err := r.send(ctx, p)
			if err != nil || !gone {
				return st, err
			}
			// The next record is gone from the parking queue (deleted by
			// hand): the round ends with the copies sent.
		}
		if p.Settled < p.Sent {
			return Step{Pending: p.Sent - p.Settled}, nil
		}
		if done, err := r.end(ctx, p); err != nil || !done {
			return Step{}, err
		}
		if p.Stop > 0 {
			return Step{Stopped: true}, nil
		}
		if p, ok, err = r.park(ctx, group); err != nil || !ok {
			return Step{Done: err == nil}, err
		}
	}
	return r.begin(ctx, p)
}

func (r *Releaser) park(ctx context.Context, group string) (Park, bool, error) {
	parks, err := r.Store.Parked(ctx, []string{group})
	if err != nil {
		return Park{}, false, err
	}
	p, ok := parks[group]
	return p, ok, nil
}

// begin begins a round with the group's first records in the parking
// queue, or ends the park when it holds none.
func (r *Releaser) begin(ctx context.Context, p Park) (Step, error) {
	msgs, err := r.distinct(ctx, p)
	if err != nil {
		return Step{}, err
	}
	if len(msgs) == 0 {
		if r.hides(p.Group) || p.Moved < p.Parked && !r.quietFor(p.Group) {
			return Step{}, nil // a record may be hidden, or on its way
		}
		switch err := r.Store.Release(ctx, p); {
		case errors.Is(err, ErrChanged):
			return Step{}, nil
		case err != nil:
			return Step{}, err
		}
		return Step{Done: true}, nil
	}
	delete(r.quiet, p.Group)
	p.Releasing, p.Batch, p.Keys, p.Sent, p.Settled, p.Stop = newRound(), nil, nil, 0, 0, 0
	for _, m := range msgs {
		p.Batch = append(p.Batch, aws.ToString(m.MessageId))
		p.Keys = append(p.Keys, keyOf(m))
	}
	if err := r.Store.Begin(ctx, p.Group, p.Releasing, p.Batch, p.Keys); err != nil {
		r.show(ctx, msgs)
		if errors.Is(err, ErrChanged) {
			return Step{}, nil
		}
		return Step{}, err
	}
	st, _, err := r.sendCopies(ctx, p, msgs)
	return st, err
}

// distinct scans the group's first records in the parking queue and
// deletes those parked twice (a key seen before them, or taken out
// recently): what is left are distinct records, in order.
func (r *Releaser) distinct(ctx context.Context, p Park) ([]types.Message, error) {
	for {
		msgs, err := r.scan(ctx, p.Group)
		if err != nil || len(msgs) == 0 {
			return nil, err
		}
		seen := map[string]bool{}
		for _, k := range p.Recent {
			seen[k] = true
		}
		var keep []types.Message
		dropped := false
		for i, m := range msgs {
			k := keyOf(m)
			if k == "" || !seen[k] {
				if k != "" {
					seen[k] = true
				}
				keep = append(keep, m)
				continue
			}
			if _, err := r.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.ParkingURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				r.show(ctx, append(keep, msgs[i:]...))
				return nil, fmt.Errorf("fifo: delete %s, parked twice, from the parking queue: %w", aws.ToString(m.MessageId), err)
			}
			dropped = true
		}
		if len(keep) > 0 || !dropped {
			return keep, nil
		}
	}
}

// keyOf is m's deduplication id: its message id in the source.
func keyOf(m types.Message) string {
	return m.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]
}

// send sends the round's copies a step before it did not send. It reports
// gone when the next record to send is no longer in the parking queue.
func (r *Releaser) send(ctx context.Context, p Park) (Step, bool, error) {
	msgs, err := r.scan(ctx, p.Group)
	if err != nil {
		return Step{}, false, err
	}
	return r.sendCopies(ctx, p, msgs)
}

// sendCopies sends copies p.Sent+1... of the round, from msgs (the
// group's first records in the parking queue), in order, and shows msgs
// again. It reports whether the next one to send, which msgs lacks, is
// gone from the parking queue.
func (r *Releaser) sendCopies(ctx context.Context, p Park, msgs []types.Message) (Step, bool, error) {
	defer r.show(ctx, msgs)
	byID := map[string]types.Message{}
	for _, m := range msgs {
		byID[aws.ToString(m.MessageId)] = m
	}
	moved := 0
	for n := p.Sent + 1; n <= len(p.Batch); n++ {
		m, ok := byID[p.Batch[n-1]]
		if !ok {
			return Step{Moved: moved, Pending: p.Sent - p.Settled}, r.gone(p, n, msgs), nil
		}
		delete(r.quiet, p.Group+"\x00"+p.Batch[n-1])
		if err := r.sendCopy(ctx, p, n, m); err != nil {
			return Step{Moved: moved, Pending: p.Sent - p.Settled}, false, err
		}
		if err := r.Store.Sent(ctx, p.Group, p.Releasing, n); err != nil {
			return Step{Moved: moved, Pending: p.Sent - p.Settled}, false, err
		}
		p.Sent = n
		moved++
	}
	return Step{Moved: moved, Pending: p.Sent - p.Settled}, false, nil
}

// gone reports whether the round's record n, which msgs (a scan) lacks, is
// gone from the parking queue: msgs holds a record after it (only the
// round's records before it come before it), or the scans have missed it
// for quiet. Otherwise it is hidden by a scan, or this scan saw only the
// group's first records (a receive may return fewer than it could), and a
// later step sends it: a copy sent by a step that could not count it is
// sent again, never taken for settled.
func (r *Releaser) gone(p Park, n int, msgs []types.Message) bool {
	before := map[string]bool{}
	for _, id := range p.Batch[:n-1] {
		before[id] = true
	}
	for _, m := range msgs {
		if !before[aws.ToString(m.MessageId)] {
			return true
		}
	}
	return len(msgs) > 0 && !r.hides(p.Group) && r.quietFor(p.Group+"\x00"+p.Batch[n-1])
}

// sendCopy sends m to the source as copy n of p's round. A step that sends
// it again within SQS's deduplication window sends nothing; after it, the
// consumer settles copy n once.
func (r *Releaser) sendCopy(ctx context.Context, p Park, n int, m types.Message) error {
	id := aws.ToString(m.MessageId)
	attrs, err := parking.ReleasedAttributes(m.MessageAttributes, id, aws.ToString(m.Body), p.Releasing, n)
	if err != nil {
		return err
	}
	// The deduplication id names the round by a hash: the round is the
	// marks' key, which only the park knows.
	round := sha256.Sum256([]byte(p.Releasing))
	_, err = r.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(r.SourceURL), MessageBody: m.Body,
		MessageAttributes: attrs, MessageGroupId: aws.String(p.Group), MessageDeduplicationId: aws.String("release-" + id + "/" + hex.EncodeToString(round[:16]))})
	if err != nil {
		return fmt.Errorf("fifo: send %s back to the source: %w", id, err)
	}
	return nil
}

// end takes the round's settled records out of the parking queue and ends
// the round. It reports false while a record to take out may be hidden
// (by a scan of another reader): a later step ends the round.
func (r *Releaser) end(ctx context.Context, p Park) (bool, error) {
	taken := map[string]bool{}
	for _, id := range p.Batch[:p.Taken()] {
		taken[id] = true
	}
	gone := len(taken) == 0
	for tries := 0; !gone && tries < 3; tries++ {
		msgs, err := r.scan(ctx, p.Group)
		if err != nil {
			return false, err
		}
		var keep []types.Message
		for i, m := range msgs {
			id := aws.ToString(m.MessageId)
			if !taken[id] {
				keep = append(keep, m)
				continue
			}
			if _, err := r.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.ParkingURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				r.show(ctx, append(keep, msgs[i:]...))
				return false, fmt.Errorf("fifo: delete %s from the parking queue: %w", id, err)
			}
			delete(taken, id)
		}
		r.show(ctx, keep)
		switch {
		case len(taken) == 0 || len(keep) > 0:
			// Every record taken is deleted, or the group's first record
			// is one the round does not take: those before it are gone.
			gone = true
		case len(msgs) == 0:
			// Hidden by another reader, or gone (deleted by hand).
			if r.hides(p.Group) || !r.quietFor(p.Group+"\x00"+p.Releasing) {
				return false, nil
			}
			gone = true
		}
	}
	if !gone {
		return false, nil
	}
	delete(r.quiet, p.Group+"\x00"+p.Releasing)
	switch err := r.Store.End(ctx, p.Group, p.Releasing); {
	case errors.Is(err, ErrChanged):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// scan returns the group's first records in the parking queue, in order
// (at most one receive's worth: SQS holds the rest of the group while
// they are in flight), hidden until the caller shows or deletes them. The
// other groups' messages it received are shown again.
func (r *Releaser) scan(ctx context.Context, group string) ([]types.Message, error) {
	var others []types.Message
	defer func() { r.show(ctx, others) }()
	for {
		out, err := r.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.ParkingURL),
			MaxNumberOfMessages: batchSize, VisibilityTimeout: scanVisibility,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId,
				types.MessageSystemAttributeNameMessageDeduplicationId},
			MessageAttributeNames: []string{"All"}})
		if err != nil {
			return nil, fmt.Errorf("fifo: receive from the parking queue: %w", err)
		}
		if len(out.Messages) == 0 {
			return nil, nil
		}
		var mine []types.Message
		for _, m := range out.Messages {
			if m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] == group {
				mine = append(mine, m)
			} else {
				others = append(others, m)
			}
		}
		if len(mine) > 0 {
			return mine, nil
		}
	}
}

// show makes msgs visible again; one it cannot may stay hidden until its
// scan's visibility ends.
func (r *Releaser) show(ctx context.Context, msgs []types.Message) {
	hideEnds := r.now().Add(scanVisibility * time.Second)
	for _, m := range msgs {
		_, err := r.Queue.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(r.ParkingURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		if err != nil {
			if r.hidden == nil {
				r.hidden = map[string]time.Time{}
			}
			r.hidden[m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]] = hideEnds
		}
	}
}

// hides reports whether a scan of ours may still hide a record of group.
func (r *Releaser) hides(group string) bool {
	return r.now().Before(r.hidden[group])
}

func (r *Releaser) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// quietFor reports whether the scans waiting for key (a group, or a
// round to end) have found nothing for quiet.
func (r *Releaser) quietFor(key string) bool {
	now := r.now()
	if r.quiet == nil {
		r.quiet = map[string]time.Time{}
	}
	since, ok := r.quiet[key]
	if !ok {
		r.quiet[key] = now
		return false
	}
	return now.Sub(since) >= quiet
}

func newRound() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
