package batch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/holdtest"
	holdrecord "github.com/homingdlq/homing/hold/record"
)

// groupLane is a FIFO lane's consumer with Groups over holdtest.Memory: the
// records it is given, the effects its handler applied (in order), what it
// sent to its own source queue, and the bodies that fail or are invalid.
type groupLane struct {
	t        *testing.T
	store    *faultyStore
	source   *sourceQueue
	invalid  *batchtest.InvalidChannel
	p        *batch.Processor
	opts     batch.Options
	mu       sync.Mutex
	applied  []string // bodies, in the order applied
	failing  map[string]bool
	invalids map[string]bool
	seq      int
}

func newGroupLane(t *testing.T, onError hold.OnError, opts batch.Options) *groupLane {
	l := &groupLane{t: t, store: &faultyStore{Memory: holdtest.NewMemory()}, source: &sourceQueue{},
		invalid: &batchtest.InvalidChannel{}, failing: map[string]bool{}, invalids: map[string]bool{}}
	opts.Groups = &hold.Keeper{Store: l.store, Source: l.source, SourceURL: "https://sqs.local/orders.fifo", OnError: onError}
	opts.Logger = slog.New(slog.DiscardHandler)
	l.opts = opts
	l.p = batch.New(l.handle, l.invalid, opts)
	return l
}

func (l *groupLane) handle(_ context.Context, msg events.SQSMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.failing[msg.Body]:
		return errors.New("downstream: 503")
	case l.invalids[msg.Body]:
		return batch.Reject("bad-amount", "amount is negative")
	}
	if !slices.Contains(l.applied, msg.Body) { // the idempotent receiver
		l.applied = append(l.applied, msg.Body)
	}
	return nil
}

func (l *groupLane) fail(bodies ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range bodies {
		l.failing[b] = true
	}
}

func (l *groupLane) heal(bodies ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range bodies {
		delete(l.failing, b)
	}
}

// publish returns new records of group with bodies, as the source hands them
// out: fresh ids and increasing sequence numbers.
func (l *groupLane) publish(group string, bodies ...string) []events.SQSMessage {
	var out []events.SQSMessage
	for _, b := range bodies {
		l.seq++
		out = append(out, events.SQSMessage{MessageId: fmt.Sprintf("id-%s", b), Body: b, EventSourceARN: fifoARN,
			Attributes: map[string]string{"MessageGroupId": group, "SequenceNumber": fmt.Sprint(l.seq)}})
	}
	return out
}

// again returns a record delivered again (a retry in the source, or a copy).
func (l *groupLane) again(r events.SQSMessage) events.SQSMessage {
	l.seq++
	r.Attributes = map[string]string{"MessageGroupId": r.Attributes["MessageGroupId"], "SequenceNumber": fmt.Sprint(l.seq)}
	return r
}

// run processes records as one batch and returns the ids of its failures.
func (l *groupLane) run(records ...events.SQSMessage) []string {
	l.t.Helper()
	resp, err := l.p.Process(context.Background(), events.SQSEvent{Records: records})
	if err != nil {
		l.t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

func (l *groupLane) wantApplied(want ...string) {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Equal(l.applied, want) {
		l.t.Fatalf("applied %v, want %v", l.applied, want)
	}
}

func (l *groupLane) holdOf(group string) (hold.Hold, bool) {
	l.t.Helper()
	hs, err := l.store.Memory.Holds(context.Background(), []string{group})
	if err != nil {
		l.t.Fatal(err)
	}
	h, ok := hs[group]
	return h, ok
}

func (l *groupLane) wantHeld(group string, n int) hold.Hold {
	l.t.Helper()
	h, ok := l.holdOf(group)
	if !ok {
		l.t.Fatalf("group %s is free, want it held", group)
	}
	if got, _ := l.store.Memory.Count(context.Background(), group); got != n {
		l.t.Fatalf("group %s holds %d records, want %d", group, got, n)
	}
	return h
}

func (l *groupLane) wantFree(group string) {
	l.t.Helper()
	if h, ok := l.holdOf(group); ok {
		l.t.Fatalf("group %s is held (%+v), want it free", group, h)
	}
}

// sourceQueue records what the consumer sends to its own source queue and
// hands it out as records.
type sourceQueue struct {
	mu   sync.Mutex
	sent []*sqs.SendMessageInput
	fail error
}

func (q *sourceQueue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return nil, q.fail
	}
	q.sent = append(q.sent, in)
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprintf("sent-%d", len(q.sent)))}, nil
}

// take returns what was sent since the last take, as records of the source.
func (l *groupLane) take() []events.SQSMessage {
	l.source.mu.Lock()
	sent := l.source.sent
	l.source.sent = nil
	l.source.mu.Unlock()
	var out []events.SQSMessage
	for i, in := range sent {
		l.seq++
		r := events.SQSMessage{MessageId: fmt.Sprintf("back-%d-%d", l.seq, i), Body: aws.ToString(in.MessageBody), EventSourceARN: fifoARN,
			Attributes:        map[string]string{"MessageGroupId": aws.ToString(in.MessageGroupId), "SequenceNumber": fmt.Sprint(l.seq)},
			MessageAttributes: map[string]events.SQSMessageAttribute{}}
		for name, a := range in.MessageAttributes {
			r.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue}
		}
		out = append(out, r)
	}
	return out
}

// faultyStore fails the named methods of its Memory.
type faultyStore struct {
	*holdtest.Memory
	mu    sync.Mutex
	fails map[string]error
}

func (s *faultyStore) failOn(method string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails == nil {
		s.fails = map[string]error{}
	}
	s.fails[method] = err
}

func (s *faultyStore) err(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fails[method]
}

func (s *faultyStore) Holds(ctx context.Context, groups []string) (map[string]hold.Hold, error) {
	if err := s.err("Holds"); err != nil {
		return nil, err
	}
	return s.Memory.Holds(ctx, groups)
}

func (s *faultyStore) Begin(ctx context.Context, h hold.Hold, now time.Time) (hold.Hold, error) {
	if err := s.err("Begin"); err != nil {
		return hold.Hold{}, err
	}
	return s.Memory.Begin(ctx, h, now)
}

func (s *faultyStore) Append(ctx context.Context, group string, m hold.Message, now time.Time) (hold.Hold, error) {
	if err := s.err("Append"); err != nil {
		return hold.Hold{}, err
	}
	return s.Memory.Append(ctx, group, m, now)
}

func TestAFailedRecordHoldsItsGroupAndTheRestWaitBehindIt(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.fail("a1")
	a := l.publish("A", "a1", "a2", "a3")
	b := l.publish("B", "b1")
	if failed := l.run(append(a, b...)...); !slices.Equal(failed, []string{"id-a1"}) {
		t.Fatalf("failures %v, want only the head id-a1 (the rest held, not failed)", failed)
	}
	l.wantApplied("b1")
	if h := l.wantHeld("A", 2); h.Head != "id-a1" || h.HeadBody != "a1" || h.State != hold.Held {
		t.Fatalf("hold %+v, want head id-a1 with its body, held", h)
	}
	l.wantFree("B")

	// The head dead-letters; the group's later records reach the consumer.
	if failed := l.run(l.publish("A", "a4")...); len(failed) != 0 {
		t.Fatalf("failures %v, want a4 held", failed)
	}
	l.wantApplied("b1")
	l.wantHeld("A", 3)

	// The head comes back (a replay carries its original id) and is applied:
	// the group drains in order and is free again.
	l.heal("a1")
	replayed := l.again(a[0])
	replayed.MessageId = "replayed-a1"
	replayed.MessageAttributes = map[string]events.SQSMessageAttribute{hold.Attribute: {DataType: "String", StringValue: aws.String(`{"origin":"id-a1"}`)}}
	if failed := l.run(replayed); len(failed) != 0 {
		t.Fatalf("failures %v, want none", failed)
	}
	l.wantApplied("b1", "a1", "a2", "a3", "a4")
	l.wantFree("A")
}

func TestAHeadRetriedInTheSourceDrainsItsGroup(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.fail("a1")
	a := l.publish("A", "a1", "a2")
	l.run(a...)
	l.heal("a1")
	if failed := l.run(l.again(a[0])); len(failed) != 0 {
		t.Fatalf("failures %v, want none", failed)
	}
	l.wantApplied("a1", "a2")
	l.wantFree("A")
}

func TestAHeldRecordThatFailsBecomesTheHead(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.fail("a1", "a3")
	a := l.publish("A", "a1", "a2", "a3", "a4")
	l.run(a...)
	l.heal("a1")
	l.run(l.again(a[0]))
	l.wantApplied("a1", "a2")
	h := l.wantHeld("A", 1)
	if h.Head != "id-a3" || h.HeadBody != "a3" || h.State != hold.Held {
		t.Fatalf("hold %+v, want head id-a3 (the held record that failed) with its body, held", h)
	}
	back := l.take()
	if len(back) != 1 || back[0].Body != "a3" || holdrecord.Origin(back[0]) != "id-a3" {
		t.Fatalf("sent back %+v, want a3 with its original id", back)
	}
	// Later records wait behind the new head; the head's copy from the source
	// fails until it heals, then the rest follow in order.
	l.run(l.publish("A", "a5")...)
	if failed := l.run(back[0]); !slices.Equal(failed, []string{back[0].MessageId}) {
		t.Fatalf("failures %v, want the head's copy", failed)
	}
	l.heal("a3")
	l.run(l.again(back[0]))
	l.wantApplied("a1", "a2", "a3", "a4", "a5")
	l.wantFree("A")
}

func TestAnInvalidHeadKeepsItsGroupHeldUntilReleased(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.invalids["a1"] = true
	l.run(l.publish("A", "a1", "a2", "a3")...)
	l.wantApplied()
	if got := l.invalid.Reasons()["bad-amount"]; got != 1 {
		t.Fatalf("invalid queue has %d bad-amount, want 1", got)
	}
	h := l.wantHeld("A", 2)
	if h.Parked != "invalid: bad-amount" {
		t.Fatalf("hold parked %q, want the head's reason", h.Parked)
	}
	// An operator releases the group (dlq groups release): the trigger drains it.
	if _, err := l.opts.Groups.Release(context.Background(), h, time.Now()); err != nil {
		t.Fatal(err)
	}
	trigger := l.take()
	if len(trigger) != 1 || !holdrecord.IsTrigger(trigger[0]) {
		t.Fatalf("release sent %+v, want one drain trigger", trigger)
	}
	if failed := l.run(trigger...); len(failed) != 0 {
		t.Fatalf("failures %v, want none", failed)
	}
	l.wantApplied("a2", "a3")
	l.wantFree("A")
}

func TestAnInvalidHeadOnALaneThatSkipsLetsTheGroupGoOn(t *testing.T) {
	l := newGroupLane(t, hold.Skip, batch.Options{})
	l.invalids["a1"] = true
	l.run(l.publish("A", "a1", "a2")...)
	l.wantApplied("a2")
	l.wantFree("A")
}

func TestARecordTheGroupCannotBeHeldBehindBlocksTheRest(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.fail("a1")
	l.store.failOn("Begin", errors.New("throttled"))
	if failed := l.run(l.publish("A", "a1", "a2")...); !slices.Equal(failed, []string{"id-a1", "id-a2"}) {
		t.Fatalf("failures %v, want both (not held: they stay in order in the source)", failed)
	}
	l.wantApplied()
}

func TestAGroupWhoseHoldsCannotBeReadAppliesNothing(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.store.failOn("Holds", errors.New("throttled"))
	if failed := l.run(l.publish("A", "a1", "a2")...); len(failed) != 2 {
		t.Fatalf("failures %v, want both", failed)
	}
	l.wantApplied()
}

func TestAHeldRecordThatCannotBeStoredFailsAndWaitsInTheSource(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.fail("a1")
	a := l.publish("A", "a1", "a2", "a3")
	l.store.failOn("Append", errors.New("throttled"))
	if failed := l.run(a...); !slices.Equal(failed, []string{"id-a1", "id-a2", "id-a3"}) {
		t.Fatalf("failures %v, want all three", failed)
	}
	l.wantApplied()
	l.wantHeld("A", 0)
}

func TestADrainThatRunsOutOfTimePausesWithATrigger(t *testing.T) {
	var now time.Time
	clock := &now
	l := newGroupLane(t, hold.KeepHeld, batch.Options{DeadlineMargin: time.Second, Now: func() time.Time { return *clock }})
	l.fail("a1")
	a := l.publish("A", "a1", "a2", "a3")
	l.run(a...)
	l.heal("a1")
	// The invocation's deadline is already within the margin after the head.
	now = time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(2*time.Second))
	defer cancel()
	l.p = batch.New(func(ctx context.Context, msg events.SQSMessage) error {
		err := l.handle(ctx, msg)
		*clock = clock.Add(1500 * time.Millisecond) // each record takes 1.5 s
		return err
	}, l.invalid, l.opts)
	if _, err := l.p.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{l.again(a[0])}}); err != nil {
		t.Fatal(err)
	}
	l.wantApplied("a1")
	if h := l.wantHeld("A", 2); h.State != hold.Draining {
		t.Fatalf("hold %+v, want draining", h)
	}
	trigger := l.take()
	if len(trigger) != 1 || !holdrecord.IsTrigger(trigger[0]) {
		t.Fatalf("sent %+v, want one drain trigger", trigger)
	}
	now = time.Now()
	l.run(trigger...)
	l.wantApplied("a1", "a2", "a3")
	l.wantFree("A")
}

func TestATriggerIsNeverHandedToTheHandler(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	if err := l.opts.Groups.Trigger(context.Background(), "A", "n"); err != nil {
		t.Fatal(err)
	}
	if failed := l.run(l.take()...); len(failed) != 0 {
		t.Fatalf("failures %v, want none", failed)
	}
	l.wantApplied()
	if n := len(l.invalid.Rejected()); n != 0 {
		t.Fatalf("%d records rejected, want none", n)
	}
}

func TestAForgedHoldMarkerOnlyReordersItsOwnGroup(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.fail("a1")
	l.run(l.publish("A", "a1", "a2")...)
	// A producer's record of group B claims to be A's head: it is B's.
	forged := l.publish("B", "b1")[0]
	forged.MessageAttributes = map[string]events.SQSMessageAttribute{hold.Attribute: {DataType: "String", StringValue: aws.String(`{"origin":"id-a1"}`)}}
	l.run(forged)
	l.wantApplied("b1")
	l.wantHeld("A", 1)
}

func TestHeldGroupsKeepTheirOrderAcrossManyBatches(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{Concurrency: 4})
	groups := []string{"A", "B", "C", "D"}
	var want = map[string][]string{}
	var heads []events.SQSMessage
	for _, g := range groups {
		first := strings.ToLower(g) + "0"
		l.fail(first)
		recs := l.publish(g, first)
		heads = append(heads, recs[0])
		l.run(recs...)
		want[g] = append(want[g], first)
	}
	for round := 1; round <= 12; round++ {
		var batchRecs []events.SQSMessage
		for _, g := range groups {
			body := fmt.Sprintf("%s%d", strings.ToLower(g), round)
			batchRecs = append(batchRecs, l.publish(g, body)...)
			want[g] = append(want[g], body)
		}
		l.run(batchRecs...)
	}
	for _, g := range groups {
		l.wantHeld(g, 12)
	}
	for i, g := range groups {
		l.heal(strings.ToLower(g) + "0")
		l.run(l.again(heads[i]))
		l.wantFree(g)
	}
	for _, g := range groups {
		var got []string
		for _, b := range l.applied {
			if strings.HasPrefix(b, strings.ToLower(g)) {
				got = append(got, b)
			}
		}
		if !slices.Equal(got, want[g]) {
			t.Errorf("group %s applied %v, want %v", g, got, want[g])
		}
	}
}

func TestARecordDeliveredAgainHoldsItsGroupBeforeItRuns(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	r := l.publish("A", "a1")[0]
	r.Attributes["ApproximateReceiveCount"] = "3" // its earlier deliveries died unfinished
	var during []hold.Hold
	l.p = batch.New(func(ctx context.Context, msg events.SQSMessage) error {
		h, _ := l.holdOf("A")
		during = append(during, h)
		return l.handle(ctx, msg)
	}, l.invalid, l.opts)
	if failed := l.run(r); len(failed) != 0 {
		t.Fatalf("failures %v, want none", failed)
	}
	if len(during) != 1 || during[0].Head != "id-a1" || during[0].State != hold.Held {
		t.Fatalf("the group's hold while the record ran: %+v, want held by it", during)
	}
	l.wantApplied("a1")
	l.wantFree("A")
}

func TestARecordWithNoTimeToStartHoldsItsGroup(t *testing.T) {
	now := time.Now()
	l := newGroupLane(t, hold.KeepHeld, batch.Options{DeadlineMargin: time.Minute, Now: func() time.Time { return now }})
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(30*time.Second))
	defer cancel()
	resp, err := l.p.Process(ctx, events.SQSEvent{Records: l.publish("A", "a1", "a2")})
	if err != nil || len(resp.BatchItemFailures) != 2 {
		t.Fatalf("Process = %+v, %v; want both records back in the source", resp, err)
	}
	if h := l.wantHeld("A", 0); h.Head != "id-a1" {
		t.Fatalf("hold %+v, want held by the first record", h)
	}
}

// A copy of the batch (a visibility timeout that ended) moved the group on
// first: its head applied, a held record failed and became the head. The
// slower copy's move of the hold must not drain past the new head.
func TestACopyOfAHeadDoesNotMoveTheGroupPastANewHead(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.fail("a1", "a2")
	a := l.publish("A", "a1", "a2", "a3")
	l.run(a...)
	l.heal("a1")
	copyOfHead := l.again(a[0])
	// The slower copy reads the hold (held by a1) and runs a1; meanwhile
	// the first copy applies a1, drains, and a2 becomes the head.
	l.p = batch.New(func(ctx context.Context, msg events.SQSMessage) error {
		if msg.Body == "a1" && len(l.applied) == 0 {
			fast := batch.New(l.handle, l.invalid, l.opts) // a second consumer of the lane
			if _, err := fast.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{copyOfHead}}); err != nil {
				t.Fatal(err)
			}
		}
		return l.handle(ctx, msg)
	}, l.invalid, l.opts)
	l.run(copyOfHead)
	if h := l.wantHeld("A", 1); h.Head != "id-a2" || h.State != hold.Held {
		t.Fatalf("hold %+v, want held by a2, the record that failed", h)
	}
	l.wantApplied("a1")
}

func TestAHeldCopyOfTheHeadIsNotAppliedAgain(t *testing.T) {
	l := newGroupLane(t, hold.KeepHeld, batch.Options{})
	l.fail("a1")
	a := l.publish("A", "a1", "a2")
	l.run(a...)
	// A copy of the head stored behind it (a Remove that failed after it
	// became the head leaves one so).
	stale := l.again(a[0])
	m, err := holdrecord.Held(stale)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.store.Memory.Append(context.Background(), "A", m, time.Now()); err != nil {
		t.Fatal(err)
	}
	l.heal("a1")
	var runs int
	l.p = batch.New(func(ctx context.Context, msg events.SQSMessage) error {
		if msg.Body == "a1" {
			runs++
		}
		return l.handle(ctx, msg)
	}, l.invalid, l.opts)
	l.run(l.again(a[0]))
	if runs != 1 {
		t.Fatalf("the head ran %d times, want once: its held copy is removed, not run", runs)
	}
	l.wantApplied("a1", "a2")
	l.wantFree("A")
}

// A head longer than hold.MaxHeadBody holds its group all the same, with
// no body kept; a head within it keeps its body.
func TestAHeadOverTheBodyBoundHoldsItsGroupWithoutItsBody(t *testing.T) {
	for _, n := range []int{hold.MaxHeadBody, hold.MaxHeadBody + 1} {
		l := newGroupLane(t, hold.KeepHeld, batch.Options{})
		big := strings.Repeat("x", n)
		l.fail(big)
		if failed := l.run(l.publish("A", big, "a2")...); len(failed) != 1 {
			t.Fatalf("failures %v, want the head alone", failed)
		}
		h := l.wantHeld("A", 1)
		if want := hold.HeadBodyOf(big); h.Head != "id-"+big || h.HeadBody != want || h.State != hold.Held {
			t.Fatalf("a head of %d bytes: hold with head %.10s..., a body of %d bytes, %s; want %d bytes of body, held", n, h.Head, len(h.HeadBody), h.State, len(want))
		}
	}
}
