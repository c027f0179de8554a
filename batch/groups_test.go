package batch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/fifo/fifotest"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/parking"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// The consumer's side of a FIFO lane's group order (batch.Options.Groups),
// run end to end on batchtest.Lane: SQS's group lock, visibility changes,
// receive counts, retention and the redrive in memory, the real Processor,
// parks in fifotest.Memory and the operator's fifo.Releaser. Every test
// checks the contract: per group, effects apply in publication order;
// nothing is lost; nothing is applied twice; other groups never wait.
// Bodies are "group/seq".

// fifoLane is a FIFO lane with a consumer whose handler applies a record
// once (an idempotent receiver), fails it, rejects it, or dies with its
// invocation, as the test says.
type fifoLane struct {
	t      *testing.T
	lane   *batchtest.Lane
	store  *faultyStore
	keeper *fifo.Keeper
	p      *batch.Processor

	mu       sync.Mutex
	applied  map[string][]int                // group -> seqs, in the order first applied
	again    map[string]int                  // body -> successful runs after the first
	attrs    map[string]map[string]string    // body -> producer's attributes the handler saw (released records)
	failing  map[string]int                  // body -> runs left that fail (-1: all)
	invalids map[string]bool                 // bodies rejected
	kills    map[string]bool                 // bodies that kill their invocation
	onRun    func(body string, receives int) // called as a record starts, outside the lock
	log      []event                         // runs and hides, in order
	records  map[string]events.SQSMessage    // receipt handle -> the record delivered with it
	ids      map[string]string               // body -> message id, as published
	died     atomic.Bool
	rand     *lockedRand
}

// event is a run of the handler or a hide of a source message.
type event struct {
	kind     string // "run" or "hide"
	body     string
	receives int
	at       time.Time
	sent     time.Time // the record's SentTimestamp
	seconds  int32     // a hide's visibility
}

// laneSetup changes the lane and the consumer a test gets.
type laneSetup struct {
	lane        batchtest.LaneOptions
	concurrency int
	keeper      func(k *fifo.Keeper)
	failures    batch.FailureLog
}

func newFIFOLane(t *testing.T, s laneSetup) *fifoLane {
	if s.lane.MaxReceiveCount == 0 {
		s.lane.MaxReceiveCount = 100 // the backstop, above Keeper.MaxReceives
	}
	l := &fifoLane{t: t, lane: batchtest.NewLane("orders.fifo", s.lane), store: &faultyStore{Store: &fifotest.Memory{}},
		applied: map[string][]int{}, again: map[string]int{}, attrs: map[string]map[string]string{}, failing: map[string]int{},
		invalids: map[string]bool{}, kills: map[string]bool{}, records: map[string]events.SQSMessage{}, ids: map[string]string{},
		rand: &lockedRand{r: rand.New(rand.NewPCG(29, 1))}}
	l.keeper = l.lane.Keeper(l.store)
	l.keeper.Queue = spyQueue{Queue: l.keeper.Queue, l: l}
	l.keeper.Rand = l.rand.Float64
	if s.keeper != nil {
		s.keeper(l.keeper)
	}
	l.p = batch.New(l.handle, l.lane.Invalid("orders"), batch.Options{Groups: l.keeper, Concurrency: s.concurrency,
		Logger: slog.New(slog.DiscardHandler), Now: l.lane.Clock.Now, Failures: s.failures})
	return l
}

type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (r *lockedRand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Float64()
}

var errDied = errors.New("the invocation died: no response")

func split(body string) (group string, seq int) {
	g, s, _ := strings.Cut(body, "/")
	n, _ := strconv.Atoi(s)
	return g, n
}

func (l *fifoLane) handle(_ context.Context, msg events.SQSMessage) error {
	n, _ := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	l.mu.Lock()
	l.log = append(l.log, event{kind: "run", body: msg.Body, receives: n, at: l.lane.Clock.Now()})
	hook := l.onRun
	l.mu.Unlock()
	if hook != nil {
		hook(msg.Body, n)
	}
	l.mu.Lock()
	if l.kills[msg.Body] {
		l.mu.Unlock()
		l.died.Store(true)
		runtime.Goexit() // as a timeout or out of memory: the invocation returns nothing
	}
	defer l.mu.Unlock()
	switch left := l.failing[msg.Body]; {
	case left != 0:
		l.failing[msg.Body] = left - 1
		return errors.New("downstream: 503")
	case l.invalids[msg.Body]:
		return batch.Reject("bad-amount", "the amount is negative")
	}
	if _, producer, found, err := replay.Read(batch.MessageAttributes(msg.MessageAttributes)); err == nil && found {
		l.attrs[msg.Body] = attrStrings(producer)
	}
	g, seq := split(msg.Body)
	if slices.Contains(l.applied[g], seq) {
		l.again[msg.Body]++
		return nil
	}
	l.applied[g] = append(l.applied[g], seq)
	return nil
}

// consume is the consumer's invocation: the Processor's answer, or none
// when a record killed the invocation.
func (l *fifoLane) consume(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	l.mu.Lock()
	for _, r := range ev.Records {
		l.records[r.ReceiptHandle] = r
	}
	l.mu.Unlock()
	l.died.Store(false)
	var resp events.SQSEventResponse
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err = l.p.Process(ctx, ev)
	}()
	<-done
	if l.died.Load() {
		return events.SQSEventResponse{}, errDied
	}
	return resp, err
}

// spyQueue notes the consumer's hides of source messages.
type spyQueue struct {
	fifo.Queue
	l *fifoLane
}

func (q spyQueue) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	out, err := q.Queue.ChangeMessageVisibility(ctx, in, opts...)
	if err == nil {
		q.l.mu.Lock()
		r := q.l.records[aws.ToString(in.ReceiptHandle)]
		n, _ := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
		ms, _ := strconv.ParseInt(r.Attributes["SentTimestamp"], 10, 64)
		q.l.log = append(q.l.log, event{kind: "hide", body: r.Body, receives: n, at: q.l.lane.Clock.Now(), sent: time.UnixMilli(ms), seconds: in.VisibilityTimeout})
		q.l.mu.Unlock()
	}
	return out, err
}

// faultyStore fails the calls of a fifo.Store that fail names, until
// healed.
type faultyStore struct {
	fifo.Store
	mu   sync.Mutex
	fail map[string]bool // method name -> fails
}

var errStore = errors.New("dynamodb: throttled")

func (s *faultyStore) failing(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail[method] {
		return fmt.Errorf("%s: %w", method, errStore)
	}
	return nil
}

func (s *faultyStore) set(fails bool, methods ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == nil {
		s.fail = map[string]bool{}
	}
	for _, m := range methods {
		s.fail[m] = fails
	}
}

func (s *faultyStore) Parked(ctx context.Context, groups []string) (map[string]fifo.Park, error) {
	if err := s.failing("Parked"); err != nil {
		return nil, err
	}
	return s.Store.Parked(ctx, groups)
}

func (s *faultyStore) Park(ctx context.Context, p fifo.Park) (fifo.Park, error) {
	if err := s.failing("Park"); err != nil {
		return fifo.Park{}, err
	}
	return s.Store.Park(ctx, p)
}

func (s *faultyStore) Sent(ctx context.Context, group, round string, n int) error {
	if err := s.failing("Sent"); err != nil {
		return err
	}
	return s.Store.Sent(ctx, group, round, n)
}

func (s *faultyStore) Count(ctx context.Context, group string, c fifo.Count) error {
	if err := s.failing("Count"); err != nil {
		return err
	}
	return s.Store.Count(ctx, group, c)
}

// publish sends group's records seqs, as a producer does.
func (l *fifoLane) publish(group string, seqs ...int) {
	l.t.Helper()
	for _, n := range seqs {
		body := fmt.Sprintf("%s/%d", group, n)
		id, err := l.lane.Publish(l.t.Context(), body, group)
		if err != nil {
			l.t.Fatal(err)
		}
		l.mu.Lock()
		l.ids[body] = id
		l.mu.Unlock()
	}
}

// publishWith sends body with the producer's attributes attrs.
func (l *fifoLane) publishWith(body string, attrs map[string]types.MessageAttributeValue) {
	l.t.Helper()
	g, _ := split(body)
	_, err := l.lane.Queue.SendMessage(l.t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(l.lane.Route.SourceURL),
		MessageBody: aws.String(body), MessageAttributes: attrs, MessageGroupId: aws.String(g), MessageDeduplicationId: aws.String(strings.ReplaceAll(body, "/", "-"))})
	if err != nil {
		l.t.Fatal(err)
	}
}

func (l *fifoLane) set(m map[string]bool, v bool, bodies ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range bodies {
		m[b] = v
	}
}

// fail makes body fail its next runs times (-1: until healed).
func (l *fifoLane) fail(body string, runs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failing[body] = runs
}

func (l *fifoLane) heal(body string) { l.fail(body, 0) }

func (l *fifoLane) poll() int {
	l.t.Helper()
	n, err := l.lane.Poll(l.t.Context(), l.consume)
	if err != nil {
		l.t.Fatal(err)
	}
	return n
}

func (l *fifoLane) drain() {
	l.t.Helper()
	if err := l.lane.Drain(l.t.Context(), l.consume); err != nil {
		l.t.Fatalf("Drain: %v; left in the source: %q", err, l.bodies(l.lane.Route.SourceURL))
	}
}

// release releases group as `dlq groups release` does: a step, then the
// consumer's turn and a poll's wait, until the park ends.
func (l *fifoLane) release(group string) {
	l.t.Helper()
	l.releaseLoop(group, false)
}

// releaseThroughStops releases group, and again each time a copy parks
// it again, as an operator does once the cause is dealt with.
func (l *fifoLane) releaseThroughStops(group string) {
	l.t.Helper()
	l.releaseLoop(group, true)
}

func (l *fifoLane) releaseLoop(group string, throughStops bool) {
	l.t.Helper()
	r := l.lane.Releaser(l.store)
	for range 1000 {
		step, err := r.Release(l.t.Context(), group)
		if err != nil {
			l.t.Fatalf("Release %s: %v", group, err)
		}
		if step.Done {
			return
		}
		if step.Stopped && !throughStops {
			l.t.Fatalf("the release of %s stopped: the group parked again: %+v", group, l.park(group))
		}
		l.drain()
		l.lane.Clock.Advance(5 * time.Second)
	}
	l.t.Fatalf("the release of %s did not end: %+v", group, l.park(group))
}

// bodies returns the bodies of the queue at url, in its order.
func (l *fifoLane) bodies(url string) []string {
	var out []string
	for _, m := range l.lane.Queue.Messages(url) {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}

// park returns group's park (the zero Park when not parked).
func (l *fifoLane) park(group string) fifo.Park {
	l.t.Helper()
	parks, err := l.store.Store.Parked(l.t.Context(), []string{group})
	if err != nil {
		l.t.Fatal(err)
	}
	return parks[group]
}

func (l *fifoLane) appliedOf(group string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.applied[group])
}

// wantApplied fails t unless group's records applied are seqs, in that
// order.
func (l *fifoLane) wantApplied(group string, seqs ...int) {
	l.t.Helper()
	if got := l.appliedOf(group); !slices.Equal(got, seqs) {
		l.t.Fatalf("group %s applied %v, want %v", group, got, seqs)
	}
}

// wantQueue fails t unless the queue at url holds bodies, in that order.
func (l *fifoLane) wantQueue(name, url string, bodies ...string) {
	l.t.Helper()
	if got := l.bodies(url); !slices.Equal(got, bodies) {
		l.t.Fatalf("%s holds %q, want %q", name, got, bodies)
	}
}

// settled fails t unless the lane is empty but for the invalid queue's
// invalids, no group is parked, and (when once) no record succeeded
// twice.
func (l *fifoLane) settled(once bool, invalids ...string) {
	l.t.Helper()
	l.wantQueue("the source", l.lane.Route.SourceURL)
	l.wantQueue("the parking queue", l.lane.Route.ParkingURL)
	l.wantQueue("the DLQ", l.lane.Route.DLQURL)
	l.wantQueue("the invalid queue", l.lane.InvalidURL, invalids...)
	if parks, err := l.store.Store.List(l.t.Context()); err != nil || len(parks) > 0 {
		l.t.Fatalf("parks left: %+v, %v", parks, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if once && len(l.again) > 0 {
		l.t.Fatalf("records run again after they succeeded: %v", l.again)
	}
}

// events returns the runs and hides of body, in order.
func (l *fifoLane) events(body string) []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []event
	for _, e := range l.log {
		if e.body == body {
			out = append(out, e)
		}
	}
	return out
}

// firstRun is the index in the log of body's first run (-1: none).
func (l *fifoLane) firstRun(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.IndexFunc(l.log, func(e event) bool { return e.kind == "run" && e.body == body })
}

// backoff is the visibility a head delivered n times gets before jitter
// (the protocol's exponential, with settings.DefaultGroupMinBackoff).
func backoff(n int) time.Duration {
	return min(settings.DefaultGroupMinBackoff<<min(n-1, 20), settings.MaxGroupBackoff)
}

// margin is how long before its retention ends a head is parked.
func margin(retention time.Duration) time.Duration { return min(retention/8, 6*time.Hour) }

// wantHiddenBeforeEachRerun fails t unless each run of body delivered
// again came after a hide of that delivery, with its jittered backoff, and
// no earlier than the end of the hide of the delivery before.
func (l *fifoLane) wantHiddenBeforeEachRerun(body string) {
	l.t.Helper()
	hides := map[int]event{}
	for _, e := range l.events(body) {
		if e.kind == "hide" {
			// The jittered backoff, and never past the margin's half before
			// the record's retention ends.
			b := backoff(e.receives)
			lo, hi := b*3/4, b
			if last := e.sent.Add(l.keeper.Retention - margin(l.keeper.Retention)/2).Sub(e.at); last < hi {
				lo, hi = min(lo, last), last
			}
			if d := time.Duration(e.seconds) * time.Second; d < lo-time.Second || d > hi {
				l.t.Errorf("%s, delivery %d, hidden %v; want %v..%v", body, e.receives, d, lo, hi)
			}
			hides[e.receives] = e
			continue
		}
		if e.receives == 1 {
			continue
		}
		if _, ok := hides[e.receives]; !ok {
			l.t.Errorf("%s ran delivery %d without a hide of it first", body, e.receives)
		}
		if h, ok := hides[e.receives-1]; ok && e.at.Before(h.at.Add(time.Duration(h.seconds)*time.Second)) {
			l.t.Errorf("%s ran delivery %d at %v, before the hide of delivery %d ended", body, e.receives, e.at, h.receives)
		}
	}
}

// runIndex is the index in the log of body's run of delivery n (-1: none).
func (l *fifoLane) runIndex(body string, n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.IndexFunc(l.log, func(e event) bool { return e.kind == "run" && e.body == body && e.receives == n })
}

func attrStrings(attrs map[string]types.MessageAttributeValue) map[string]string {
	out := map[string]string{}
	for k, v := range attrs {
		out[k] = aws.ToString(v.DataType) + ":" + aws.ToString(v.StringValue) + string(v.BinaryValue)
	}
	return out
}

// 1. A failing head waits in the source, hidden for a backoff that grows
// with its deliveries; its successors wait behind it (SQS's group lock);
// another group goes on, a record published meanwhile too; once the head
// succeeds, its group applies in order. No replay budget: nothing reaches
// the DLQ, nothing is parked.
func TestAFailingHeadWaitsInTheSourceWithABackoff(t *testing.T) {
	l := newFIFOLane(t, laneSetup{})
	l.publish("a", 1, 2, 3)
	l.publish("b", 1, 2)
	l.fail("a/1", 4)
	if n := l.poll(); n != 5 {
		t.Fatalf("first poll delivered %d, want 5", n)
	}
	l.wantApplied("a")
	l.wantApplied("b", 1, 2)
	l.publish("b", 3)
	if n := l.poll(); n != 1 {
		t.Fatalf("second poll delivered %d, want b/3 alone (group a held by its hidden head)", n)
	}
	l.wantApplied("b", 1, 2, 3)
	l.drain()

	l.wantApplied("a", 1, 2, 3)
	l.wantHiddenBeforeEachRerun("a/1")
	runs := 0
	for _, e := range l.events("a/1") {
		if e.kind == "run" {
			runs++
		}
	}
	if runs != 5 {
		t.Errorf("a/1 ran %d times, want 5", runs)
	}
	if l.firstRun("a/2") < l.runIndex("a/1", 5) {
		t.Errorf("a/2 ran before a/1 succeeded")
	}
	l.settled(true)
}

// tenAttributes returns a producer's ten attributes, of every type, for
// the record body.
func tenAttributes(body string) map[string]types.MessageAttributeValue {
	attrs := map[string]types.MessageAttributeValue{}
	for i := range 8 {
		attrs[fmt.Sprintf("attr-%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("%s value %d é\"<", body, i))}
	}
	attrs["amount"] = types.MessageAttributeValue{DataType: aws.String("Number.cents"), StringValue: aws.String("1250")}
	attrs["sig"] = types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xff}}
	return attrs
}

// 2. A head carrying the producer's ten attributes, delivered too often,
// parks its group with them; its successor (ten too) parks behind it; the
// release brings both back and the handler reads the producer's ten
// attributes of each (replay.Read), applied in order.
func TestAHeadWithTenAttributesIsParkedAndReleased(t *testing.T) {
	l := newFIFOLane(t, laneSetup{keeper: func(k *fifo.Keeper) { k.MaxReceives = 3 }})
	sent := map[string]map[string]string{}
	for _, body := range []string{"a/1", "a/2"} {
		attrs := tenAttributes(body)
		sent[body] = attrStrings(attrs)
		l.publishWith(body, attrs)
	}
	l.publish("b", 1)
	l.fail("a/1", -1)
	l.drain()

	p := l.park("a")
	if p.Reason != fifo.ReasonDeliveredTooOften || p.Queue != "parking" || p.Parked != 2 {
		t.Fatalf("park = %+v, want a/1 delivered too often, 2 parked", p)
	}
	l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/1", "a/2")
	for _, m := range l.lane.Queue.Messages(l.lane.Route.ParkingURL) {
		meta, producer, found, err := replay.Read(m.MessageAttributes)
		if err != nil || !found {
			t.Fatalf("parked %s: our note: found %v, %v", aws.ToString(m.Body), found, err)
		}
		if got := attrStrings(producer); !mapsEqual(got, sent[aws.ToString(m.Body)]) {
			t.Errorf("parked %s carries %v, want the producer's %v", aws.ToString(m.Body), got, sent[aws.ToString(m.Body)])
		}
		if want := map[string]string{"a/1": fifo.ReasonDeliveredTooOften, "a/2": fifo.ReasonGroupParked}[aws.ToString(m.Body)]; meta.Reason != want {
			t.Errorf("parked %s: reason %q, want %q", aws.ToString(m.Body), meta.Reason, want)
		}
	}
	l.wantApplied("b", 1)

	l.heal("a/1")
	l.release("a")
	l.wantApplied("a", 1, 2)
	for body, want := range sent {
		if got := l.attrs[body]; !mapsEqual(got, want) {
			t.Errorf("released %s: the handler read %v, want the producer's %v", body, got, want)
		}
	}
	l.settled(true)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// 3. Two copies of one batch: the visibility ran out while the first
// invocation still ran, and SQS delivered the batch again. Whichever copy
// reads the parks first, order holds; with an invalid head both copies
// park the group behind it, the head stays in the invalid queue once, and
// the release applies the rest in order.
func TestTwoCopiesOfABatch(t *testing.T) {
	type copyAt int
	const (
		duringTheHead copyAt = iota // the second copy runs while the first copy's head runs
		beforeTheRun                // the second copy runs before the first reads the parks
	)
	for _, tt := range []struct {
		name    string
		at      copyAt
		invalid bool
	}{
		{"failing head, second copy during the head", duringTheHead, false},
		{"failing head, second copy first", beforeTheRun, false},
		{"invalid head, second copy during the head", duringTheHead, true},
		{"invalid head, second copy first", beforeTheRun, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newFIFOLane(t, laneSetup{concurrency: 1})
			l.publish("a", 1, 2, 3)
			l.publish("b", 1)
			if tt.invalid {
				l.set(l.invalids, true, "a/1")
			} else {
				l.fail("a/1", 1) // the copy that runs it first fails it, the other applies it
			}
			second := func(ctx context.Context) {
				l.lane.Clock.Advance(31 * time.Second) // the first copy's visibility runs out
				if n, err := l.lane.Poll(ctx, l.consume); err != nil || n != 4 {
					t.Fatalf("the second copy: %d records, %v; want the 4", n, err)
				}
			}
			copied := false
			first := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				if tt.at == beforeTheRun {
					copied = true
					second(ctx)
				}
				return l.consume(ctx, ev)
			}
			l.onRun = func(body string, _ int) {
				if tt.at == duringTheHead && body == "a/1" && !copied {
					copied = true
					second(t.Context())
				}
			}
			// The first copy acknowledges with receipt handles the second
			// copy's receive replaced: its deletes fail, as on SQS.
			_, _ = l.lane.Poll(t.Context(), first)
			l.onRun = nil
			l.drain()
			if !tt.invalid {
				l.wantApplied("a", 1, 2, 3)
				l.wantApplied("b", 1)
				l.settled(false)
				return
			}
			if p := l.park("a"); p.Queue != "invalid" || p.Reason != "invalid: bad-amount" {
				t.Fatalf("park of a = %+v, want behind its invalid head", p)
			}
			l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3")
			l.release("a")
			l.wantApplied("a", 2, 3)
			l.wantApplied("b", 1)
			l.settled(false, "a/1")
		})
	}
}

// 4. A record that kills every invocation (it never returns before the
// deadline, or takes the process down: the invocation answers nothing) is
// hidden for its backoff before each rerun, and its group waits behind it
// while another group goes on; it is parked before its retention ends
// (expiring), or, when its visibility cannot be set, once delivered
// MaxReceives times; the release applies it and its group in order.
func TestARecordThatKillsEveryInvocation(t *testing.T) {
	for _, tt := range []struct {
		name       string
		hideFails  bool
		wantReason string
	}{
		{"hidden before each rerun, parked expiring", false, fifo.ReasonExpiring},
		{"hide refused, parked delivered too often", true, fifo.ReasonDeliveredTooOften},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newFIFOLane(t, laneSetup{})
			l.publish("k", 1, 2, 3)
			l.publish("o", 1, 2)
			l.set(l.kills, true, "k/1")
			if tt.hideFails {
				l.lane.Queue.EntryFault = func(op, _ string, m types.Message) error {
					if op == "ChangeMessageVisibility" && aws.ToString(m.Body) == "k/1" {
						return errors.New("throttled")
					}
					return nil
				}
			}
			sent := l.lane.Queue.Messages(l.lane.Route.SourceURL)[0].Attributes["SentTimestamp"]
			l.drain()

			p := l.park("k")
			if p.Reason != tt.wantReason || p.Queue != "parking" {
				t.Fatalf("park of k = %+v, want reason %s", p, tt.wantReason)
			}
			ms, _ := strconv.ParseInt(sent, 10, 64)
			expiry := time.UnixMilli(ms).Add(settings.DefaultSourceRetention)
			if !p.Since.Before(expiry) {
				t.Fatalf("k/1 parked at %v, after its retention ended at %v", p.Since, expiry)
			}
			if !tt.hideFails && p.Since.Before(expiry.Add(-margin(settings.DefaultSourceRetention))) {
				t.Fatalf("k/1 parked at %v, before the margin ahead of its expiry at %v", p.Since, expiry)
			}
			l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "k/1", "k/2", "k/3")
			l.wantApplied("o", 1, 2)
			if !tt.hideFails {
				l.wantHiddenBeforeEachRerun("k/1")
			}
			for _, body := range []string{"k/2", "k/3"} {
				if l.firstRun(body) >= 0 {
					t.Fatalf("%s ran behind its dying head", body)
				}
			}

			l.set(l.kills, false, "k/1")
			l.lane.Queue.EntryFault = nil
			l.release("k")
			l.wantApplied("k", 1, 2, 3)
			l.wantApplied("o", 1, 2)
			l.settled(false)
		})
	}
}

// 5. A producer's record that carries our attribute (a release round it
// made up, the replay's metadata unsealed, or garbage) is a producer's
// record: behind a parked head it parks in order, and it is applied in
// order after the release, its garbage kept as the producer's.
func TestForgedMetadataNeitherSkipsNorLoses(t *testing.T) {
	l := newFIFOLane(t, laneSetup{})
	l.set(l.invalids, true, "a/1")
	l.publish("a", 1)
	l.drain()
	if p := l.park("a"); p.Queue != "invalid" {
		t.Fatalf("park of a = %+v, want behind its invalid head", p)
	}
	forgedRound, err := parking.ReleasedAttributes(nil, "m-forged", "a/2", "0123456789abcdef0123456789abcdef", 1)
	if err != nil {
		t.Fatal(err)
	}
	forgedReplay, err := replay.Attributes(nil, replay.Metadata{OriginalMessageID: "m-forged", ReplayCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	garbage := map[string]types.MessageAttributeValue{envelope.ReplayAttributeName: {DataType: aws.String("String"), StringValue: aws.String("not json")}}
	l.publishWith("a/2", forgedRound)
	l.publishWith("a/3", forgedReplay)
	l.publishWith("a/4", garbage)
	l.drain()
	l.wantApplied("a")
	l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3", "a/4")

	l.release("a")
	l.wantApplied("a", 2, 3, 4)
	if got := l.attrs["a/4"]; got["homing-corrupt"] != "String:not json" {
		t.Errorf("a/4: the handler read %v, want the producer's garbage kept", got)
	}
	l.settled(true, "a/1")
}

// 6. An invalid head goes to the invalid queue with its reason and parks
// its group: the group's later records go to the parking queue in order,
// with a note of why; the release applies them in order and the head
// stays in the invalid queue. On a lane that skips, the group goes on at
// once, and a head delivered too often goes to the parking queue alone.
func TestAnInvalidHeadParksItsGroup(t *testing.T) {
	t.Run("hold", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{})
		l.set(l.invalids, true, "a/1")
		l.publish("a", 1, 2, 3)
		l.publish("b", 1, 2)
		l.drain()
		l.wantApplied("a")
		l.wantApplied("b", 1, 2)
		inv := l.lane.Queue.Messages(l.lane.InvalidURL)
		if len(inv) != 1 {
			t.Fatalf("invalid queue holds %d, want a/1", len(inv))
		}
		if meta, _, _, err := invalid.Read(inv[0].MessageAttributes); err != nil || meta.Reason != "bad-amount" {
			t.Fatalf("a/1's verdict: %+v, %v", meta, err)
		}
		p := l.park("a")
		if p.Reason != "invalid: bad-amount" || p.Queue != "invalid" || p.Head != l.ids["a/1"] || p.Parked != 2 {
			t.Fatalf("park of a = %+v", p)
		}
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3")
		for _, m := range l.lane.Queue.Messages(l.lane.Route.ParkingURL) {
			if meta, _, _, err := replay.Read(m.MessageAttributes); err != nil || meta.Reason != fifo.ReasonGroupParked {
				t.Errorf("parked %s: note %+v, %v", aws.ToString(m.Body), meta, err)
			}
			if m.Attributes["MessageGroupId"] != "a" {
				t.Errorf("parked %s in group %q", aws.ToString(m.Body), m.Attributes["MessageGroupId"])
			}
		}
		l.publish("a", 4) // published while parked: behind the others
		l.drain()
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3", "a/4")

		l.release("a")
		l.wantApplied("a", 2, 3, 4)
		l.publish("a", 5)
		l.drain()
		l.wantApplied("a", 2, 3, 4, 5)
		l.settled(true, "a/1")
	})
	t.Run("skip", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{keeper: func(k *fifo.Keeper) {
			k.OnError = fifo.Skip
			k.Store = nil
		}})
		l.set(l.invalids, true, "a/1")
		l.publish("a", 1, 2, 3)
		l.publish("b", 1)
		if n := l.poll(); n != 4 {
			t.Fatalf("poll delivered %d, want 4", n)
		}
		l.wantApplied("a", 2, 3)
		l.wantApplied("b", 1)
		l.settled(true, "a/1")
	})
}

// 7. The parks cannot be read or written for a while: the records of the
// groups concerned fail and wait in the source, none is applied out of
// order or lost, and all apply in order once the store is back.
func TestAParksStoreFailure(t *testing.T) {
	t.Run("read", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{})
		l.publish("a", 1, 2, 3)
		l.publish("b", 1)
		l.store.set(true, "Parked")
		for range 3 {
			l.poll()
			l.lane.Clock.Advance(31 * time.Second)
		}
		l.wantApplied("a")
		l.wantApplied("b")
		l.store.set(false, "Parked")
		l.drain()
		l.wantApplied("a", 1, 2, 3)
		l.wantApplied("b", 1)
		l.settled(true)
	})
	t.Run("park", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{})
		l.set(l.invalids, true, "a/1")
		l.publish("a", 1, 2, 3)
		l.store.set(true, "Park")
		l.poll()
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL)
		l.wantApplied("a")
		l.store.set(false, "Park")
		l.drain()
		l.wantApplied("a")
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3")
		l.release("a")
		l.wantApplied("a", 2, 3)
		l.settled(true, "a/1")
	})
	t.Run("count", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{})
		l.set(l.invalids, true, "a/1")
		l.publish("a", 1)
		l.drain()
		l.publish("a", 2, 3)
		l.store.set(true, "Count")
		l.poll()
		l.store.set(false, "Count")
		l.drain()
		l.wantApplied("a")
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3")
		if p := l.park("a"); p.Parked != 2 {
			t.Fatalf("park of a counts %d parked, want 2", p.Parked)
		}
		l.release("a")
		l.wantApplied("a", 2, 3)
		l.settled(true, "a/1")
	})
	t.Run("count applied", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{})
		l.set(l.invalids, true, "a/1")
		l.publish("a", 1, 2, 3)
		l.drain()
		if _, err := l.lane.Releaser(l.store).Release(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		l.store.set(true, "Count")
		l.poll() // a/2 applied, its count fails: it fails and comes again
		l.store.set(false, "Count")
		l.release("a")
		l.wantApplied("a", 2, 3)
		l.settled(false, "a/1")
	})
}

// 8. Records that arrive while a release round is pending (the step has
// begun it, the consumer has not settled it yet) go to the parking queue
// behind the round's records, even when they reach the source before the
// round's copies; the next round sends them, and all apply in order.
func TestRecordsArrivingDuringARelease(t *testing.T) {
	l := newFIFOLane(t, laneSetup{})
	l.set(l.invalids, true, "a/1")
	l.publish("a", 1, 2, 3)
	l.drain()

	// a/4 arrives as the step sends a/2 back: ahead of it in the source.
	published := false
	l.lane.Queue.CallFault = func(op, url string) error {
		if op == "SendMessageBatch" && url == l.lane.Route.SourceURL && !published {
			published = true
			l.publish("a", 4)
		}
		return nil
	}
	r := l.lane.Releaser(l.store)
	step, err := r.Release(t.Context(), "a")
	l.lane.Queue.CallFault = nil
	if err != nil || step.Done || step.Moved != 2 {
		t.Fatalf("first step = %+v, %v; want 2 moved", step, err)
	}
	l.wantQueue("the source", l.lane.Route.SourceURL, "a/4", "a/2", "a/3")
	if step, err := r.Release(t.Context(), "a"); err != nil || step.Moved != 0 || step.Pending != 2 {
		t.Fatalf("a step while the round is pending = %+v, %v; want it to wait", step, err)
	}
	l.drain()
	l.wantApplied("a", 2, 3)
	l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3", "a/4")
	l.release("a")
	l.wantApplied("a", 2, 3, 4)
	l.settled(true, "a/1")
}

// 9. A released record is a head like any other: one that fails again
// waits in the source with a backoff, the round's later records behind it;
// one that parks again stops the round: it and the records after it stay
// in the parking queue, the release is over, and a later release applies
// them all in order.
func TestAReleasedRecordFailsOrParksAgain(t *testing.T) {
	t.Run("fails again", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{keeper: func(k *fifo.Keeper) { k.MaxReceives = 3 }})
		l.publish("a", 1, 2, 3)
		l.fail("a/1", -1)
		l.drain()
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/1", "a/2", "a/3")
		l.fail("a/1", 1)
		l.release("a")
		l.wantApplied("a", 1, 2, 3)
		l.settled(true)
	})
	t.Run("parks again", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{keeper: func(k *fifo.Keeper) { k.MaxReceives = 3 }})
		l.publish("a", 1, 2, 3)
		l.fail("a/1", -1)
		l.drain()
		r := l.lane.Releaser(l.store)
		if step, err := r.Release(t.Context(), "a"); err != nil || step.Moved != 3 {
			t.Fatalf("step = %+v, %v", step, err)
		}
		first := l.park("a")
		l.drain() // a/1 fails until delivered too often again
		if step, err := r.Release(t.Context(), "a"); err != nil || !step.Stopped {
			t.Fatalf("step after the released head parked again = %+v, %v; want Stopped", step, err)
		}
		p := l.park("a")
		if p.Releasing != "" || p.Head == first.Head || p.Reason != fifo.ReasonDeliveredTooOften || p.Queue != "parking" {
			t.Fatalf("park after the released head parked again = %+v (before: %+v)", p, first)
		}
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/1", "a/2", "a/3")
		l.wantApplied("a")
		l.heal("a/1")
		l.release("a")
		l.wantApplied("a", 1, 2, 3)
		l.settled(true)
	})
	t.Run("invalid on its release", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{keeper: func(k *fifo.Keeper) { k.MaxReceives = 3 }})
		l.publish("a", 1, 2, 3)
		l.fail("a/1", -1)
		l.drain()
		l.heal("a/1")
		l.set(l.invalids, true, "a/1")
		r := l.lane.Releaser(l.store)
		if _, err := r.Release(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		l.drain()
		if step, err := r.Release(t.Context(), "a"); err != nil || !step.Stopped {
			t.Fatalf("step after the released head was rejected = %+v, %v; want Stopped", step, err)
		}
		if p := l.park("a"); p.Queue != "invalid" || p.Releasing != "" || !strings.HasPrefix(p.Reason, "invalid: ") {
			t.Fatalf("park = %+v, want behind a/1 in the invalid queue", p)
		}
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3")
		l.release("a")
		l.wantApplied("a", 2, 3)
		l.settled(true, "a/1")
	})
}

// 10. A release step that fails midway (a copy sent back but not
// counted, or not sent) and is run again at once, before the consumer has
// seen what it sent: nothing is lost, nothing applied out of order, and
// the release ends.
func TestAReleaseStepThatFailsMidway(t *testing.T) {
	for _, method := range []string{"Sent", "SendMessageBatch"} {
		t.Run(method, func(t *testing.T) {
			l := newFIFOLane(t, laneSetup{})
			l.set(l.invalids, true, "a/1")
			l.publish("a", 1, 2, 3, 4)
			l.drain()
			r := l.lane.Releaser(l.store)
			sends := 0
			l.lane.Queue.CallFault = func(op, url string) error {
				if op == "SendMessageBatch" && url == l.lane.Route.SourceURL {
					if sends++; sends == 2 { // a/3
						switch method {
						case "Sent":
							l.store.set(true, "Sent")
						default:
							return errors.New("throttled")
						}
					}
				}
				return nil
			}
			if _, err := r.Release(t.Context(), "a"); err == nil {
				t.Fatal("the step did not fail")
			}
			l.lane.Queue.CallFault = nil
			l.store.set(false, "Sent")
			if _, err := r.Release(t.Context(), "a"); err != nil {
				t.Fatal(err)
			}
			l.drain()
			l.release("a")
			l.wantApplied("a", 2, 3, 4)
			l.settled(false, "a/1")
		})
	}
}

// 11. A parked record whose count failed comes back after the lane's
// visibility timeout, later than SQS's five minutes of deduplication (a
// function of a minute has a queue of six), and is parked again: the
// release applies the group in order all the same, even when the consumer
// runs while the step still sends and a new record of the group arrives.
func TestARecordParkedTwice(t *testing.T) {
	l := newFIFOLane(t, laneSetup{lane: batchtest.LaneOptions{Visibility: 6 * time.Minute}})
	l.set(l.invalids, true, "a/1")
	l.publish("a", 1)
	l.drain()
	l.publish("a", 2, 3)
	l.store.set(true, "Count")
	l.poll()
	l.store.set(false, "Count")
	l.drain()
	if got := l.bodies(l.lane.Route.ParkingURL); !slices.Contains(got, "a/3") {
		t.Fatalf("parking holds %q", got)
	}

	// The consumer runs as the step sends a/3 back, and a/4 arrives then.
	sends := 0
	l.lane.Queue.CallFault = func(op, url string) error {
		if op == "SendMessageBatch" && url == l.lane.Route.SourceURL {
			if sends++; sends == 2 {
				l.lane.Queue.CallFault = nil
				l.drain()
				l.publish("a", 4)
				l.drain()
			}
		}
		return nil
	}
	_, _ = l.lane.Releaser(l.store).Release(t.Context(), "a")
	l.lane.Queue.CallFault = nil
	l.drain()
	l.release("a")
	l.wantApplied("a", 2, 3, 4)
	l.settled(false, "a/1")
}

// 12. A copy that parks the group again stops its round while the step
// still sends, or after a record of the group arrived during the round:
// the records behind it stay in the parking queue in their order, ahead
// of those parked since, and the next release applies them in order.
func TestARoundStoppedKeepsTheParkingQueuesOrder(t *testing.T) {
	t.Run("while the step still sends", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{keeper: func(k *fifo.Keeper) { k.MaxReceives = 3 }})
		l.publish("a", 1, 2, 3, 4)
		l.fail("a/1", -1)
		l.drain()
		l.heal("a/1")
		l.set(l.invalids, true, "a/1")
		// The consumer runs as the step sends a/3 back: a/1 parks the
		// group again, a/2 stays in the parking queue.
		sends := 0
		l.lane.Queue.CallFault = func(op, url string) error {
			if op == "SendMessageBatch" && url == l.lane.Route.SourceURL {
				if sends++; sends == 3 {
					l.lane.Queue.CallFault = nil
					l.drain()
				}
			}
			return nil
		}
		r := l.lane.Releaser(l.store)
		if _, err := r.Release(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		l.lane.Queue.CallFault = nil
		l.drain()
		if step, err := r.Release(t.Context(), "a"); err != nil || !step.Stopped {
			t.Fatalf("step = %+v, %v; want Stopped", step, err)
		}
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3", "a/4")
		l.release("a")
		l.wantApplied("a", 2, 3, 4)
		l.settled(false, "a/1")
	})
	t.Run("after a record arrived during the round", func(t *testing.T) {
		l := newFIFOLane(t, laneSetup{})
		l.set(l.invalids, true, "a/1", "a/2")
		l.publish("a", 1, 2, 3)
		l.drain()
		// a/4 arrives ahead of the round's copies and is parked behind
		// them; a/2 is rejected on its release.
		published := false
		l.lane.Queue.CallFault = func(op, url string) error {
			if op == "SendMessageBatch" && url == l.lane.Route.SourceURL && !published {
				published = true
				l.publish("a", 4)
			}
			return nil
		}
		r := l.lane.Releaser(l.store)
		if _, err := r.Release(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		l.lane.Queue.CallFault = nil
		l.drain()
		if step, err := r.Release(t.Context(), "a"); err != nil || !step.Stopped {
			t.Fatalf("step = %+v, %v; want Stopped", step, err)
		}
		l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/3", "a/4")
		l.release("a")
		l.wantApplied("a", 3, 4)
		l.settled(false, "a/1", "a/2")
	})
}

// A head that fails until it parks its group has one failure record, of
// its own class, written at its last delivery; the records held behind it
// have none (they are parked with the group, never dead-lettered alone).
func TestAParkedHeadsFailureIsRecordedOnce(t *testing.T) {
	log := &memoryFailures{}
	l := newFIFOLane(t, laneSetup{keeper: func(k *fifo.Keeper) { k.MaxReceives = 3 }, failures: log})
	l.publish("a", 1, 2, 3)
	l.fail("a/1", 100)
	l.drain()
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.byID) != 1 || log.writes != 1 {
		t.Fatalf("%d records in %d writes: %+v; want the head's alone, once", len(log.byID), log.writes, log.byID)
	}
	for _, f := range log.byID {
		if f.Class == "blocked" || f.Failures != 2 {
			t.Fatalf("record %+v: want the head's own class at its last delivery (2 of MaxReceives 3)", f)
		}
	}
}
