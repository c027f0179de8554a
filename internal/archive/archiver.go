package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/payload"
)

// Receiver is the part of the SQS client an [Archiver] uses.
type Receiver interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// Failures reads the consumer's failure records by original message id
// (dynamo.FailureLog); an id without one is absent from the map.
type Failures interface {
	Failures(ctx context.Context, messageIDs []string) (map[string]batch.Failure, error)
}

// Queue is one queue an [Archiver] archives: its URL and its role,
// [Parking] or [Invalid].
type Queue struct {
	URL  string
	Role string
}

// Options tune an [Archiver]. The zero value archives each message
// [DefaultMargin] before its queue's retention would delete it.
type Options struct {
	// OnArrival archives every message at once, whatever its age.
	OnArrival bool
	// Margin is how long before its retention ends a message is archived;
	// 0: DefaultMargin.
	Margin time.Duration
	// Budget bounds a run's time; 0: DefaultBudget. A message received and
	// not archived is hidden while the run lasts, so that it sees each
	// message once, and visible again when it ends.
	Budget time.Duration
	// Max bounds the messages a run receives from each queue; 0:
	// DefaultMax.
	Max int
	// Failures adds the failure records to the objects; nil: none.
	Failures Failures
	Logger   *slog.Logger     // default slog.Default()
	Now      func() time.Time // default time.Now
}

// Defaults of [Options], as package settings declares them.
const (
	DefaultMargin = settings.DefaultArchiveMargin
	DefaultBudget = settings.DefaultArchiveBudget
	DefaultMax    = 10000
)

// Counts are what a run did on one queue.
type Counts struct {
	Queue    string `json:"queue"`    // the role
	Examined int    `json:"examined"` // messages received
	Archived int    `json:"archived"` // written and deleted from the queue
	// Failed counts the messages whose write or delete failed, and a
	// receive that failed; each is left in its queue.
	Failed int `json:"failed"`
}

// Archiver moves the due messages of a lane's queues to its [Store]. It is
// safe for concurrent use; concurrent runs each archive what they receive.
type Archiver struct {
	queue Receiver
	store *Store
	lane  string
	key   payload.Key
	opts  Options
}

// New returns the archiver of lane, whose business key the JMESPath keyExpr
// finds ("" for none), or an error when keyExpr does not compile.
func New(q Receiver, s *Store, lane, keyExpr string, opts Options) (*Archiver, error) {
	key, err := payload.NewKey(keyExpr)
	if err != nil {
		return nil, fmt.Errorf("archive key %q: %w", keyExpr, err)
	}
	if opts.Margin <= 0 {
		opts.Margin = DefaultMargin
	}
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Archiver{queue: q, store: s, lane: lane, key: key, opts: opts}, nil
}

// Run archives the due messages of each queue, within the budget and ctx,
// and returns what it did per queue. It holds one batch of at most ten
// messages at a time. The error joins each queue's receive or attribute
// error; a message's failure is only counted.
func (a *Archiver) Run(ctx context.Context, queues []Queue) ([]Counts, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Budget)
	defer cancel()
	out := make([]Counts, 0, len(queues))
	var errs []error
	for _, q := range queues {
		c, err := a.runQueue(ctx, q)
		if err != nil {
			c.Failed++
			errs = append(errs, err)
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

func (a *Archiver) runQueue(ctx context.Context, q Queue) (Counts, error) {
	c := Counts{Queue: q.Role}
	keep, err := a.keep(ctx, q)
	if err != nil {
		return c, err
	}
	hide := int32((a.opts.Budget + time.Minute) / time.Second)
	var kept []string // the receipts of the messages left in the queue
	defer func() { a.release(ctx, q, kept) }()
	for c.Examined < a.opts.Max && ctx.Err() == nil {
		out, err := a.queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(q.URL),
			MaxNumberOfMessages:         int32(min(10, a.opts.Max-c.Examined)),
			VisibilityTimeout:           hide,
			WaitTimeSeconds:             1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if ctx.Err() != nil {
			break // the budget is spent: what was received reappears
		}
		if err != nil {
			return c, fmt.Errorf("receive from %s: %w", q.URL, err)
		}
		if len(out.Messages) == 0 {
			break
		}
		c.Examined += len(out.Messages)
		archived, failed, left := a.batch(ctx, q, out.Messages, keep)
		c.Archived += archived
		c.Failed += failed
		kept = append(kept, left...)
	}
	return c, nil
}

// keep is how long q keeps a message before the archive is due: its
// retention less the margin, or 0 when archiving on arrival.
func (a *Archiver) keep(ctx context.Context, q Queue) (time.Duration, error) {
	if a.opts.OnArrival {
		return 0, nil
	}
	out, err := a.queue.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.URL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMessageRetentionPeriod},
	})
	if err != nil {
		return 0, fmt.Errorf("read the retention of %s: %w", q.URL, err)
	}
	s, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameMessageRetentionPeriod)])
	if err != nil {
		return 0, fmt.Errorf("read the retention of %s: %q: %w", q.URL, out.Attributes[string(types.QueueAttributeNameMessageRetentionPeriod)], err)
	}
	return max(0, time.Duration(s)*time.Second-a.opts.Margin), nil
}

// batch archives the due messages of one receive and deletes those
// written; it returns how many were archived and how many failed, and the
// receipts of the messages it left in the queue.
func (a *Archiver) batch(ctx context.Context, q Queue, msgs []types.Message, keep time.Duration) (archived, failed int, left []string) {
	now := a.opts.Now()
	due := dueOf(msgs, keep, now, settings.IsFIFO(q.URL))
	objects := make([]Object, len(msgs))
	for i, m := range msgs {
		if due[i] {
			objects[i] = newObject(a.lane, q, m, a.key, now)
		}
	}
	a.addFailures(ctx, objects, due)
	written := make([]bool, len(msgs))
	var wg sync.WaitGroup
	for i := range msgs {
		if !due[i] {
			continue
		}
		wg.Go(func() {
			if _, err := a.store.Put(ctx, objects[i]); err != nil {
				a.opts.Logger.ErrorContext(ctx, "archive failed", "queue", q.URL, "messageId", objects[i].MessageID, "error", err)
				return
			}
			written[i] = true
		})
	}
	wg.Wait()
	del := deletable(msgs, due, written, settings.IsFIFO(q.URL))
	for i := range msgs {
		if due[i] && !written[i] {
			failed++
		}
	}
	deleting := make([]bool, len(msgs))
	for _, i := range del {
		deleting[i] = true
	}
	for i, m := range msgs {
		if !deleting[i] {
			left = append(left, aws.ToString(m.ReceiptHandle))
		}
	}
	if len(del) == 0 {
		return 0, failed, left
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(del))
	for j, i := range del {
		entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msgs[i].ReceiptHandle}
	}
	out, err := a.queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
	if err != nil {
		a.opts.Logger.ErrorContext(ctx, "delete archived messages failed", "queue", q.URL, "error", err)
		return 0, failed + len(del), left
	}
	for _, f := range out.Failed {
		a.opts.Logger.ErrorContext(ctx, "delete an archived message failed", "queue", q.URL, "error", aws.ToString(f.Code)+": "+aws.ToString(f.Message))
	}
	return len(out.Successful), failed + len(del) - len(out.Successful), left
}

// release makes the messages of receipts visible again, ten a call, even
// when ctx is done: a run leaves the queue as it found it but for what it
// archived. A failure is logged: the messages reappear when their hide ends.
func (a *Archiver) release(ctx context.Context, q Queue, receipts []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for start := 0; start < len(receipts); start += 10 {
		var entries []types.ChangeMessageVisibilityBatchRequestEntry
		for i, r := range receipts[start:min(start+10, len(receipts))] {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r), VisibilityTimeout: 0})
		}
		out, err := a.queue.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
		if err != nil {
			a.opts.Logger.WarnContext(ctx, "release messages not archived", "queue", q.URL, "error", err)
			return
		}
		for _, f := range out.Failed {
			a.opts.Logger.WarnContext(ctx, "release a message not archived", "queue", q.URL, "error", aws.ToString(f.Code)+": "+aws.ToString(f.Message))
		}
	}
}

// releaseTimeout bounds a run's release of what it did not archive.
const releaseTimeout = 30 * time.Second

// addFailures adds the failure records of the due objects; a failed read
// leaves them without.
func (a *Archiver) addFailures(ctx context.Context, objects []Object, due []bool) {
	if a.opts.Failures == nil {
		return
	}
	var ids []string
	for i, o := range objects {
		if due[i] {
			ids = append(ids, o.OriginalMessageID())
		}
	}
	if len(ids) == 0 {
		return
	}
	found, err := a.opts.Failures.Failures(ctx, ids)
	if err != nil {
		a.opts.Logger.WarnContext(ctx, "archiving without failure records", "error", err)
		return
	}
	for i := range objects {
		if f, ok := found[objects[i].OriginalMessageID()]; ok && due[i] {
			objects[i].withFailure(f)
		}
	}
}

// dueOf says which messages to archive at now: those sent at least keep
// ago (or of unknown age). On a FIFO queue a group's messages after one
// that is not due are not due either, so that the group stays in order.
func dueOf(msgs []types.Message, keep time.Duration, now time.Time, fifo bool) []bool {
	due := make([]bool, len(msgs))
	held := map[string]bool{}
	for i, m := range msgs {
		group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if fifo && held[group] {
			continue
		}
		sent := sentAt(m)
		due[i] = sent.IsZero() || !sent.Add(keep).After(now)
		if fifo && !due[i] {
			held[group] = true
		}
	}
	return due
}

// deletable returns the indexes of the messages to delete: those written,
// and on a FIFO queue only each group's written messages before its first
// that was not, so that what stays in the queue keeps its order.
func deletable(msgs []types.Message, due, written []bool, fifo bool) []int {
	var out []int
	held := map[string]bool{}
	for i, m := range msgs {
		group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if fifo && held[group] {
			continue
		}
		if !due[i] || !written[i] {
			held[group] = true
			continue
		}
		out = append(out, i)
	}
	return out
}
