package archive_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/archive/archivetest"
	"github.com/homingdlq/homing/internal/crash"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

const (
	bucket = "archive"
	day    = 24 * time.Hour
	// retention is the parking and invalid queues' retention: SQS's most.
	retention = 14 * day
)

var start = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// fixture is a lane's parking and invalid queues in memory, with an
// archive bucket, on a clock of the test's.
type fixture struct {
	clock   *replaytest.Clock
	q       *replaytest.MemoryQueue
	s3      *archivetest.MemoryS3
	store   *archive.Store
	parking archive.Queue
	invalid archive.Queue
	seal    []byte // the ledger's seal key, that seals what park sends
}

func newFixture(t *testing.T, fifo bool) *fixture {
	t.Helper()
	f := &fixture{clock: replaytest.NewClock(start), s3: archivetest.NewMemoryS3()}
	f.q = replaytest.NewMemoryQueue(f.clock.Now)
	f.s3.AddBucket(bucket)
	f.store = archive.NewStore(f.s3, bucket)
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	attrs := map[string]string{"MessageRetentionPeriod": strconv.Itoa(int(retention / time.Second))}
	for _, q := range []*archive.Queue{{Role: archive.Parking}, {Role: archive.Invalid}} {
		url, err := f.q.CreateQueue("orders-"+q.Role+suffix, attrs)
		if err != nil {
			t.Fatal(err)
		}
		q.URL = url
		if q.Role == archive.Parking {
			f.parking = *q
		} else {
			f.invalid = *q
		}
	}
	ledger := replaytest.NewMemoryLedger(f.clock.Now)
	key, err := replay.SealKey(context.Background(), ledger, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.seal = key
	if f.parking, err = archive.Parked(context.Background(), ledger, f.parking.URL); err != nil {
		t.Fatal(err)
	}
	return f
}

// archiver is the fixture's archiver over q (nil: the fixture's queue).
func (f *fixture) archiver(t *testing.T, q archive.Receiver, mod func(*archive.Options)) *archive.Archiver {
	t.Helper()
	if q == nil {
		q = f.q
	}
	o := archive.Options{Now: f.clock.Now}
	if mod != nil {
		mod(&o)
	}
	a, err := archive.New(q, f.store, "orders", "orderId", o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// park sends a parked order to the parking queue, as the replay parks it:
// its metadata sealed for the parking queue.
func (f *fixture) park(t *testing.T, id string, group string) {
	t.Helper()
	body := `{"orderId":"` + id + `"}`
	meta := replay.Metadata{ReplayCount: 3, OriginalMessageID: "orig-" + id, Reason: "replay-exhausted", ParkedAt: f.clock.Now()}
	attrs, err := replay.Attributes(map[string]types.MessageAttributeValue{
		"source": {DataType: aws.String("String"), StringValue: aws.String("checkout")},
	}, meta.Sealed(f.seal, body, f.parking.URL))
	if err != nil {
		t.Fatal(err)
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(f.parking.URL), MessageBody: aws.String(body), MessageAttributes: attrs}
	if group != "" {
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(id)
	}
	if _, err := f.q.SendMessage(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

// reject sends an invalid order to the invalid queue with its verdict.
func (f *fixture) reject(t *testing.T, id string) {
	t.Helper()
	attrs, err := invalid.Stamp(nil, invalid.Metadata{Reason: "missing-tax-id", Detail: "no tax id", MessageID: "orig-" + id, Consumer: "invoice", At: f.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.invalid.URL), MessageBody: aws.String(`{"orderId":"` + id + `"}`), MessageAttributes: attrs}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) run(t *testing.T, a *archive.Archiver) []archive.Counts {
	t.Helper()
	c, err := a.Run(context.Background(), []archive.Queue{f.parking, f.invalid})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// objects returns the archived objects (not the index), in key order.
func (f *fixture) objects(t *testing.T) []archive.Object {
	t.Helper()
	var out []archive.Object
	for _, k := range f.s3.Keys(bucket) {
		if _, index := archive.ObjectOf(k); index {
			continue
		}
		o, err := f.store.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func ids(objects []archive.Object) []string {
	out := make([]string, len(objects))
	for i, o := range objects {
		out[i] = o.Key
	}
	return out
}

// Before its retention less the margin nothing is archived; after it,
// every message is written, with its reasons, and deleted from its queue.
func TestArchivesNearRetention(t *testing.T) {
	f := newFixture(t, false)
	f.park(t, "o-1", "")
	f.reject(t, "o-2")
	a := f.archiver(t, nil, nil)

	f.clock.Advance(retention - archive.DefaultMargin - time.Minute)
	c := f.run(t, a)
	if c[0].Archived+c[1].Archived != 0 || c[0].Examined != 1 || c[1].Examined != 1 {
		t.Fatalf("before the margin: %+v", c)
	}
	if got := f.s3.Keys(bucket); len(got) != 0 {
		t.Fatalf("archived before the margin: %q", got)
	}
	// What a run leaves is visible again once it has looked.
	for _, url := range []string{f.parking.URL, f.invalid.URL} {
		out, err := f.q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 0})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("%s after the run: %d visible (%v), want 1", url, len(out.Messages), err)
		}
	}

	f.clock.Advance(2 * time.Minute)
	c = f.run(t, a)
	if c[0].Archived != 1 || c[1].Archived != 1 || c[0].Failed+c[1].Failed != 0 {
		t.Fatalf("after the margin: %+v", c)
	}
	for _, url := range []string{f.parking.URL, f.invalid.URL} {
		if n := len(f.q.Messages(url)); n != 0 {
			t.Fatalf("%d left in %s", n, url)
		}
	}
	objs := f.objects(t)
	if len(objs) != 2 {
		t.Fatalf("%d objects, want 2", len(objs))
	}
	byQueue := map[string]archive.Object{}
	for _, o := range objs {
		byQueue[o.Queue] = o
	}
	p, i := byQueue[archive.Parking], byQueue[archive.Invalid]
	switch {
	case p.Reason != "replay-exhausted" || p.Replay == nil || p.Replay.OriginalMessageID != "orig-o-1" || p.Key != "o-1":
		t.Fatalf("parked object %+v", p)
	case p.Attributes["source"].StringValue == nil || *p.Attributes["source"].StringValue != "checkout":
		t.Fatalf("parked object lost the producer's attribute: %+v", p.Attributes)
	case i.Reason != "missing-tax-id" || i.Invalid == nil || i.Invalid.MessageID != "orig-o-2" || i.OriginalMessageID() != "orig-o-2":
		t.Fatalf("invalid object %+v", i)
	case !p.SentAt.Equal(start) || !p.ArchivedAt.Equal(f.clock.Now()):
		t.Fatalf("sent %v archived %v", p.SentAt, p.ArchivedAt)
	case !strings.HasPrefix(archive.ObjectKey(p), "orders/parking/2026/12/03/"):
		t.Fatalf("key %s", archive.ObjectKey(p))
	}
	var byKey []string
	if err := f.store.List(context.Background(), archive.KeyPrefix("orders", "o-2"), func(k string) bool { byKey = append(byKey, k); return true }); err != nil {
		t.Fatal(err)
	}
	if len(byKey) != 1 {
		t.Fatalf("by key o-2: %q", byKey)
	}
}

func TestOnArrival(t *testing.T) {
	f := newFixture(t, false)
	for i := range 25 {
		f.park(t, fmt.Sprintf("o-%02d", i), "")
	}
	c := f.run(t, f.archiver(t, nil, func(o *archive.Options) { o.OnArrival = true }))
	if c[0].Archived != 25 || len(f.q.Messages(f.parking.URL)) != 0 || len(f.objects(t)) != 25 {
		t.Fatalf("on arrival: %+v, %d left", c, len(f.q.Messages(f.parking.URL)))
	}
}

// A parked FIFO group is archived in its order, and its keys list in it.
func TestFIFOGroupInOrder(t *testing.T) {
	f := newFixture(t, true)
	var want []string
	for i := range 23 {
		id := fmt.Sprintf("o-%02d", 22-i) // ids against the order: keys must not sort by id
		want = append(want, id)
		f.park(t, id, "g")
		f.clock.Advance(time.Millisecond)
	}
	c := f.run(t, f.archiver(t, nil, func(o *archive.Options) { o.OnArrival = true }))
	if c[0].Archived != 23 {
		t.Fatalf("%+v", c)
	}
	if got := ids(f.objects(t)); !slices.Equal(got, want) {
		t.Fatalf("keys list as %q, want %q", got, want)
	}
}

// A FIFO group whose write fails part-way keeps the rest in its queue,
// in order, and the next run archives them.
func TestFIFOWriteFailureKeepsTheGroup(t *testing.T) {
	f := newFixture(t, true)
	for i := range 5 {
		f.park(t, fmt.Sprintf("o-%d", i), "g")
	}
	// Fail o-2's object (not only its index): its key ends in its message id.
	var o2 string
	for _, m := range f.q.Messages(f.parking.URL) {
		if strings.Contains(aws.ToString(m.Body), "o-2") {
			o2 = aws.ToString(m.MessageId)
		}
	}
	f.s3.PutFault = func(key string) error {
		if strings.HasSuffix(key, "-"+o2+".json") && !strings.Contains(key, "/key/") {
			return errors.New("slow down")
		}
		return nil
	}
	a := f.archiver(t, nil, func(o *archive.Options) { o.OnArrival = true })
	c := f.run(t, a)
	if c[0].Archived != 2 || c[0].Failed != 1 {
		t.Fatalf("%+v, want 2 archived, 1 failed", c[0])
	}
	left := f.q.Messages(f.parking.URL)
	if len(left) != 3 || !strings.Contains(aws.ToString(left[0].Body), "o-2") {
		t.Fatalf("left %d, first %s", len(left), aws.ToString(left[0].Body))
	}
	f.s3.PutFault = nil
	f.run(t, a) // at once: the run made what it left visible again
	if got := ids(f.objects(t)); !slices.Equal(got, []string{"o-0", "o-1", "o-2", "o-3", "o-4"}) || len(f.q.Messages(f.parking.URL)) != 0 {
		t.Fatalf("after the retry: %q, %d left", got, len(f.q.Messages(f.parking.URL)))
	}
}

// A crash between the write and the delete loses nothing: the next run
// writes the same objects again (a second version) and deletes them.
func TestCrashBetweenWriteAndDelete(t *testing.T) {
	f := newFixture(t, false)
	for i := range 12 {
		f.park(t, fmt.Sprintf("o-%02d", i), "")
	}
	cr := crash.New(crash.AtFirst("DeleteMessageBatch"))
	_, err := f.archiver(t, cr.Queue(f.q), func(o *archive.Options) { o.OnArrival = true }).Run(context.Background(), []archive.Queue{f.parking})
	if !cr.Crashed() {
		t.Fatalf("did not crash: %v", err)
	}
	if n := len(f.q.Messages(f.parking.URL)); n != 12 {
		t.Fatalf("%d in the queue after the crash, want 12", n)
	}
	written := len(f.objects(t))
	if written == 0 {
		t.Fatal("nothing written before the crash")
	}

	f.clock.Advance(archive.DefaultBudget) // the crashed run released nothing
	c := f.run(t, f.archiver(t, nil, func(o *archive.Options) { o.OnArrival = true }))
	if c[0].Archived != 12 || len(f.q.Messages(f.parking.URL)) != 0 {
		t.Fatalf("recovery %+v, %d left", c[0], len(f.q.Messages(f.parking.URL)))
	}
	objs := f.objects(t)
	if len(objs) != 12 {
		t.Fatalf("%d objects, want 12", len(objs))
	}
	twice := 0
	for _, o := range objs {
		if f.s3.Versions(bucket, archive.ObjectKey(o)) == 2 {
			twice++
		}
	}
	if twice != written {
		t.Fatalf("%d objects written twice, want the %d the crashed run wrote", twice, written)
	}
}

// A failure record of the original message rides in its object.
func TestFailureRecord(t *testing.T) {
	f := newFixture(t, false)
	f.park(t, "o-1", "")
	at := start.Add(-time.Hour)
	records := failureLog{"orig-o-1": {MessageID: "orig-o-1", Class: "tax-service-503", Message: "unavailable", Failures: 5, FirstAt: at, LastAt: at}}
	f.run(t, f.archiver(t, nil, func(o *archive.Options) { o.OnArrival = true; o.Failures = records }))
	objs := f.objects(t)
	if len(objs) != 1 || objs[0].Failure == nil || objs[0].Failure.Class != "tax-service-503" || objs[0].Failure.Failures != 5 {
		t.Fatalf("%+v", objs)
	}
}

type failureLog map[string]batch.Failure

func (l failureLog) Failures(_ context.Context, ids []string) (map[string]batch.Failure, error) {
	out := map[string]batch.Failure{}
	for _, id := range ids {
		if f, ok := l[id]; ok {
			out[id] = f
		}
	}
	return out, nil
}

// Over 20 simulated days, with a message parked and one declared invalid
// every 6 hours and a run every hour, every message is in exactly one
// place at the end: its queue or the archive. Without the archive, SQS's
// retention drops the oldest.
func TestRetentionOverTwentyDays(t *testing.T) {
	for _, archiving := range []bool{true, false} {
		t.Run(fmt.Sprintf("archiving=%v", archiving), func(t *testing.T) {
			f := newFixture(t, false)
			a := f.archiver(t, nil, nil)
			sent := 0
			for h := range 20 * 24 {
				if h%6 == 0 {
					f.park(t, fmt.Sprintf("p-%03d", sent), "")
					f.reject(t, fmt.Sprintf("i-%03d", sent))
					sent++
				}
				if archiving {
					f.run(t, a)
				}
				f.clock.Advance(time.Hour)
			}
			inQueues := len(f.q.Messages(f.parking.URL)) + len(f.q.Messages(f.invalid.URL))
			objs := f.objects(t)
			seen := map[string]int{}
			for _, o := range objs {
				seen[o.Key]++
			}
			for _, m := range append(f.q.Messages(f.parking.URL), f.q.Messages(f.invalid.URL)...) {
				seen[strings.TrimSuffix(strings.TrimPrefix(aws.ToString(m.Body), `{"orderId":"`), `"}`)]++
			}
			lost := 2*sent - len(seen)
			for k, n := range seen {
				if n != 1 {
					t.Fatalf("%s in %d places", k, n)
				}
			}
			switch {
			case archiving && lost != 0:
				t.Fatalf("%d of %d lost (%d archived, %d in the queues)", lost, 2*sent, len(objs), inQueues)
			case archiving && len(objs) == 0:
				t.Fatal("nothing archived in 20 days")
			case !archiving && lost == 0:
				t.Fatal("nothing expired without the archive: the model of retention is not exercised")
			}
		})
	}
}

// slowS3 answers no PutObject before its caller gives up.
type slowS3 struct{ archive.S3 }

func (s slowS3) PutObject(ctx context.Context, _ *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A budget that runs out while objects are written is no archive failure:
// nothing was deleted, everything is visible again for the next run.
func TestBudgetEndIsNoFailure(t *testing.T) {
	f := newFixture(t, false)
	for i := range 3 {
		f.park(t, fmt.Sprintf("o-%d", i), "")
	}
	a, err := archive.New(f.q, archive.NewStore(slowS3{f.s3}, bucket), "orders", "orderId", archive.Options{OnArrival: true, Budget: 50 * time.Millisecond, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Run(context.Background(), []archive.Queue{f.parking})
	if err != nil || c[0].Failed != 0 || c[0].Archived != 0 {
		t.Fatalf("%+v, %v; want nothing archived, nothing failed", c, err)
	}
	out, err := f.q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.parking.URL), MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("%d visible after the run (%v), want 3", len(out.Messages), err)
	}
}

// On a lane keyed by payment.ref, a parked message whose producer wrote
// our metadata and a verdict itself is archived with them as attributes
// only: no reason, no replay count, and no failure record of the original
// id it claims.
func TestForgedMetadataIsNotOurs(t *testing.T) {
	f := newFixture(t, false)
	body := `{"payment":{"ref":"PAY-1"}}`
	forged, err := replay.Attributes(nil, replay.Metadata{ReplayCount: 9, OriginalMessageID: "victim", Reason: "replay-exhausted"})
	if err != nil {
		t.Fatal(err)
	}
	forged, err = invalid.Stamp(forged, invalid.Metadata{Reason: "forged-verdict", MessageID: "victim", Consumer: "payments", At: start})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.parking.URL), MessageBody: aws.String(body), MessageAttributes: forged}); err != nil {
		t.Fatal(err)
	}
	records := failureLog{"victim": {MessageID: "victim", Class: "ledger-frozen", Failures: 5, FirstAt: start, LastAt: start}}
	a, err := archive.New(f.q, f.store, "payments", "payment.ref", archive.Options{Now: f.clock.Now, OnArrival: true, Failures: records})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), []archive.Queue{f.parking}); err != nil {
		t.Fatal(err)
	}
	objs := f.objects(t)
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	o := objs[0]
	if o.Key != "PAY-1" || o.Replay != nil || o.Invalid != nil || o.Reason != "" || o.Failure != nil || o.OriginalMessageID() != o.MessageID {
		t.Fatalf("forged metadata taken as ours: key %q reason %q replay %+v invalid %+v failure %+v original %q", o.Key, o.Reason, o.Replay, o.Invalid, o.Failure, o.OriginalMessageID())
	}
	if len(o.Attributes) != 2 {
		t.Fatalf("attributes %v: want both forged attributes kept as data", o.Attributes)
	}
}
