package replaytest

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// SQS limits the MemoryQueue enforces.
const (
	maxEntries        = 10
	maxAttributes     = 10
	maxMessageBytes   = settings.MaxMessageBytes
	maxVisibility     = 12 * time.Hour
	dedupWindow       = 5 * time.Minute
	defaultRetention  = 4 * 24 * time.Hour
	defaultVisibility = 30 * time.Second
	accountURL        = "https://sqs.us-east-1.amazonaws.com/000000000000/"
	accountARN        = "arn:aws:sqs:us-east-1:000000000000:"
)

var entryIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// MemoryQueue is an in-memory SQS implementing replay.Queue, plus
// SendMessage and test helpers, as SQS behaves where the replay engine relies
// on it: visibility on the injected clock, receipt handles, receive counts,
// batch limits, FIFO groups and deduplication, redrive, retention
// (docs/PACKAGES.md#replaytest). Receives return messages in enqueue order.
// It is safe for concurrent use; set the fault hooks before use.
type MemoryQueue struct {
	now func() time.Time

	// CallFault, when set, fails a whole call: op is the SQS operation
	// ("SendMessageBatch", ...); a non-nil error is returned as is. It is
	// called from several goroutines at once (the engine's workers, its
	// parallel reads): it must be safe for concurrent use.
	CallFault func(op, queueURL string) error
	// EntryFault, when set, fails one entry of a batch call: msg is the
	// message the entry is about (for SendMessageBatch the one being sent,
	// without an id); a non-nil error puts the entry in Failed.
	EntryFault func(op, queueURL string, msg types.Message) error
	// NewID, when set, returns the ids of new messages and receipt handles
	// (default: random UUIDs). It is called with the queue's lock held and
	// must not call the queue; a simulation sets it to make runs repeatable.
	NewID func() string

	mu     sync.Mutex
	queues map[string]*memQueue
}

type memQueue struct {
	url, arn   string
	fifo       bool
	retention  time.Duration
	visibility time.Duration
	maxBytes   int // MaximumMessageSize
	dlqARN     string
	maxRecv    int
	msgs       []*memMessage // enqueue order; deleted ones are compacted away
	deleted    int
	oldest     time.Time // no message was enqueued before; zero when unknown
	receipts   map[string]*memMessage
	gone       map[string]bool // receipt handles of the messages deleted
	dedup      map[string]dedupEntry
	seq        int64
}

type dedupEntry struct {
	id    string
	until time.Time
}

type memMessage struct {
	id, body, receipt string
	attrs             map[string]types.MessageAttributeValue
	group, dedupID    string
	seq               string
	sentAt            time.Time // SentTimestamp
	enqueuedAt        time.Time // retention clock
	visibleAt         time.Time
	receivedAt        time.Time
	firstReceive      time.Time
	receives          int
	deleted           bool
}

// NewMemoryQueue returns an empty MemoryQueue on the clock now (nil:
// time.Now).
func NewMemoryQueue(now func() time.Time) *MemoryQueue {
	if now == nil {
		now = time.Now
	}
	return &MemoryQueue{now: now, queues: map[string]*memQueue{}}
}

var _ replay.Queue = (*MemoryQueue)(nil)

// CreateQueue creates a queue (FIFO when name ends in ".fifo") and returns
// its URL. attrs may set MessageRetentionPeriod, VisibilityTimeout (seconds),
// MaximumMessageSize (bytes) and RedrivePolicy ({"deadLetterTargetArn":..., "maxReceiveCount":n}).
func (q *MemoryQueue) CreateQueue(name string, attrs map[string]string) (string, error) {
	mq := &memQueue{
		url: accountURL + name, arn: accountARN + name, fifo: settings.IsFIFO(name),
		retention: defaultRetention, visibility: defaultVisibility, maxBytes: maxMessageBytes,
		receipts: map[string]*memMessage{}, gone: map[string]bool{}, dedup: map[string]dedupEntry{},
	}
	if v, ok := attrs["MessageRetentionPeriod"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 60 || n > 1209600 {
			return "", &types.InvalidAttributeValue{Message: aws.String("MessageRetentionPeriod " + v)}
		}
		mq.retention = time.Duration(n) * time.Second
	}
	if v, ok := attrs["MaximumMessageSize"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 || n > maxMessageBytes {
			return "", &types.InvalidAttributeValue{Message: aws.String("MaximumMessageSize " + v)}
		}
		mq.maxBytes = n
	}
	if v, ok := attrs["VisibilityTimeout"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 43200 {
			return "", &types.InvalidAttributeValue{Message: aws.String("VisibilityTimeout " + v)}
		}
		mq.visibility = time.Duration(n) * time.Second
	}
	if v, ok := attrs["RedrivePolicy"]; ok {
		var rp struct {
			ARN string `json:"deadLetterTargetArn"`
			Max any    `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(v), &rp); err != nil {
			return "", &types.InvalidAttributeValue{Message: aws.String("RedrivePolicy: " + err.Error())}
		}
		n, err := strconv.Atoi(fmt.Sprint(rp.Max))
		if err != nil || n < 1 || n > 1000 || rp.ARN == "" {
			return "", &types.InvalidAttributeValue{Message: aws.String("RedrivePolicy " + v)}
		}
		mq.dlqARN, mq.maxRecv = rp.ARN, n
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.queues[mq.url]; ok {
		return "", &types.QueueNameExists{Message: aws.String(name)}
	}
	q.queues[mq.url] = mq
	return mq.url, nil
}

// ARN returns the ARN of the queue at url.
func (q *MemoryQueue) ARN(url string) string { return accountARN + url[strings.LastIndex(url, "/")+1:] }

// Messages returns every message stored in the queue at url, visible or
// not, as a receive with all attributes would, without receiving them.
func (q *MemoryQueue) Messages(url string) []types.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	mq, err := q.queue(url)
	if err != nil {
		return nil
	}
	q.expire(mq)
	var out []types.Message
	for _, m := range mq.msgs {
		if !m.deleted {
			out = append(out, m.view(mq, true, []string{"All"}, "All"))
		}
	}
	return out
}

func (q *MemoryQueue) queue(url string) (*memQueue, error) {
	mq, ok := q.queues[url]
	if !ok {
		return nil, &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist: " + url)}
	}
	return mq, nil
}

func (q *MemoryQueue) queueByARN(arn string) *memQueue {
	for _, mq := range q.queues {
		if mq.arn == arn {
			return mq
		}
	}
	return nil
}

// begin takes the lock and resolves the queue, or fails the call.
func (q *MemoryQueue) begin(op string, url *string) (*memQueue, error) {
	if q.CallFault != nil {
		if err := q.CallFault(op, aws.ToString(url)); err != nil {
			return nil, err
		}
	}
	q.mu.Lock()
	mq, err := q.queue(aws.ToString(url))
	if err != nil {
		q.mu.Unlock()
		return nil, err
	}
	q.expire(mq)
	return mq, nil
}

// beginBatch is begin for a batch call, which also checks the entries. It
// holds the lock when, and only when, it returns no error.
func beginBatch[E any](q *MemoryQueue, op string, url *string, entries []E, id func(E) *string) (*memQueue, error) {
	mq, err := q.begin(op, url)
	if err != nil {
		return nil, err
	}
	ids := make([]*string, len(entries))
	for i, e := range entries {
		ids[i] = id(e)
	}
	if err := checkEntries(ids); err != nil {
		q.mu.Unlock()
		return nil, err
	}
	return mq, nil
}

func (q *MemoryQueue) entryFault(op, url string, msg types.Message) *types.BatchResultErrorEntry {
	if q.EntryFault == nil {
		return nil
	}
	if err := q.EntryFault(op, url, msg); err != nil {
		return &types.BatchResultErrorEntry{Code: aws.String("InjectedFault"), Message: aws.String(err.Error())}
	}
	return nil
}

// checkEntries applies the rules every batch call shares.
func checkEntries(ids []*string) error {
	switch {
	case len(ids) == 0:
		return &types.EmptyBatchRequest{Message: aws.String("There should be at least one entry in the request.")}
	case len(ids) > maxEntries:
		return &types.TooManyEntriesInBatchRequest{Message: aws.String(fmt.Sprintf("Maximum number of entries per request are %d. You have sent %d.", maxEntries, len(ids)))}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		s := aws.ToString(id)
		if !entryIDPattern.MatchString(s) {
			return &types.InvalidBatchEntryId{Message: aws.String("A batch entry id can only contain alphanumeric characters, hyphens and underscores, up to 80: " + s)}
		}
		if seen[s] {
			return &types.BatchEntryIdsNotDistinct{Message: aws.String("Id " + s + " repeated.")}
		}
		seen[s] = true
	}
	return nil
}

func failure(id *string, code, msg string, sender bool) types.BatchResultErrorEntry {
	return types.BatchResultErrorEntry{Id: id, Code: aws.String(code), Message: aws.String(msg), SenderFault: sender}
}

// SendMessage sends one message (a convenience for tests; same rules as a
// batch of one).
func (q *MemoryQueue) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	out, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: in.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{{
		Id: aws.String("single"), MessageBody: in.MessageBody, MessageAttributes: in.MessageAttributes, DelaySeconds: in.DelaySeconds,
		MessageGroupId: in.MessageGroupId, MessageDeduplicationId: in.MessageDeduplicationId,
	}}})
	if err != nil {
		return nil, err
	}
	if len(out.Failed) > 0 {
		return nil, fmt.Errorf("send: %s: %s", aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
	}
	return &sqs.SendMessageOutput{MessageId: out.Successful[0].MessageId, MD5OfMessageBody: out.Successful[0].MD5OfMessageBody, SequenceNumber: out.Successful[0].SequenceNumber}, nil
}

// SendMessageBatch implements replay.Queue.
func (q *MemoryQueue) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	mq, err := beginBatch(q, "SendMessageBatch", in.QueueUrl, in.Entries, func(e types.SendMessageBatchRequestEntry) *string { return e.Id })
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	total := 0
	for _, e := range in.Entries {
		total += envelope.MessageBytes(len(aws.ToString(e.MessageBody)), e.MessageAttributes)
	}
	if total > maxMessageBytes {
		return nil, &types.BatchRequestTooLong{Message: aws.String(fmt.Sprintf("Batch requests cannot be longer than %d bytes: %d", maxMessageBytes, total))}
	}
	now := q.now()
	for k, e := range mq.dedup {
		if !now.Before(e.until) {
			delete(mq.dedup, k)
		}
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		body := aws.ToString(e.MessageBody)
		switch {
		case body == "":
			out.Failed = append(out.Failed, failure(e.Id, "MissingParameter", "The request must contain the parameter MessageBody.", true))
			continue
		case envelope.MessageBytes(len(body), e.MessageAttributes) > mq.maxBytes:
			out.Failed = append(out.Failed, failure(e.Id, "InvalidParameterValue", fmt.Sprintf("Message must be shorter than %d bytes.", mq.maxBytes), true))
			continue
		case len(e.MessageAttributes) > maxAttributes:
			out.Failed = append(out.Failed, failure(e.Id, "InvalidParameterValue", fmt.Sprintf("Number of message attributes [%d] exceeds the allowed maximum [%d].", len(e.MessageAttributes), maxAttributes), true))
			continue
		case mq.fifo && aws.ToString(e.MessageGroupId) == "":
			out.Failed = append(out.Failed, failure(e.Id, "MissingParameter", "The request must contain the parameter MessageGroupId.", true))
			continue
		case mq.fifo && aws.ToString(e.MessageDeduplicationId) == "":
			out.Failed = append(out.Failed, failure(e.Id, "InvalidParameterValue", "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly", true))
			continue
		case !mq.fifo && e.MessageDeduplicationId != nil:
			out.Failed = append(out.Failed, failure(e.Id, "InvalidParameterValue", "The request include parameter that is not valid for this queue type", true))
			continue
		}
		if f := q.entryFault("SendMessageBatch", mq.url, types.Message{Body: e.MessageBody, MessageAttributes: e.MessageAttributes}); f != nil {
			f.Id = e.Id
			out.Failed = append(out.Failed, *f)
			continue
		}
		sum := md5.Sum([]byte(body))
		ok := types.SendMessageBatchResultEntry{Id: e.Id, MD5OfMessageBody: aws.String(hex.EncodeToString(sum[:]))}
		if mq.fifo {
			if d, dup := mq.dedup[aws.ToString(e.MessageDeduplicationId)]; dup {
				ok.MessageId = aws.String(d.id)
				out.Successful = append(out.Successful, ok)
				continue
			}
		}
		m := &memMessage{
			id: q.newID(), body: body, attrs: maps.Clone(e.MessageAttributes),
			sentAt: now.Truncate(time.Millisecond), enqueuedAt: now, visibleAt: now.Add(time.Duration(e.DelaySeconds) * time.Second),
		}
		if mq.fifo {
			mq.seq++
			m.group, m.dedupID, m.seq = aws.ToString(e.MessageGroupId), aws.ToString(e.MessageDeduplicationId), fmt.Sprintf("%020d", mq.seq)
			mq.dedup[m.dedupID] = dedupEntry{id: m.id, until: now.Add(dedupWindow)}
			ok.SequenceNumber = aws.String(m.seq)
		}
		mq.add(m, m.enqueuedAt)
		ok.MessageId = aws.String(m.id)
		out.Successful = append(out.Successful, ok)
	}
	return out, nil
}

// ReceiveMessage implements replay.Queue. It does not wait: WaitTimeSeconds
// is accepted and ignored.
func (q *MemoryQueue) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	mq, err := q.begin("ReceiveMessage", in.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	n := int(in.MaxNumberOfMessages)
	if n == 0 {
		n = 1
	}
	if n < 1 || n > maxEntries || in.VisibilityTimeout < 0 || in.VisibilityTimeout > 43200 || in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > 20 {
		return nil, fmt.Errorf("InvalidParameterValue: MaxNumberOfMessages %d, VisibilityTimeout %d, WaitTimeSeconds %d", in.MaxNumberOfMessages, in.VisibilityTimeout, in.WaitTimeSeconds)
	}
	vis := mq.visibility
	if in.VisibilityTimeout > 0 {
		vis = time.Duration(in.VisibilityTimeout) * time.Second
	}
	now := q.now()
	locked := map[string]bool{}
	if mq.fifo {
		for _, m := range mq.msgs {
			if !m.deleted && m.visibleAt.After(now) && m.receives > 0 {
				locked[m.group] = true
			}
		}
	}
	sysNames := make([]string, len(in.MessageSystemAttributeNames))
	for i, s := range in.MessageSystemAttributeNames {
		sysNames[i] = string(s)
	}
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range mq.msgs {
		if len(out.Messages) == n {
			break
		}
		if m.deleted || m.visibleAt.After(now) || mq.fifo && locked[m.group] {
			if mq.fifo && !m.deleted {
				locked[m.group] = true // a group is delivered in order
			}
			continue
		}
		if mq.maxRecv > 0 && m.receives >= mq.maxRecv {
			if dlq := q.queueByARN(mq.dlqARN); dlq != nil {
				q.deadLetter(mq, dlq, m, now)
				continue
			}
		}
		if m.receipt != "" {
			delete(mq.receipts, m.receipt)
		}
		m.receipt = q.newID() + q.newID()
		mq.receipts[m.receipt] = m
		m.receives++
		m.receivedAt = now
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.visibleAt = now.Add(vis)
		out.Messages = append(out.Messages, m.view(mq, len(sysNames) > 0, in.MessageAttributeNames, sysNames...))
	}
	mq.compact()
	return out, nil
}

// deadLetter moves m from mq to dlq as SQS's redrive does.
func (q *MemoryQueue) deadLetter(mq, dlq *memQueue, m *memMessage, now time.Time) {
	moved := *m
	moved.receipt, moved.visibleAt = "", now
	if dlq.fifo {
		moved.enqueuedAt = now
		dlq.seq++
		moved.seq = fmt.Sprintf("%020d", dlq.seq)
	}
	dlq.add(&moved, moved.enqueuedAt)
	mq.remove(m)
}

func (mq *memQueue) remove(m *memMessage) {
	if m.receipt != "" {
		delete(mq.receipts, m.receipt)
	}
	m.deleted = true
	mq.deleted++
}

// compact drops deleted messages once they are half of the slice.
func (mq *memQueue) compact() {
	if mq.deleted > 0 && mq.deleted*2 >= len(mq.msgs) {
		mq.msgs = slices.DeleteFunc(mq.msgs, func(m *memMessage) bool { return m.deleted })
		mq.deleted = 0
	}
}

// expire drops messages past the queue's retention.
func (q *MemoryQueue) expire(mq *memQueue) {
	cutoff := q.now().Add(-mq.retention)
	if !mq.oldest.IsZero() && mq.oldest.After(cutoff) {
		return
	}
	mq.oldest = time.Time{}
	for _, m := range mq.msgs {
		switch {
		case m.deleted:
		case !m.enqueuedAt.After(cutoff):
			mq.remove(m)
		default:
			mq.add(nil, m.enqueuedAt)
		}
	}
	mq.compact()
}

// add appends m (when not nil) and keeps track of the oldest enqueue time.
func (mq *memQueue) add(m *memMessage, enqueuedAt time.Time) {
	if m != nil {
		mq.msgs = append(mq.msgs, m)
	}
	if mq.oldest.IsZero() || enqueuedAt.Before(mq.oldest) {
		mq.oldest = enqueuedAt
	}
}

func (m *memMessage) view(mq *memQueue, system bool, attrNames []string, sysNames ...string) types.Message {
	sum := md5.Sum([]byte(m.body))
	v := types.Message{MessageId: aws.String(m.id), Body: aws.String(m.body), MD5OfBody: aws.String(hex.EncodeToString(sum[:]))}
	if m.receipt != "" {
		v.ReceiptHandle = aws.String(m.receipt)
	}
	all := slices.Contains(attrNames, "All") || slices.Contains(attrNames, ".*")
	for name, a := range m.attrs {
		if all || slices.Contains(attrNames, name) {
			if v.MessageAttributes == nil {
				v.MessageAttributes = map[string]types.MessageAttributeValue{}
			}
			v.MessageAttributes[name] = a
		}
	}
	if !system {
		return v
	}
	sys := map[string]string{
		"SenderId":                         "000000000000",
		"SentTimestamp":                    strconv.FormatInt(m.sentAt.UnixMilli(), 10),
		"ApproximateReceiveCount":          strconv.Itoa(m.receives),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
	}
	if mq.fifo {
		sys["MessageGroupId"], sys["MessageDeduplicationId"], sys["SequenceNumber"] = m.group, m.dedupID, m.seq
	}
	allSys := slices.Contains(sysNames, "All")
	v.Attributes = map[string]string{}
	for k, val := range sys {
		if allSys || slices.Contains(sysNames, k) {
			v.Attributes[k] = val
		}
	}
	return v
}

// DeleteMessageBatch implements replay.Queue.
func (q *MemoryQueue) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	mq, err := beginBatch(q, "DeleteMessageBatch", in.QueueUrl, in.Entries, func(e types.DeleteMessageBatchRequestEntry) *string { return e.Id })
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		m, ok := mq.receipts[aws.ToString(e.ReceiptHandle)]
		if !ok && mq.gone[aws.ToString(e.ReceiptHandle)] {
			out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
			continue
		}
		if !ok {
			out.Failed = append(out.Failed, failure(e.Id, "ReceiptHandleIsInvalid", "The input receipt handle is invalid.", true))
			continue
		}
		if f := q.entryFault("DeleteMessageBatch", mq.url, m.view(mq, true, []string{"All"}, "All")); f != nil {
			f.Id = e.Id
			out.Failed = append(out.Failed, *f)
			continue
		}
		mq.gone[m.receipt] = true
		mq.remove(m)
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	mq.compact()
	return out, nil
}

// ChangeMessageVisibility implements replay.Queue.
func (q *MemoryQueue) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	mq, err := q.begin("ChangeMessageVisibility", in.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	if f := q.changeVisibility(mq, in.ReceiptHandle, in.VisibilityTimeout, "ChangeMessageVisibility"); f != nil {
		return nil, fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// ChangeMessageVisibilityBatch implements replay.Queue.
func (q *MemoryQueue) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	mq, err := beginBatch(q, "ChangeMessageVisibilityBatch", in.QueueUrl, in.Entries, func(e types.ChangeMessageVisibilityBatchRequestEntry) *string { return e.Id })
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		if f := q.changeVisibility(mq, e.ReceiptHandle, e.VisibilityTimeout, "ChangeMessageVisibilityBatch"); f != nil {
			f.Id = e.Id
			out.Failed = append(out.Failed, *f)
			continue
		}
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (q *MemoryQueue) changeVisibility(mq *memQueue, receipt *string, seconds int32, op string) *types.BatchResultErrorEntry {
	now := q.now()
	m, ok := mq.receipts[aws.ToString(receipt)]
	switch {
	case !ok:
		f := failure(nil, "ReceiptHandleIsInvalid", "The input receipt handle is invalid.", true)
		return &f
	case !m.visibleAt.After(now):
		f := failure(nil, "AWS.SimpleQueueService.MessageNotInflight", "Message does not exist or is not available for visibility timeout change.", true)
		return &f
	case seconds < 0 || now.Add(time.Duration(seconds)*time.Second).Sub(m.receivedAt) > maxVisibility:
		f := failure(nil, "InvalidParameterValue", fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds].", seconds), true)
		return &f
	}
	if f := q.entryFault(op, mq.url, m.view(mq, true, []string{"All"}, "All")); f != nil {
		return f
	}
	m.visibleAt = now.Add(time.Duration(seconds) * time.Second)
	return nil
}

// GetQueueAttributes implements replay.Queue.
func (q *MemoryQueue) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	mq, err := q.begin("GetQueueAttributes", in.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	now := q.now()
	visible, inFlight := 0, 0
	for _, m := range mq.msgs {
		switch {
		case m.deleted:
		case !m.visibleAt.After(now):
			visible++
		case m.receives > 0:
			inFlight++
		}
	}
	attrs := map[string]string{
		"ApproximateNumberOfMessages":           strconv.Itoa(visible),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(inFlight),
		"MessageRetentionPeriod":                strconv.Itoa(int(mq.retention / time.Second)),
		"VisibilityTimeout":                     strconv.Itoa(int(mq.visibility / time.Second)),
		"MaximumMessageSize":                    strconv.Itoa(mq.maxBytes),
		"QueueArn":                              mq.arn,
	}
	if mq.fifo {
		attrs["FifoQueue"] = "true"
	}
	if mq.dlqARN != "" {
		attrs["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, mq.dlqARN, mq.maxRecv)
	}
	out := &sqs.GetQueueAttributesOutput{Attributes: map[string]string{}}
	for _, name := range in.AttributeNames {
		if name == types.QueueAttributeNameAll {
			out.Attributes = attrs
			break
		}
		if v, ok := attrs[string(name)]; ok {
			out.Attributes[string(name)] = v
		}
	}
	return out, nil
}

func (q *MemoryQueue) newID() string {
	if q.NewID != nil {
		return q.NewID()
	}
	return newID()
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
