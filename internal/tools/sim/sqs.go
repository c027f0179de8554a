package sim

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// Queues are the settings of the lane's queues.
type Queues struct {
	FIFO            bool
	SourceRetention time.Duration
	DLQRetention    time.Duration
	Visibility      time.Duration // the source queue's visibility timeout (6x the function timeout)
	MaxReceiveCount int
	// MaxMessageBytes is SQS's size limit of a message, body and
	// attributes together; 0 means 1 MiB. As the lane construct deploys
	// them, the DLQ, invalid and parking queues take that much and the
	// source queue envelope.MetadataReserveBytes less, so whatever the
	// source accepted fits with our metadata.
	MaxMessageBytes int
}

// sqsModel is SQS for the simulation: a replaytest.MemoryQueue with
// repeatable ids, and the bookkeeping that accounts for every message.
// It is safe for concurrent use.
type sqsModel struct {
	q                             *replaytest.MemoryQueue
	fifo                          bool
	lane                          Lane   // the routes' key, payload hash and records
	source, dlq, invalid, parking string // URLs
	sourceARN                     string
	mu                            sync.Mutex
	ids                           int
	lineage                       map[string]int   // message id -> publication
	byBody                        map[string][]int // body -> publications
	live                          map[string]bool  // sent and not deleted
	receipts                      map[string]string
	sentBy                        map[string]string // message id -> who sent it
	// hidden is when each message of the source queue becomes visible
	// again, as the receives and visibility changes of the simulation set
	// it; changed the receipt handles whose visibility the consumer
	// changed (see nextDelivery, and copyBatch).
	hidden  map[string]time.Time
	changed map[string]bool
	// replays counts the replays behind each message: 0 for a
	// publication (and the DLQ message redrive makes of it, which keeps
	// its id), one more for each replay to the source queue, restarting
	// at 1 when a reset-count run replays it.
	replays map[string]int
}

func newSQS(c clock, qs Queues) (*sqsModel, error) {
	m := &sqsModel{
		q: replaytest.NewMemoryQueue(c.Now), fifo: qs.FIFO,
		lineage: map[string]int{}, byBody: map[string][]int{}, live: map[string]bool{},
		receipts: map[string]string{}, sentBy: map[string]string{}, replays: map[string]int{},
		hidden: map[string]time.Time{}, changed: map[string]bool{},
	}
	maxBytes := cmp.Or(qs.MaxMessageBytes, envelope.MaxMessageBytes)
	m.q.NewID = func() string { m.ids++; return fmt.Sprintf("m-%07d", m.ids) } // under the queue's lock
	suffix := ""
	if qs.FIFO {
		suffix = settings.FIFOSuffix
	}
	secs := func(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
	var err error
	create := func(name string, attrs map[string]string) string {
		if err != nil {
			return ""
		}
		var url string
		url, err = m.q.CreateQueue(name+suffix, attrs)
		return url
	}
	size := strconv.Itoa(maxBytes)
	m.dlq = create("orders-dlq", map[string]string{"MessageRetentionPeriod": secs(qs.DLQRetention), "MaximumMessageSize": size})
	m.invalid = create("orders-invalid", map[string]string{"MessageRetentionPeriod": secs(14 * 24 * time.Hour), "MaximumMessageSize": size})
	m.parking = create("orders-parking", map[string]string{"MessageRetentionPeriod": secs(14 * 24 * time.Hour), "MaximumMessageSize": size})
	m.source = create("orders", map[string]string{
		"MaximumMessageSize":     strconv.Itoa(maxBytes - envelope.MetadataReserveBytes),
		"MessageRetentionPeriod": secs(qs.SourceRetention),
		"VisibilityTimeout":      secs(qs.Visibility),
		"RedrivePolicy":          fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, m.q.ARN(m.dlq), qs.MaxReceiveCount),
	})
	if err != nil {
		return nil, fmt.Errorf("create queues: %w", err)
	}
	m.sourceARN = m.q.ARN(m.source)
	return m, nil
}

// route is the replay route of the lane. The replay engine has no part in
// a lane's group order: the route is the same with Groups or without.
func (m *sqsModel) route() replay.Route {
	return replay.Route{Name: "orders", DLQURL: m.dlq, SourceURL: m.source, ParkingURL: m.parking, Key: m.lane.keyExpr(), PayloadHash: m.lane.hashPart(),
		Records: m.lane.records()}
}

// parkingRoute is the route an operator uses to bring parked messages back.
func (m *sqsModel) parkingRoute() replay.Route {
	return replay.Route{Name: "orders/parking", DLQURL: m.parking, SourceURL: m.source, ParkingURL: m.parking, Key: m.lane.keyExpr(), PayloadHash: m.lane.hashPart(),
		Records: m.lane.records()}
}

// copied records message id, a copy of the message parent sent by who
// (the consumer's record to the parking queue, the operator's release back
// to the source): it descends from parent's publication and has its
// replays behind it. dup says SQS dropped the send as a duplicate of an
// earlier one (FIFO deduplication: id is the earlier message's), which
// changes nothing.
func (m *sqsModel) copied(id, parent, who string) (n int, dup bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, seen := m.sentBy[id]; seen {
		n, ok := m.lineage[id]
		if !ok {
			n = -1
		}
		return n, true
	}
	m.live[id] = true
	m.sentBy[id] = who
	m.replays[id] = m.replays[parent]
	n, ok := m.lineage[parent]
	if !ok {
		return -1, false
	}
	m.lineage[id] = n
	return n, false
}

// hide records that message id of the source queue, received with
// receipt, is invisible until then (a receive, a visibility change).
func (m *sqsModel) hide(id, receipt string, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hidden[id] = until
	if receipt != "" {
		m.changed[receipt] = true
	}
}

// changedSince reports whether the visibility of the message received with
// receipt was changed since that receive.
func (m *sqsModel) changedSince(receipt string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed[receipt]
}

// nextDelivery returns when SQS can next deliver a message of the source
// queue, at the earliest now: on a FIFO queue, the earliest time a group
// has none of its messages in flight; ok is false when the queue is
// empty. It reads the visibility the receives and changes of the
// simulation recorded (hide).
func (m *sqsModel) nextDelivery(now time.Time) (at time.Time, ok bool) {
	msgs := m.q.Messages(m.source)
	m.mu.Lock()
	defer m.mu.Unlock()
	free := map[string]time.Time{} // group (or message) -> when none of it is in flight
	for _, msg := range msgs {
		key := aws.ToString(msg.MessageId)
		if m.fifo {
			key = msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		}
		t := m.hidden[aws.ToString(msg.MessageId)]
		if t.Before(now) {
			t = now
		}
		if cur, seen := free[key]; !seen || t.After(cur) {
			free[key] = t
		}
	}
	for _, t := range free {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// publish sends p, with attrs, to the source queue as the producer does.
func (m *sqsModel) publish(p *Publication, attrs map[string]types.MessageAttributeValue) (string, error) {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(m.source), MessageBody: aws.String(p.Body), MessageAttributes: attrs}
	if m.fifo {
		in.MessageGroupId = aws.String(p.Group)
		in.MessageDeduplicationId = aws.String("pub-" + strconv.Itoa(p.N))
	}
	out, err := m.q.SendMessage(context.Background(), in)
	if err != nil {
		return "", fmt.Errorf("publish %d: %w", p.N, err)
	}
	id := aws.ToString(out.MessageId)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lineage[id] = p.N
	m.byBody[p.Body] = append(m.byBody[p.Body], p.N)
	m.live[id] = true
	m.sentBy[id] = "producer"
	return id, nil
}

// pubOf returns the publication a message descends from, or -1.
func (m *sqsModel) pubOf(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.lineage[id]; ok {
		return n
	}
	return -1
}

// descend records that message id (sent by who) descends from the message
// parent, or, when parent is unknown, from the only publication with body.
func (m *sqsModel) descend(id, parent, body, who string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, dup := m.lineage[id]; dup {
		return n // FIFO: SQS dropped the send as a duplicate and answered with the earlier id
	}
	n, ok := m.lineage[parent]
	if !ok {
		if pubs := m.byBody[body]; len(pubs) > 0 {
			n, ok = pubs[0], true
		}
	}
	m.live[id] = true
	m.sentBy[id] = who
	if !ok {
		return -1
	}
	m.lineage[id] = n
	return n
}

func (m *sqsModel) received(msgs []types.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range msgs {
		m.receipts[aws.ToString(msg.ReceiptHandle)] = aws.ToString(msg.MessageId)
	}
}

// deleted records that the message with receipt (or id) is gone.
func (m *sqsModel) deleted(receipt, id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id == "" {
		id = m.receipts[receipt]
	}
	delete(m.receipts, receipt)
	delete(m.live, id)
	return id
}

// counts returns the messages of a queue: visible and in flight.
func (m *sqsModel) counts(url string) (visible, inFlight int) {
	out, err := m.q.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0, 0
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	inFlight, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, inFlight
}

// total is every message of a queue, hidden ones included.
func (m *sqsModel) total(url string) int { return len(m.q.Messages(url)) }

// vanished returns the ids sent and never deleted that no queue holds: the
// messages that expired (SQS retention) without anyone seeing them go.
func (m *sqsModel) vanished() []string {
	present := map[string]bool{}
	for _, url := range []string{m.source, m.dlq, m.invalid, m.parking} {
		for _, msg := range m.q.Messages(url) {
			present[aws.ToString(msg.MessageId)] = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id := range m.live {
		if !present[id] {
			out = append(out, id)
		}
	}
	return out
}

// toEvent converts a received message to the record the ESM hands Lambda.
func (m *sqsModel) toEvent(msg types.Message) events.SQSMessage {
	ev := events.SQSMessage{
		MessageId: aws.ToString(msg.MessageId), ReceiptHandle: aws.ToString(msg.ReceiptHandle), Body: aws.ToString(msg.Body),
		Attributes: msg.Attributes, EventSource: "aws:sqs", EventSourceARN: m.sourceARN, AWSRegion: "us-east-1",
		Md5OfBody: aws.ToString(msg.MD5OfBody),
	}
	if len(msg.MessageAttributes) > 0 {
		ev.MessageAttributes = map[string]events.SQSMessageAttribute{}
		for name, a := range msg.MessageAttributes {
			ev.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
	}
	return ev
}

// invalidSender is the consumer's SQS client for the invalid queue: it
// records what is published and can refuse a publish.
type invalidSender struct{ s *Sim }

// SendMessage implements invalid.Sender.
func (is invalidSender) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s := is.s
	meta, _, _, _ := invalid.Read(in.MessageAttributes)
	inv := invocationOf(ctx)
	switch {
	case inv != nil && inv.dead():
		return nil, errKilled
	case s.dice.chance("invalid-send", meta.MessageID, s.cfg.Faults.InvalidSendError):
		s.trace.add(s.clock.Now(), "sqs", "invalid send failed", meta.MessageID, "injected")
		return nil, errSQS
	}
	out, err := s.sqs.q.SendMessage(ctx, in, opts...)
	if err != nil {
		s.trace.add(s.clock.Now(), "sqs", "invalid send refused", meta.MessageID, err.Error())
		return nil, err
	}
	id := aws.ToString(out.MessageId)
	n := s.sqs.descend(id, meta.MessageID, aws.ToString(in.MessageBody), "invalid")
	if inv != nil && inv.invalid != nil {
		inv.invalid[meta.MessageID] = true
	}
	s.trace.add(s.clock.Now(), "sqs", "to the invalid queue", s.subject(id, n), meta.Reason)
	return out, nil
}

// replaysOf returns the replays behind message id (see sqsModel.replays).
func (m *sqsModel) replaysOf(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.replays[id]
}

// setReplays records the replays behind message id.
func (m *sqsModel) setReplays(id string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replays[id] = n
}

// idOf returns the id of the message a receipt handle was issued for.
func (m *sqsModel) idOf(receipt string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.receipts[receipt]
}

// isLive reports whether message id was sent and not deleted.
func (m *sqsModel) isLive(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[id]
}

// sender says who sent message id: producer, replay or invalid.
func (m *sqsModel) sender(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sentBy[id]
}
