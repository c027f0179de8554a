package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/fifo/fifotest"
	"github.com/homingdlq/homing/internal/parking"
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
		attrs, err := parking.Attributes(map[string]types.MessageAttributeValue{"body": {DataType: aws.String("String"), StringValue: aws.String(b)}}, "m-"+b, fifo.ReasonGroupParked, l.lane.Clock.Now())
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

// stepFailingToSend takes a step of group's release that cannot send the
// copy of body back: it must fail.
func (l *releaseLane) stepFailingToSend(group, body string) {
	l.t.Helper()
	l.lane.Queue.EntryFault = func(op, url string, m types.Message) error {
		if op == "SendMessageBatch" && url == l.lane.Route.SourceURL && aws.ToString(m.Body) == body {
			return errors.New("throttled")
		}
		return nil
	}
	defer func() { l.lane.Queue.EntryFault = nil }()
	if _, err := l.r.Release(l.t.Context(), group); err == nil {
		l.t.Fatal("a step that could not send returned no error")
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

// settle counts the round's next n copies settled, as the consumer does
// when it applies them.
func (l *releaseLane) settle(group string, n int) {
	l.t.Helper()
	p, _ := l.parkOf(group)
	for i := range n {
		if err := l.parks.Count(l.t.Context(), group, fifo.Count{Round: p.Releasing, Index: p.Settled + i + 1}); err != nil {
			l.t.Fatal(err)
		}
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

// A step sends the group's first ten parked records back to the source as
// a round of numbered copies, in order, under their group, with the
// producer's attributes; the originals stay in the parking queue, visible,
// with another group's.
func TestReleaseSendsARoundOfTenInOrder(t *testing.T) {
	l := newReleaseLane(t)
	g, h := seq("g", 12), seq("h", 3)
	l.park("g", g...)
	l.park("h", h...)

	if s := l.step("g"); s.Done || s.Moved != 10 || s.Pending != 10 {
		t.Fatalf("step = %+v, want 10 moved and pending", s)
	}
	p, _ := l.parkOf("g")
	if p.Releasing == "" || p.Sent != 10 || len(p.Batch) != 10 || p.Moved != 0 || p.Parked != 12 {
		t.Fatalf("park = %+v", p)
	}
	src := l.lane.Queue.Messages(l.lane.Route.SourceURL)
	if got := bodiesOf(src); !slices.Equal(got, g[:10]) {
		t.Fatalf("source holds %q, want %q", got, g[:10])
	}
	for i, m := range src {
		_, producer, _, err := replay.Read(m.MessageAttributes)
		if err != nil || aws.ToString(producer["body"].StringValue) != aws.ToString(m.Body) || len(producer) != 1 {
			t.Errorf("%s sent back with %v, %v", aws.ToString(m.Body), producer, err)
		}
		if n := parking.Released(m.MessageAttributes, aws.ToString(m.Body), p.Releasing); n != i+1 {
			t.Errorf("%s sent back as number %d of the park's round, want %d", aws.ToString(m.Body), n, i+1)
		}
		if m.Attributes["MessageGroupId"] != "g" {
			t.Errorf("%s sent back in group %q", aws.ToString(m.Body), m.Attributes["MessageGroupId"])
		}
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.ParkingURL)); len(got) != 15 {
		t.Fatalf("the parking queue holds %q, want all 15 records", got)
	}
	var shown []string
	for range 2 {
		out, err := l.lane.Queue.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(l.lane.Route.ParkingURL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		shown = append(shown, bodiesOf(out.Messages)...)
	}
	if want := append(g[:10:10], h...); !slices.Equal(shown, want) {
		t.Fatalf("the parking queue shows %q right after the step, want %q", shown, want)
	}
}

// While the round's copies are not all settled a step waits; once they
// are, it takes their records out of the parking queue and begins the next
// round with the group's records left, those parked meanwhile included;
// when none is left it ends the park.
func TestReleaseWaitsForTheRoundThenGoesOn(t *testing.T) {
	l := newReleaseLane(t)
	l.park("g", seq("g", 12)...)
	l.step("g")
	first, _ := l.parkOf("g")
	l.settle("g", 4)
	if s := l.step("g"); s.Done || s.Moved != 0 || s.Pending != 6 {
		t.Fatalf("step with copies pending = %+v, want to wait", s)
	}
	l.settle("g", 6)
	l.park("g", "g/13") // arrived while the round was pending
	if s := l.step("g"); s.Done || s.Moved != 3 {
		t.Fatalf("step = %+v, want g/11..g/13 moved", s)
	}
	p, _ := l.parkOf("g")
	if p.Releasing == first.Releasing || p.Moved != 10 || p.Waiting() != 3 {
		t.Fatalf("park = %+v, want a second round after 10 moved", p)
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.ParkingURL)); !slices.Equal(got, []string{"g/11", "g/12", "g/13"}) {
		t.Fatalf("the parking queue holds %q", got)
	}
	l.settle("g", 3)
	if s := l.step("g"); !s.Done {
		t.Fatalf("step = %+v, want Done", s)
	}
	if _, ok := l.parkOf("g"); ok {
		t.Fatal("the park is still there")
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.SourceURL)); !slices.Equal(got, seq("g", 13)) {
		t.Fatalf("source holds %q", got)
	}
	if got := l.lane.Queue.Messages(l.lane.Route.ParkingURL); len(got) != 0 {
		t.Fatalf("the parking queue holds %q", bodiesOf(got))
	}
}

// A step that cannot send a copy fails, leaves every record in the parking
// queue, visible, and the next step, at once, sends the copies it did not:
// nothing is lost, nothing sent twice.
func TestReleaseThatCannotSendLosesNothing(t *testing.T) {
	l := newReleaseLane(t)
	l.park("g", "g/1", "g/2")
	l.stepFailingToSend("g", "g/2")
	if p, _ := l.parkOf("g"); p.Sent != 1 || len(p.Batch) != 2 {
		t.Fatalf("park = %+v, want g/1 sent of 2", p)
	}
	if s := l.step("g"); s.Moved != 1 || s.Pending != 2 {
		t.Fatalf("step = %+v, want g/2 moved", s)
	}
	l.settle("g", 2)
	if s := l.step("g"); !s.Done {
		t.Fatalf("step = %+v, want Done", s)
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.SourceURL)); !slices.Equal(got, []string{"g/1", "g/2"}) {
		t.Fatalf("source holds %q", got)
	}
}

// A step that cannot take a settled record out of the parking queue fails;
// the next step takes it out, and the record is sent back once.
func TestReleaseThatCannotDeleteSendsOnce(t *testing.T) {
	l := newReleaseLane(t)
	l.park("g", "g/1")
	l.step("g")
	l.settle("g", 1)
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
	if s := l.step("g"); !s.Done || s.Moved != 0 {
		t.Fatalf("step = %+v, want Done with nothing sent again", s)
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.SourceURL)); !slices.Equal(got, []string{"g/1"}) {
		t.Fatalf("source holds %q, want g/1 once", got)
	}
}

// A copy that parks the group again stops the round: the records before it
// leave the parking queue, it and those after it stay (for an invalid
// copy, those after it), and the release is over, the park naming the new
// head. The operator's next release begins a new round with them.
func TestReleaseStopsWhereACopyParksAgain(t *testing.T) {
	for _, tt := range []struct {
		queue string
		stop  int
		left  []string
	}{
		{"parking", 2, []string{"g/2", "g/3", "g/4"}},
		{"invalid", 3, []string{"g/3", "g/4"}},
	} {
		t.Run(tt.queue, func(t *testing.T) {
			l := newReleaseLane(t)
			ctx := t.Context()
			l.park("g", "g/1", "g/2", "g/3", "g/4")
			l.step("g")
			first, _ := l.parkOf("g")
			l.settle("g", 1)
			if err := l.parks.Count(ctx, "g", fifo.Count{Round: first.Releasing, Index: 2, Stop: tt.stop, Head: "copy-g/2", Reason: "again", Queue: tt.queue}); err != nil {
				t.Fatal(err)
			}
			if s := l.step("g"); s.Done || s.Stopped || s.Pending != 2 {
				t.Fatalf("step with copies 3 and 4 unsettled = %+v, want to wait", s)
			}
			l.settle("g", 2) // dropped by the consumer
			if s := l.step("g"); !s.Stopped || s.Moved != 0 {
				t.Fatalf("step = %+v, want Stopped", s)
			}
			p, _ := l.parkOf("g")
			if p.Releasing != "" || p.Head != "copy-g/2" || p.Queue != tt.queue || p.Waiting() != len(tt.left) {
				t.Fatalf("park = %+v, want behind copy-g/2 with %d waiting", p, len(tt.left))
			}
			if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.ParkingURL)); !slices.Equal(got, tt.left) {
				t.Fatalf("the parking queue holds %q, want %q", got, tt.left)
			}
			if s := l.step("g"); s.Moved != len(tt.left) {
				t.Fatalf("the next release's step = %+v, want %d moved", s, len(tt.left))
			}
			l.settle("g", len(tt.left))
			if s := l.step("g"); !s.Done {
				t.Fatalf("step = %+v, want Done", s)
			}
			want := append([]string{"g/1", "g/2", "g/3", "g/4"}, tt.left...)
			if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.SourceURL)); !slices.Equal(got, want) {
				t.Fatalf("source holds %q, want %q", got, want)
			}
		})
	}
}

// A record of the round deleted from the parking queue by hand before its
// copy was sent ends the round with the copies sent; nothing else is
// skipped.
func TestReleaseOfARecordGoneByHand(t *testing.T) {
	l := newReleaseLane(t)
	l.park("g", "g/1", "g/2", "g/3")
	l.stepFailingToSend("g", "g/2")
	out, err := l.lane.Queue.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(l.lane.Route.ParkingURL), MaxNumberOfMessages: 2})
	if err != nil || len(out.Messages) != 2 || aws.ToString(out.Messages[1].Body) != "g/2" {
		t.Fatalf("receive = %v, %v", out, err)
	}
	if _, err := l.lane.Queue.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(l.lane.Route.ParkingURL),
		Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("g2"), ReceiptHandle: out.Messages[1].ReceiptHandle}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.lane.Queue.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(l.lane.Route.ParkingURL),
		ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	l.settle("g", 1)
	// The park counts a record more than the releases take out: it ends
	// once the group's scans have found nothing for longer than an
	// invocation lives, and not before.
	var ended time.Duration
	for at := time.Duration(0); at < time.Hour; at += 2 * time.Minute {
		s := l.step("g")
		if s.Done {
			ended = at
			break
		}
		l.settle("g", s.Pending)
		l.lane.Clock.Advance(2 * time.Minute)
	}
	if ended < 15*time.Minute {
		t.Errorf("the park ended %s after the release began, before an invocation could have sent g/2 to the parking queue", ended)
	}
	if p, ok := l.parkOf("g"); ok {
		t.Fatalf("park = %+v, want it ended", p)
	}
	if got := bodiesOf(l.lane.Queue.Messages(l.lane.Route.SourceURL)); !slices.Equal(got, []string{"g/1", "g/3"}) {
		t.Fatalf("source holds %q, want g/1 and g/3", got)
	}
}

// failingSent is a park store whose next Sent of copy n fails: the copy
// went to the source, the park does not know.
type failingSent struct {
	*fifotest.Memory
	n int
}

func (s *failingSent) Sent(ctx context.Context, group, round string, n int) error {
	if n == s.n {
		s.n = 0
		return errors.New("ProvisionedThroughputExceededException")
	}
	return s.Memory.Sent(ctx, group, round, n)
}

// firstOnly is a parking queue whose receives return one message, as SQS
// may return fewer than it has.
type firstOnly struct{ fifo.ReleaseQueue }

func (q firstOnly) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := q.ReleaseQueue.ReceiveMessage(ctx, in, optFns...)
	if err == nil && len(out.Messages) > 1 {
		for _, m := range out.Messages[1:] {
			if _, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: in.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
				return nil, err
			}
		}
		out.Messages = out.Messages[:1]
	}
	return out, err
}

// A step that sent a copy but could not count it, then a scan that sees
// only the round's first record: the round does not end while that copy
// is in the source (the consumer would take it for settled in an ended
// round and never park it); it is sent again, and the release goes on.
// Sim seed 1981.
func TestReleaseThatCannotCountASendEndsNoRoundEarly(t *testing.T) {
	l := newReleaseLane(t)
	l.park("g", "g/1", "g/2", "g/3")
	store := &failingSent{Memory: l.parks, n: 2}
	r := l.lane.Releaser(store)
	if _, err := r.Release(t.Context(), "g"); err == nil {
		t.Fatal("a step that could not count a send returned no error")
	}
	round, _ := l.parkOf("g")
	if round.Sent != 1 || len(round.Batch) != 3 {
		t.Fatalf("park = %+v, want 1 sent of 3", round)
	}
	l.settle("g", 1)
	l.lane.Clock.Advance(6 * time.Minute) // past SQS's deduplication window
	partial := l.lane.Releaser(l.parks)
	partial.Queue = firstOnly{partial.Queue}
	if _, err := partial.Release(t.Context(), "g"); err != nil {
		t.Fatal(err)
	}
	if p, _ := l.parkOf("g"); p.Releasing != round.Releasing {
		t.Fatalf("park = %+v: the round ended with copy 2 in the source, uncounted", p)
	}
	if s := l.step("g"); s.Moved != 2 {
		t.Fatalf("step = %+v, want copies 2 and 3 sent", s)
	}
	p, _ := l.parkOf("g")
	if p.Releasing != round.Releasing || p.Sent != 3 {
		t.Fatalf("park = %+v, want round %s with 3 sent", p, round.Releasing)
	}
	var copies []int
	for _, m := range l.lane.Queue.Messages(l.lane.Route.SourceURL) {
		copies = append(copies, parking.Released(m.MessageAttributes, aws.ToString(m.Body), round.Releasing))
	}
	if !slices.Equal(copies, []int{1, 2, 2, 3}) {
		t.Fatalf("the source holds copies %v of the round, want 1, 2 (uncounted), 2 (sent again) and 3", copies)
	}
	l.settle("g", 2)
	if s := l.step("g"); !s.Done {
		t.Fatalf("step = %+v, want Done", s)
	}
}
