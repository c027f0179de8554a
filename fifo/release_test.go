package fifo_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/fifo/fifotest"
	"github.com/homingdlq/homing/replay"
)

// releaseLane is a FIFO lane's queues and parks, with records of groups
// parked by hand as the consumer parks them.
type releaseLane struct {
	t     *testing.T
	lane  *batchtest.Lane
	parks *fifotest.Memory
	r     *fifo.Releaser
}

func newReleaseLane(t *testing.T) *releaseLane {
	lane := batchtest.NewLane("orders.fifo", batchtest.LaneOptions{MaxReceiveCount: 100})
	parks := &fifotest.Memory{}
	return &releaseLane{t: t, lane: lane, parks: parks, r: lane.Releaser(parks)}
}

// park parks group (when it is not) and sends bodies to the parking
// queue behind it, each with a producer's attribute, as the consumer does.
func (l *releaseLane) park(group string, bodies ...string) {
	l.t.Helper()
	ctx := l.t.Context()
	if _, err := l.parks.Park(ctx, fifo.Park{Group: group, Reason: "invalid: bad-amount", Head: "head-" + group, Queue: "invalid"}); err != nil {
		l.t.Fatal(err)
	}
	for _, b := range bodies {
		attrs, err := fifo.ParkedAttributes(map[string]types.MessageAttributeValue{"body": str(b)}, "m-"+b, fifo.ReasonGroupParked, l.lane.Clock.Now())
		if err != nil {
			l.t.Fatal(err)
		}
		if _, err := l.lane.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.lane.Route.ParkingURL), MessageBody: aws.String(b),
			MessageAttributes: attrs, MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String("m-" + b)}); err != nil {
			l.t.Fatal(err)
		}
		if err := l.parks.Count(ctx, group, fifo.Count{Parked: 1}); err != nil {
			l.t.Fatal(err)
		}
	}
}

func (l *releaseLane) step(group string) fifo.Step {
	l.t.Helper()
	s, err := l.r.Release(l.t.Context(), group)
	if err != nil {
		l.t.Fatalf("Release %s: %v", group, err)
	}
	return s
}

func (l *releaseLane) parkOf(group string) (fifo.Park, bool) {
	l.t.Helper()
	parks, err := l.parks.Parked(l.t.Context(), []string{group})
	if err != nil {
		l.t.Fatal(err)
	}
	p, ok := parks[group]
	return p, ok
}

// apply counts the next n records sent back settled, as the consumer does.
func (l *releaseLane) apply(group string, n int) {
	l.t.Helper()
	p, _ := l.parkOf(group)
	if err := l.parks.Count(l.t.Context(), group, fifo.Count{Index: p.Applied + n}); err != nil {
		l.t.Fatal(err)
	}
}

func bodiesOf(msgs []types.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}

func seq(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s/%02d", prefix, i+1))
	}
	return out
}

func TestReleaseOfAGroupNotParked(t *testing.T) {
	l := newReleaseLane(t)
	if s := l.step("g"); s != (fifo.Step{Done: true}) {
		t.Fatalf("step = %+v, want Done", s)
	}
}

// A step sends the group's parked records (more than one receive's worth)
// back to the source in order, under their group, with the producer's
// attributes and the round the park now names, and deletes them from the
// parking queue; another group's parked records stay, visible.
func TestReleaseSendsTheGroupBackInOrder(t *testing.T) {
	l := newReleaseLane(t)
	g, h := seq("g", 12), seq("h", 3)
	l.park("h", h[0])
	l.park("g", g[:6]...)
	l.park("h", h[1:]...)
	l.park("g", g[6:]...)

	if s := l.step("g"); s.Done || s.Moved != 12 || s.Pending != 12 {
		t.Fatalf("step = %+v, want 12 moved and pending", s)
	}
	p, _ := l.parkOf("g")
	if p.Releasing == "" || p.Moved != 12 || p.Parked != 12 {
		t.Fatalf("park = %+v", p)
	}
	src := l.lane.Queue.Messages(l.lane.Route.SourceURL)
	if got := bodiesOf(src); !slices.Equal(got, g) {
		t.Fatalf("source holds %q, want %q", got, g)
	}
	for i, m := range src {
		_, producer, _, err := replay.Read(m.MessageAttributes)
		if err != nil || aws.ToString(producer["body"].StringValue) != aws.ToString(m.Body) || len(producer) != 1 {
			t.Errorf("%s sent back with %v, %v", aws.ToString(m.Body), producer, err)
		}
		if n := fifo.Released(m.MessageAttributes, aws.ToString(m.Body), p.Releasing); n != i+1 {
			t.Errorf("%s sent back as number %d of the park's round, want %d", aws.ToString(m.Body), n, i+1)
		}
		if m.Attributes["MessageGroupId"] != "g" {
			t.Errorf("%s sent back in group %q", aws.ToString(m.Body), m.Attributes["MessageGroupId"])
		}
	}
	out, err := l.lane.Queue.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(l.lane.Route.ParkingURL), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := bodiesOf(out.Messages); !slices.Equal(got, h) {
		t.Fatalf("the parking queue shows %q right after the step, want h's %q", got, h)
	}
}

// While the round's records are not all applied a step waits; once they
// are and the parking queue holds none of the group, it ends the park. A
// record parked meanwhile is sent back by a later step, in the round.
func TestReleaseWaitsForTheRoundThenEnds(t *testing.T) {
	l := newReleaseLane(t)
	l.park("g", "g/1", "g/2")
	l.step("g")
	first, _ := l.parkOf("g")
	l.apply("g", 1)
	if s := l.step("g"); s.Done || s.Moved != 0 || s.Pending != 1 {
		t.Fatalf("step with a record pending = %+v, want to wait", s)
	}
	l.apply("g", 1)
	l.park("g", "g/3") // arrived while the round was pending
	if s := l.step("g"); s.Done || s.Moved != 1 {
		t.Fatalf("step = %+v, want g/3 moved", s)
	}
	if p, _ := l.parkOf("g"); p.Releasing != first.Releasing {
		t.Fatalf("g/3 moved in round %q, the first was %q", p.Releasing, first.Releasing)
	}
	l.apply("g", 1)
	if s := l.step("g"); !s.Done {
		t.Fatalf("step = %+v, want Done", s)
	}
	if _, ok := l.parkOf("g"); ok {
		t.Fatal("the park is still there")
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.SourceURL)); !slices.Equal(got, []string{"g/1", "g/2", "g/3"}) {
		t.Fatalf("source holds %q", got)
	}
}

// A step that cannot send a record back fails, leaves it and the group's
// records after it in the parking queue, visible and uncounted, and the
// next step, at once, sends them: nothing is lost.
func TestReleaseThatCannotSendLosesNothing(t *testing.T) {
	l := newReleaseLane(t)
	l.park("g", "g/1", "g/2")
	l.lane.Queue.EntryFault = func(op, url string, m types.Message) error {
		if op == "SendMessageBatch" && url == l.lane.Route.SourceURL && aws.ToString(m.Body) == "g/2" {
			return errors.New("throttled")
		}
		return nil
	}
	if _, err := l.r.Release(t.Context(), "g"); err == nil {
		t.Fatal("a step that could not send returned no error")
	}
	l.lane.Queue.EntryFault = nil
	if p, _ := l.parkOf("g"); p.Moved != 1 {
		t.Fatalf("park = %+v, want g/1 moved", p)
	}
	l.apply("g", 1)
	if s := l.step("g"); s.Moved != 1 {
		t.Fatalf("step = %+v, want g/2 moved", s)
	}
	l.apply("g", 1)
	if s := l.step("g"); !s.Done {
		t.Fatalf("step = %+v, want Done", s)
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.SourceURL)); !slices.Equal(got, []string{"g/1", "g/2"}) {
		t.Fatalf("source holds %q", got)
	}
}

// A step that sent a record back but could not delete it from the parking
// queue fails; the next step sends it again, which SQS deduplicates, and
// counts it once: the release ends when it is applied.
func TestReleaseThatCannotDeleteCountsOnce(t *testing.T) {
	l := newReleaseLane(t)
	l.park("g", "g/1")
	failed := false
	l.lane.Queue.EntryFault = func(op, url string, _ types.Message) error {
		if op == "DeleteMessageBatch" && url == l.lane.Route.ParkingURL && !failed {
			failed = true
			return errors.New("throttled")
		}
		return nil
	}
	if _, err := l.r.Release(t.Context(), "g"); err == nil {
		t.Fatal("a step that could not delete returned no error")
	}
	if s := l.step("g"); s.Moved != 1 || s.Pending != 1 {
		t.Fatalf("step = %+v, want g/1 moved again and pending", s)
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.SourceURL)); !slices.Equal(got, []string{"g/1"}) {
		t.Fatalf("source holds %q, want g/1 once", got)
	}
	l.apply("g", 1)
	if s := l.step("g"); !s.Done {
		t.Fatalf("step = %+v, want Done", s)
	}
}

// A record sent back that parks again ends its round: the round's later
// records follow it to the group's ReparkGroup. No round begins until
// every record of the one that ended is settled; the next moves the
// ReparkGroup first, then what was parked under the group meanwhile, in
// new numbers.
func TestReleaseAfterARecordParkedAgain(t *testing.T) {
	l := newReleaseLane(t)
	ctx := t.Context()
	l.park("g", "g/1", "g/2", "g/3")
	if s := l.step("g"); s.Moved != 3 {
		t.Fatalf("step = %+v, want 3 moved", s)
	}
	first, _ := l.parkOf("g")
	l.apply("g", 1)
	if err := l.parks.Repark(ctx, "g", "g/2", fifo.ReasonDeliveredTooOften, "parking"); err != nil {
		t.Fatal(err)
	}
	reparked := func(body string, n int) {
		t.Helper()
		if _, err := l.lane.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.lane.Route.ParkingURL), MessageBody: aws.String(body),
			MessageGroupId: aws.String(fifo.ReparkGroup("g")), MessageDeduplicationId: aws.String("again-" + body)}); err != nil {
			t.Fatal(err)
		}
		if err := l.parks.Count(ctx, "g", fifo.Count{Parked: 1, Index: n}); err != nil {
			t.Fatal(err)
		}
	}
	reparked("g/2", 2)
	l.park("g", "g/4") // the producer's, parked behind
	if s := l.step("g"); s.Done || s.Moved != 0 || s.Pending != 1 {
		t.Fatalf("step with g/3 unsettled = %+v, want to wait", s)
	}
	reparked("g/3", 3)
	if s := l.step("g"); s.Done || s.Moved != 3 {
		t.Fatalf("step = %+v, want g/2, g/3 and g/4 moved", s)
	}
	p, _ := l.parkOf("g")
	if p.Releasing == "" || p.Releasing == first.Releasing {
		t.Fatalf("park = %+v, want a new round", p)
	}
	src := l.lane.Queue.Messages(l.lane.Route.SourceURL)
	if got := bodiesOf(src); !slices.Equal(got, []string{"g/1", "g/2", "g/3", "g/2", "g/3", "g/4"}) {
		t.Fatalf("source holds %q", got)
	}
	for i, m := range src[3:] {
		if n := fifo.Released(m.MessageAttributes, aws.ToString(m.Body), p.Releasing); n != 4+i {
			t.Errorf("%s is number %d of the new round, want %d", aws.ToString(m.Body), n, 4+i)
		}
	}
	l.apply("g", 3)
	if s := l.step("g"); !s.Done {
		t.Fatalf("step = %+v, want Done", s)
	}
}
