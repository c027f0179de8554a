package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/payload"
	"github.com/homingdlq/homing/replay"
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

// Queue is one queue an [Archiver] archives: its URL, its role, [Parking]
// or [Invalid], and the Verifier of the engine's metadata on its messages
// (the zero Verifier verifies none: metadata is then kept as an attribute,
// never as ours).
type Queue struct {
	URL      string
	Role     string
	Verifier replay.Verifier
}

// Parked returns the parking queue at url with the Verifier of the
// engine's metadata on its messages (sealed for that queue) under the
// public seal key in l; when the key cannot be read, an error.
func Parked(ctx context.Context, l replay.Ledger, url string) (Queue, error) {
	v, err := replay.NewVerifier(ctx, l, replay.Route{DLQURL: url})
	return Queue{URL: url, Role: Parking, Verifier: v}, err
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
	// not archived is hidden for the budget, so that a run sees each message
	// once, and made visible again when the run has looked through its
	// queue.
	Budget time.Duration
	// Max bounds the messages a run receives from each queue, and so the
	// receipts it keeps to make visible again; 0: DefaultMax.
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
	// deleteTimeout bounds the delete of a batch whose objects are written.
	deleteTimeout = 5 * time.Second
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
// messages at a time, and the receipts of those it leaves (at most Max).
// The error joins each queue's receive or attribute error; a message's
// failure is only counted, and one the budget's end cut short is not one.
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
	hide := int32(max(time.Second, a.opts.Budget) / time.Second)
	var kept []*string // receipts of the messages left in the queue
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
		deleted, failed := a.batch(ctx, q, out.Messages, keep)
		c.Archived += len(deleted)
		c.Failed += failed
		for i, m := range out.Messages {
			if !slices.Contains(deleted, i) {
				kept = append(kept, m.ReceiptHandle)
			}
		}
	}
	return c, nil
}

// release makes the messages of receipts visible again, ten a call; what
// fails stays hidden until the budget has passed.
func (a *Archiver) release(ctx context.Context, q Queue, receipts []*string) {
	ctx = context.WithoutCancel(ctx)
	for start := 0; start < len(receipts); start += 10 {
		part := receipts[start:min(start+10, len(receipts))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(part))
		for i, r := range part {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: r, VisibilityTimeout: 0}
		}
		if _, err := a.queue.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.URL), Entries: entries}); err != nil {
			a.opts.Logger.WarnContext(ctx, "messages left hidden until the budget passes", "queue", q.URL, "error", err)
		}
	}
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
// written; it returns the indexes of the messages archived and deleted,
// and how many failed.
func (a *Archiver) batch(ctx context.Context, q Queue, msgs []types.Message, keep time.Duration) (deleted []int, failed int) {
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
				if ctx.Err() == nil {
					a.opts.Logger.ErrorContext(ctx, "archive failed", "queue", q.URL, "messageId", objects[i].MessageID, "error", err)
				}
				return
			}
			written[i] = true
		})
	}
	wg.Wait()
	del := deletable(msgs, due, written, settings.IsFIFO(q.URL))
	for i := range msgs {
		if due[i] && !written[i] && ctx.Err() == nil {
			failed++
		}
	}
	if len(del) == 0 {
		return nil, failed
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(del))
	for j, i := range del {
		entries[j] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msgs[i].ReceiptHandle}
	}
	// What is written is deleted even when the budget has just run out.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	out, err := a.queue.DeleteMessageBatch(dctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: entries})
	if err != nil {
		a.opts.Logger.ErrorContext(ctx, "delete archived messages failed", "queue", q.URL, "error", err)
		return nil, failed + len(del)
	}
	for _, f := range out.Failed {
		a.opts.Logger.ErrorContext(ctx, "delete an archived message failed", "queue", q.URL, "error", aws.ToString(f.Code)+": "+aws.ToString(f.Message))
	}
	for _, ok := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(ok.Id)); err == nil && i >= 0 && i < len(msgs) {
			deleted = append(deleted, i)
		}
	}
	return deleted, failed + len(del) - len(deleted)
}

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
