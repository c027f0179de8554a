package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/fifo/fifotest"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/settings"
)

// A FIFO lane whose consumer keeps each message group in order (Lane.Groups,
// package fifo): a failed head waits in the source queue for its backoff
// (the group lock of the SQS model holds the group behind it), and a head
// that can never succeed parks its group. The parks live in one
// fifotest.Memory, which the consumer and the operator reach through
// parkStore, each with its own faults; the consumer's SQS calls (a record
// to the parking queue, a head's visibility) go through consumerQueue, the
// operator's release (fifo.Releaser) through releaseQueue.

// GroupStats are what a lane that keeps its groups in order counted.
type GroupStats struct {
	Parks         int // groups parked (a park written where none was)
	Reparks       int // parks that named a new head (a released head parked again)
	ParkedRecords int // records the consumer sent to the parking queue (heads and records behind them)
	Backoffs      int // heads hidden for a backoff (visibility changes SQS took)
	Refused       int // visibility changes SQS refused (a stale receipt, past 12 hours)
	Releases      int // releases the operator finished (a step said Done)
	Steps         int // release steps the operator took
	Moved         int // records a release sent back to the source
	// SetAside counts the heads that can never succeed (poison, killer)
	// the operator took out of the parking queue before a release.
	SetAside int
	// Skipped counts the valid orders a lane that skips went on without
	// (parked alone): exempt from the order invariant.
	Skipped  int
	Backstop int // messages the redrive moved to the DLQ
	Faults   int // calls of the parks, and of the consumer's and operator's SQS, failed by an injected fault
	Copies   int // batches received again while their invocation still ran
	// OutOfOrder counts the groups whose valid orders were first invoiced
	// out of their publication order.
	OutOfOrder int
}

// groupBook is the lane's parks and the simulation's account of them. It
// is safe for concurrent use.
type groupBook struct {
	mem      *fifotest.Memory
	mu       sync.Mutex
	faults   map[string]int // op\x00key -> faults injected
	skipped  map[int]bool   // publications a lane that skips parked alone
	dlq      map[string]bool
	jobs     []*releaseJob // the operator's releases in progress
	step     time.Time     // the operator's next release step
	releaser *fifo.Releaser
	stats    GroupStats
}

func newGroupBook() *groupBook {
	return &groupBook{mem: &fifotest.Memory{}, faults: map[string]int{}, skipped: map[int]bool{}, dlq: map[string]bool{}}
}

// backstopReceives is the source queue's maxReceiveCount on a lane with
// Groups: the redrive as a distant backstop, above settings.DefaultMaxReceives.
const backstopReceives = settings.DefaultMaxReceives + 10

// faultsPerKey bounds the injected faults of one (operation, key): a
// fault never lasts long enough to push a record past the contract's
// bound (parked before the redrive and before it expires).
const faultsPerKey = 3

// inject decides whether a call of op on key fails by an injected fault of
// rate: at most faultsPerKey on one (op, key), and none in a consumer
// invocation whose batch has a record on its last receive before the
// redrive.
func (g *groupBook) inject(s *Sim, inv *invocation, rate float64, op, key string) bool {
	if rate <= 0 || inv != nil && lastReceive(inv.records, s.cfg.Queues.MaxReceiveCount) {
		return false
	}
	k := op + "\x00" + key
	g.mu.Lock()
	spent := g.faults[k]
	g.mu.Unlock()
	if spent >= faultsPerKey || !s.dice.chance(op, key, rate) {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults[k]++
	g.stats.Faults++
	return true
}

// lastReceive reports whether a record of the batch is on its last receive
// before the redrive (ApproximateReceiveCount >= maxReceiveCount - 1).
func lastReceive(records []events.SQSMessage, maxReceiveCount int) bool {
	return slices.ContainsFunc(records, func(r events.SQSMessage) bool {
		n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
		return err == nil && n >= maxReceiveCount-1
	})
}

func (g *groupBook) count(f func(*GroupStats)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(&g.stats)
}

// keeper is the consumer's fifo.Keeper, as functions/consumer wires
// GROUP_ORDER: the parks (none on a lane that skips), the simulated SQS,
// the source's retention, and a jitter drawn from the seed.
func (s *Sim) keeper() *fifo.Keeper {
	k := &fifo.Keeper{Queue: consumerQueue{s: s}, SourceURL: s.sqs.source, ParkingURL: s.sqs.parking,
		OnError: s.cfg.Lane.Groups, Retention: s.cfg.Queues.SourceRetention, Rand: rand.New(rand.NewPCG(s.cfg.Seed, 0xf1f0)).Float64}
	if k.OnError != fifo.Skip {
		k.Store = &parkStore{s: s, rate: s.cfg.Faults.GroupErrors}
	}
	return k
}

// parkStore is the lane's parks as one caller reaches them: the consumer
// (its invocation is in ctx; a dead one fails every call) or the operator,
// each with its rate of faults.
type parkStore struct {
	s    *Sim
	rate float64
}

var _ fifo.Store = (*parkStore)(nil)

func (p *parkStore) fault(ctx context.Context, op, key string) error {
	inv := invocationOf(ctx)
	if inv != nil && inv.dead() {
		return errKilled
	}
	if p.s.groups.inject(p.s, inv, p.rate, "park-"+op, key) {
		p.s.trace.add(p.s.clock.Now(), "dynamodb", "park "+op+" throttled", key, "")
		return fmt.Errorf("park %s: %w", op, errThrottled)
	}
	return nil
}

// Parked implements fifo.Store. The consumer's read of a batch's parks is
// one call per invocation (its key).
func (p *parkStore) Parked(ctx context.Context, groups []string) (map[string]fifo.Park, error) {
	key := strings.Join(groups, ",")
	if inv := invocationOf(ctx); inv != nil {
		key = inv.id
	}
	if err := p.fault(ctx, "read", key); err != nil {
		return nil, err
	}
	return p.s.groups.mem.Parked(ctx, groups)
}

// Park implements fifo.Store.
func (p *parkStore) Park(ctx context.Context, want fifo.Park) (fifo.Park, error) {
	if err := p.fault(ctx, "park", want.Group+"/"+want.Head); err != nil {
		return fifo.Park{}, err
	}
	g := p.s.groups
	before, _ := g.mem.Parked(ctx, []string{want.Group})
	out, err := g.mem.Park(ctx, want)
	if _, was := before[want.Group]; err == nil && !was {
		g.count(func(st *GroupStats) { st.Parks++ })
		p.s.trace.add(p.s.clock.Now(), "park", "group parked", p.s.subject(want.Head, p.s.sqs.pubOf(want.Head))+" "+want.Group, want.Reason)
	}
	return out, err
}

// Count implements fifo.Store.
func (p *parkStore) Count(ctx context.Context, group string, c fifo.Count) error {
	if err := p.fault(ctx, "count", fmt.Sprintf("%s/%s/%d/%d", group, c.Seq, c.Parked, c.Index)); err != nil {
		return err
	}
	err := p.s.groups.mem.Count(ctx, group, c)
	if err == nil && c.Stop > 0 {
		p.s.groups.count(func(st *GroupStats) { st.Reparks++ })
		p.s.trace.add(p.s.clock.Now(), "park", "group parked again", p.s.subject(c.Head, p.s.sqs.pubOf(c.Head))+" "+group, c.Reason)
	}
	return err
}

// Begin implements fifo.Store.
func (p *parkStore) Begin(ctx context.Context, group, round string, batch, keys []string) error {
	if err := p.fault(ctx, "begin", group); err != nil {
		return err
	}
	return p.s.groups.mem.Begin(ctx, group, round, batch, keys)
}

// Sent implements fifo.Store.
func (p *parkStore) Sent(ctx context.Context, group, round string, n int) error {
	if err := p.fault(ctx, "sent", fmt.Sprintf("%s/%d", group, n)); err != nil {
		return err
	}
	return p.s.groups.mem.Sent(ctx, group, round, n)
}

// End implements fifo.Store.
func (p *parkStore) End(ctx context.Context, group, round string) error {
	if err := p.fault(ctx, "end", group); err != nil {
		return err
	}
	return p.s.groups.mem.End(ctx, group, round)
}

// Release implements fifo.Store.
func (p *parkStore) Release(ctx context.Context, want fifo.Park) error {
	if err := p.fault(ctx, "release", want.Group); err != nil {
		return err
	}
	g := p.s.groups
	before, _ := g.mem.Parked(ctx, []string{want.Group})
	err := g.mem.Release(ctx, want)
	if _, was := before[want.Group]; err == nil && was {
		who := "operator"
		if invocationOf(ctx) != nil {
			who = "consumer"
		}
		p.s.trace.add(p.s.clock.Now(), "park", "park ended", want.Group, fmt.Sprintf("by the %s: parked %d moved %d", who, want.Parked, want.Moved))
		p.s.checkParkEnd(want.Group, who)
	}
	return err
}

// checkParkEnd checks that a park ends only when the parking queue holds
// no record of its group: one left there would be applied after the
// group's later records, which the consumer no longer parks.
func (s *Sim) checkParkEnd(group, who string) {
	var left []string
	for _, m := range s.sqs.q.Messages(s.sqs.parking) {
		if m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] == group {
			id := aws.ToString(m.MessageId)
			left = append(left, s.subject(id, s.sqs.pubOf(id)))
		}
	}
	if len(left) > 0 {
		s.violate("park-ended-early", group, fmt.Sprintf("the %s ended the park while the parking queue held %d of its records: %s", who, len(left), strings.Join(left, ", ")))
	}
}

// List implements fifo.Store.
func (p *parkStore) List(ctx context.Context) ([]fifo.Park, error) {
	if err := p.fault(ctx, "list", "list"); err != nil {
		return nil, err
	}
	return p.s.groups.mem.List(ctx)
}

// consumerQueue is the consumer's SQS client on a lane with Groups
// (fifo.Queue): its records to the parking queue, and its heads'
// visibility in the source queue. A dead invocation's calls fail; others
// fail by injected faults (see groupBook.inject).
type consumerQueue struct{ s *Sim }

var _ fifo.Queue = consumerQueue{}

func (q consumerQueue) fault(ctx context.Context, op, key string) error {
	s := q.s
	inv := invocationOf(ctx)
	if inv != nil && inv.dead() {
		return errKilled
	}
	if s.groups.inject(s, inv, s.cfg.Faults.GroupErrors, "consumer-"+op, key) {
		s.trace.add(s.clock.Now(), "sqs", op+" failed", key, "injected")
		return fmt.Errorf("%s: %w", op, errSQS)
	}
	return nil
}

// SendMessage implements fifo.Queue: a record to the parking queue, its
// deduplication id its message id in the source.
func (q consumerQueue) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s := q.s
	parent := aws.ToString(in.MessageDeduplicationId)
	if err := q.fault(ctx, "SendMessage", parent); err != nil {
		return nil, err
	}
	out, err := s.sqs.q.SendMessage(ctx, in, opts...)
	if err != nil {
		s.trace.add(s.clock.Now(), "sqs", "parking send refused", parent, err.Error())
		return nil, err
	}
	id := aws.ToString(out.MessageId)
	n, dup := s.sqs.copied(id, parent, "parking")
	if dup {
		s.trace.add(s.clock.Now(), "sqs", "to the parking queue (duplicate dropped)", s.subject(id, n), "")
		return out, nil
	}
	s.groups.count(func(st *GroupStats) { st.ParkedRecords++ })
	if s.cfg.Lane.Groups == fifo.Skip && n >= 0 {
		s.groups.mu.Lock()
		s.groups.skipped[n] = true
		s.groups.mu.Unlock()
	}
	s.trace.add(s.clock.Now(), "sqs", "to the parking queue", s.subject(id, n)+" "+aws.ToString(in.MessageGroupId), "")
	return out, nil
}

// ChangeMessageVisibility implements fifo.Queue: a head's backoff in the
// source queue.
func (q consumerQueue) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	s := q.s
	receipt := aws.ToString(in.ReceiptHandle)
	id := s.sqs.idOf(receipt)
	if err := q.fault(ctx, "ChangeMessageVisibility", id); err != nil {
		return nil, err
	}
	out, err := s.sqs.q.ChangeMessageVisibility(ctx, in, opts...)
	if err != nil {
		s.groups.count(func(st *GroupStats) { st.Refused++ })
		s.trace.add(s.clock.Now(), "sqs", "visibility refused", s.subject(id, s.sqs.pubOf(id)), err.Error())
		return nil, err
	}
	d := time.Duration(in.VisibilityTimeout) * time.Second
	s.sqs.hide(id, receipt, s.clock.Now().Add(d))
	s.groups.count(func(st *GroupStats) { st.Backoffs++ })
	s.trace.add(s.clock.Now(), "sqs", "backoff", s.subject(id, s.sqs.pubOf(id)), d.String())
	return out, nil
}

// DeleteMessage implements fifo.Queue: a settled record deleted from the
// source before the invocation ends.
func (q consumerQueue) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	s := q.s
	receipt := aws.ToString(in.ReceiptHandle)
	if err := q.fault(ctx, "DeleteMessage", s.sqs.idOf(receipt)); err != nil {
		return nil, err
	}
	id, err := s.deleteOne(ctx, in)
	if err != nil {
		return nil, err
	}
	// Acknowledged as the mapping would have, had the invocation lived.
	if inv := invocationOf(ctx); inv != nil {
		if n := s.sqs.pubOf(id); n >= 0 && !inv.invalid[id] && inv.outcomes[id] == string(batch.Succeeded) {
			s.applied(n)
		}
	}
	s.trace.add(s.clock.Now(), "consumer", "deleted", s.subject(id, s.sqs.pubOf(id)), "settled on a delivery after the first")
	return &sqs.DeleteMessageOutput{}, nil
}

// releaseQueue is the operator's SQS client for a release
// (fifo.ReleaseQueue), failing by injected faults (Faults.ReleaseErrors).
type releaseQueue struct{ s *Sim }

var _ fifo.ReleaseQueue = releaseQueue{}

func (q releaseQueue) fault(op, key string) error {
	s := q.s
	if s.groups.inject(s, nil, s.cfg.Faults.ReleaseErrors, "release-"+op, key) {
		s.trace.add(s.clock.Now(), "operator", op+" failed", key, "injected")
		return fmt.Errorf("%s: %w", op, errSQS)
	}
	return nil
}

// ReceiveMessage implements fifo.ReleaseQueue.
func (q releaseQueue) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := q.fault("ReceiveMessage", queueName(aws.ToString(in.QueueUrl))); err != nil {
		return nil, err
	}
	out, err := q.s.sqs.q.ReceiveMessage(ctx, in, opts...)
	if err == nil {
		q.s.sqs.received(out.Messages)
	}
	return out, err
}

// SendMessage implements fifo.ReleaseQueue: a copy of a parked record to
// the source, its deduplication id "release-", its id in the parking queue,
// "/" and a hash of the round.
func (q releaseQueue) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s := q.s
	parent, _, _ := strings.Cut(strings.TrimPrefix(aws.ToString(in.MessageDeduplicationId), "release-"), "/")
	if err := q.fault("SendMessage", parent); err != nil {
		return nil, err
	}
	out, err := s.sqs.q.SendMessage(ctx, in, opts...)
	if err != nil {
		s.trace.add(s.clock.Now(), "operator", "release send refused", parent, err.Error())
		return nil, err
	}
	id := aws.ToString(out.MessageId)
	n, dup := s.sqs.copied(id, parent, "release")
	s.book.Lock()
	s.lastSent[copyReleased] = sentAttribute{attr: in.MessageAttributes[envelope.ReplayAttributeName], what: "copy of " + id}
	s.book.Unlock()
	what := "sent back"
	if dup {
		what = "sent back (duplicate dropped)"
	} else {
		s.groups.count(func(st *GroupStats) { st.Moved++ })
	}
	s.trace.add(s.clock.Now(), "operator", what, s.subject(id, n)+" "+aws.ToString(in.MessageGroupId), "")
	return out, nil
}

// DeleteMessage implements fifo.ReleaseQueue.
func (q releaseQueue) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	s := q.s
	receipt := aws.ToString(in.ReceiptHandle)
	if err := q.fault("DeleteMessage", s.sqs.idOf(receipt)); err != nil {
		return nil, err
	}
	if _, err := s.deleteOne(ctx, in); err != nil {
		return nil, err
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// deleteOne deletes one message as SQS's DeleteMessage does, and books
// it; it returns its id.
func (s *Sim) deleteOne(ctx context.Context, in *sqs.DeleteMessageInput) (string, error) {
	out, err := s.sqs.q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: in.QueueUrl,
		Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("d"), ReceiptHandle: in.ReceiptHandle}}})
	switch {
	case err != nil:
		return "", err
	case len(out.Failed) > 0:
		return "", fmt.Errorf("DeleteMessage: %s: %s", aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
	}
	return s.sqs.deleted(aws.ToString(in.ReceiptHandle), ""), nil
}

// ChangeMessageVisibility implements fifo.ReleaseQueue.
func (q releaseQueue) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	if err := q.fault("ChangeMessageVisibility", q.s.sqs.idOf(aws.ToString(in.ReceiptHandle))); err != nil {
		return nil, err
	}
	return q.s.sqs.q.ChangeMessageVisibility(ctx, in, opts...)
}

// releaseJob is the operator's dlq groups release of one group: a step
// every releaseStep until it is done, for at most releaseFor (the
// command's bounded wait); a release not done by then is taken up at the
// operator's next look.
type releaseJob struct {
	group string
	until time.Time
}

const (
	releaseStep = time.Minute
	releaseFor  = time.Hour
)

// releaser is the operator's fifo.Releaser, one for the run (it remembers
// between steps).
func (s *Sim) releaser() *fifo.Releaser {
	g := s.groups
	if g.releaser == nil {
		g.releaser = &fifo.Releaser{Store: &parkStore{s: s, rate: s.cfg.Faults.ReleaseErrors}, Queue: releaseQueue{s: s},
			ParkingURL: s.sqs.parking, SourceURL: s.sqs.source, Now: s.clock.Now}
	}
	return g.releaser
}

// release starts the operator's release of group, unless one is under way.
func (s *Sim) release(group string) {
	g := s.groups
	if slices.ContainsFunc(g.jobs, func(j *releaseJob) bool { return j.group == group }) {
		return
	}
	g.jobs = append(g.jobs, &releaseJob{group: group, until: s.clock.Now().Add(releaseFor)})
	if g.step.IsZero() || g.step.After(s.clock.Now()) {
		g.step = s.clock.Now()
	}
	s.trace.add(s.clock.Now(), "operator", "release", group, "")
}

// releaseSteps takes a step of every release under way, when one is due.
func (s *Sim) releaseSteps(now time.Time) {
	g := s.groups
	if len(g.jobs) == 0 || now.Before(g.step) {
		return
	}
	r := s.releaser()
	var left []*releaseJob
	for _, j := range g.jobs {
		st, err := r.Release(context.Background(), j.group)
		g.count(func(st *GroupStats) { st.Steps++ })
		switch {
		case err != nil:
			s.trace.add(s.clock.Now(), "operator", "release step failed", j.group, err.Error())
		case st.Done:
			g.count(func(st *GroupStats) { st.Releases++ })
			s.trace.add(s.clock.Now(), "operator", "released", j.group, fmt.Sprintf("moved %d", st.Moved))
			continue
		case st.Stopped:
			s.trace.add(s.clock.Now(), "operator", "release over: parked again", j.group, "")
			continue
		case st.Moved > 0:
			s.trace.add(s.clock.Now(), "operator", "release step", j.group, fmt.Sprintf("moved %d, %d pending", st.Moved, st.Pending))
		}
		if !s.clock.Now().Before(j.until) {
			s.trace.add(s.clock.Now(), "operator", "release not done", j.group, "the command's wait ended")
			continue
		}
		left = append(left, j)
	}
	g.jobs = left
	g.step = s.clock.Now().Add(releaseStep)
}

// lookAtParks is the operator at dlq groups, every Config.ReleaseEvery:
// each group parked behind a head routed to the invalid queue is released
// (its head will not come back; the group goes on without it). Groups
// parked behind a head in the parking queue wait for the end (see
// releaseParked), when the trouble that parked them is over.
func (s *Sim) lookAtParks() {
	parks, err := s.groups.mem.List(context.Background())
	if err != nil {
		return
	}
	for _, p := range parks {
		if p.Queue == "invalid" {
			s.release(p.Group)
		}
	}
}

// maxReleaseRounds bounds the operator's last looks at the parks: each
// releases every group parked then and lets the system quiesce, which can
// park a group again (a released head that can never succeed). Each
// invalid or hopeless head a group meets costs one look: seed 1384's group
// needs 11 once a round waits for a copy it could not count.
const maxReleaseRounds = 20

// releaseParked is the operator's last look at the parks, once the system
// is quiet: the orders that can never succeed are set aside (see
// setAsideHopeless), and every parked group is released; again while any
// is left. It reports whether the system quiesced.
func (s *Sim) releaseParked() bool {
	if s.cfg.Lane.Groups == "" {
		return true
	}
	for range maxReleaseRounds {
		parks, _ := s.groups.mem.List(context.Background())
		if len(parks) == 0 {
			return true
		}
		s.setAsideHopeless()
		for _, p := range parks {
			s.release(p.Group)
		}
		if !s.drain(s.clock.Now().Add(s.cfg.DrainLimit)) {
			return false
		}
	}
	return true
}

// setAsideHopeless is the operator taking out of the parking queue the
// orders it knows can never succeed (poison and killer orders) that lead
// their group there: a release, or a run that brings the parking queue
// back, would send them back first, and they would hold their group again
// for as long as the source keeps them. The operator keeps them (their
// terminal place is the parking queue's, see Sim.check), and takes each
// off its group's park count. Package fifo has no call for it: this is
// the operator by hand (an SQS delete, a count of the park).
func (s *Sim) setAsideHopeless() {
	want := map[string]bool{}
	behind := map[string]bool{} // groups whose first message in the parking queue is not hopeless
	for _, m := range s.sqs.q.Messages(s.sqs.parking) {
		id := aws.ToString(m.MessageId)
		group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if behind[group] {
			continue
		}
		if n := s.sqs.pubOf(id); n >= 0 && s.pubs[n].Kind.hopeless() {
			want[id] = true
			continue
		}
		behind[group] = true
	}
	if len(want) == 0 {
		return
	}
	ctx := context.Background()
	url := aws.String(s.sqs.parking)
	var others []*string
	defer func() {
		for _, h := range others {
			_, _ = s.sqs.q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: h})
		}
	}()
	for len(want) > 0 {
		out, err := s.sqs.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) == 0 {
			return
		}
		s.sqs.received(out.Messages)
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if !want[id] {
				others = append(others, m.ReceiptHandle)
				continue
			}
			res, err := s.sqs.q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url,
				Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("d"), ReceiptHandle: m.ReceiptHandle}}})
			if err != nil || len(res.Failed) > 0 {
				others = append(others, m.ReceiptHandle)
				continue
			}
			delete(want, id)
			s.sqs.deleted(aws.ToString(m.ReceiptHandle), id)
			// No longer waiting in the parking queue: the park of its
			// group, if any, counts one record less.
			_ = s.groups.mem.Count(ctx, m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], fifo.Count{Parked: -1})
			s.setAsideMsgs = append(s.setAsideMsgs, m)
			s.groups.count(func(st *GroupStats) { st.SetAside++ })
			s.trace.add(s.clock.Now(), "operator", "set aside", s.subject(id, s.sqs.pubOf(id))+" "+m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], "an order that can never succeed")
		}
	}
}

// checkBackstop notes the messages the redrive moved to the DLQ: on a lane
// with Groups the consumer parks a head before the backstop, so each is a
// violation.
func (s *Sim) checkBackstop() {
	g := s.groups
	for _, m := range s.sqs.q.Messages(s.sqs.dlq) {
		id := aws.ToString(m.MessageId)
		if g.dlq[id] || s.sqs.sender(id) == "replay" {
			continue
		}
		g.dlq[id] = true
		g.count(func(st *GroupStats) { st.Backstop++ })
		s.violate("backstop", s.subject(id, s.sqs.pubOf(id)), fmt.Sprintf("the redrive moved it to the DLQ after %s receives: the consumer did not park it first",
			m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]))
	}
}

// checkAttributes checks that every record handed to the consumer of a lane
// with Groups carries its producer's attributes, whatever parking and
// release did to it (our attribute folds one of them when the producer
// sent ten). A record whose attribute of our name is not ours (a
// producer's, malformed) is left as it came.
func (s *Sim) checkAttributes(records []events.SQSMessage) {
	for _, r := range records {
		n := s.sqs.pubOf(r.MessageId)
		if n < 0 || len(s.pubs[n].Attrs) == 0 {
			continue
		}
		var meta json.RawMessage
		producer, _, err := envelope.Unpack(batch.MessageAttributes(r.MessageAttributes), envelope.ReplayAttributeName, &meta)
		if err != nil {
			continue
		}
		for name, want := range s.pubs[n].Attrs {
			got, ok := producer[name]
			switch {
			case strings.HasPrefix(name, "homing"):
			case !ok || aws.ToString(got.DataType) != aws.ToString(want.DataType) || aws.ToString(got.StringValue) != aws.ToString(want.StringValue) || !bytes.Equal(got.BinaryValue, want.BinaryValue):
				s.violate("attribute-lost", s.subject(r.MessageId, n), "handed to the consumer without the producer's attribute "+name)
			}
		}
	}
}

// groupsConfig makes a random seed's lane, if FIFO, keep its groups in
// order: fifo.Skip on one FIFO seed in four, fifo.Hold on the others; the
// redrive as the backstop; faults in the parks and in the consumer's and
// operator's SQS calls; an operator who looks at the parks every half hour
// to two hours; one to three groups the tax service fails for 3 to 20
// replay schedule periods; and a drain long enough for a head to be parked
// before it expires. It draws from a generator of its own, so that the
// other draws of a seed stay as they were.
func groupsConfig(c *Config) {
	if !c.Queues.FIFO {
		return
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x6e0d))
	c.Lane.Groups = fifo.Hold
	if c.Seed/5%4 == 2 {
		c.Lane.Groups = fifo.Skip
	}
	c.Queues.MaxReceiveCount = backstopReceives
	c.Faults.GroupErrors = 0.02
	c.Faults.ReleaseErrors = 0.02
	c.DrainLimit = max(c.DrainLimit, c.Queues.SourceRetention+12*time.Hour)
	c.ReleaseEvery = []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour}[rng.IntN(3)]
	for range 1 + rng.IntN(3) {
		from := time.Duration(rng.Int64N(int64(c.Window)))
		periods := time.Duration(3 + rng.IntN(18))
		c.Freezes = append(c.Freezes, Freeze{Group: groupName(rng.IntN(groupsPerLane)), From: from, To: from + periods*c.Replay.Schedule})
	}
}
