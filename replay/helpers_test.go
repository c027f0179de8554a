package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/payload"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// harness is one route on the in-memory queue and ledger, on a manual clock
// that starts at the real time (so that context deadlines stay meaningful).
type harness struct {
	t       *testing.T
	clock   *replaytest.Clock
	q       *replaytest.MemoryQueue
	ledger  *replaytest.MemoryLedger
	route   replay.Route
	logs    bytes.Buffer
	metrics bytes.Buffer
	seq     int
	sleepMu sync.Mutex // see sleepUntil
}

func newHarness(t *testing.T, fifo bool, dlqAttrs map[string]string) *harness {
	t.Helper()
	h := &harness{t: t, clock: replaytest.NewClock(time.Now().UTC().Truncate(time.Second))}
	h.q = replaytest.NewMemoryQueue(h.clock.Now)
	h.ledger = replaytest.NewMemoryLedger(h.clock.Now)
	h.route = h.newRoute("orders", fifo, dlqAttrs)
	return h
}

func (h *harness) newRoute(name string, fifo bool, dlqAttrs map[string]string) replay.Route {
	h.t.Helper()
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	create := func(n string, attrs map[string]string) string {
		url, err := h.q.CreateQueue(n+suffix, attrs)
		if err != nil {
			h.t.Fatal(err)
		}
		return url
	}
	return replay.Route{Name: name, DLQURL: create(name+"-dlq", dlqAttrs), SourceURL: create(name, nil), ParkingURL: create(name+"-parking", nil),
		Key: "orderId", Records: true}
}

// orderKey is the business key of the harness's routes: the body's orderId.
var orderKey = func() payload.Key {
	k, err := payload.NewKey("orderId")
	if err != nil {
		panic(err)
	}
	return k
}()

// keyOf is the business key of a body on the harness's routes, "" for none.
func keyOf(body string) string {
	k, _ := orderKey.Of([]byte(body))
	return k
}

func (h *harness) options() replay.Options {
	return replay.Options{
		Logger:  slog.New(slog.NewJSONHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics: &h.metrics,
		Now:     h.clock.Now,
		Sleep:   h.clock.Sleep,
		// One worker in lockstep: every call in a fixed order, so that a
		// test can count and place them (workers_test.go runs several).
		Workers:  1,
		Lockstep: true,
	}
}

func (h *harness) engine(mod ...func(*replay.Options)) *replay.Engine {
	o := h.options()
	for _, m := range mod {
		m(&o)
	}
	return replay.New(h.q, h.ledger, o)
}

// run runs e on the harness's route (unless req names routes) and fails
// the test on an error.
func (h *harness) run(e *replay.Engine, req replay.Request) replay.Summary {
	h.t.Helper()
	s, err := h.tryRun(context.Background(), e, req)
	if err != nil {
		h.t.Fatalf("Run: %v", err)
	}
	return s
}

func (h *harness) tryRun(ctx context.Context, e *replay.Engine, req replay.Request) (replay.Summary, error) {
	if req.Routes == nil {
		req.Routes = []replay.Route{h.route}
	}
	return e.Run(ctx, req)
}

// msg describes a message put in the DLQ.
type msg struct {
	body  string
	group string
	attrs map[string]types.MessageAttributeValue
	meta  *replay.Metadata // sealed as the engine seals it, unless forged
	// forged leaves meta unsealed: a producer's well-formed copy of our
	// attribute, not the engine's.
	forged bool
}

// sealKey is the seal key of the harness's ledger.
func (h *harness) sealKey() []byte {
	h.t.Helper()
	key, err := replay.SealKey(context.Background(), h.ledger, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	return key
}

func order(id string) string {
	return fmt.Sprintf(`{"eventType":"order.created","version":1,"orderId":%q,"total":"99.80"}`, id)
}

// deadLetter puts m in the route's DLQ now and returns its DLQ message id.
func (h *harness) deadLetter(route replay.Route, m msg) string {
	h.t.Helper()
	attrs := m.attrs
	if m.meta != nil {
		meta := *m.meta
		if !m.forged {
			// As the engine writes it: a replay came through the route's
			// source queue, a parked message sits in the queue it reads.
			dest := route.SourceURL
			if meta.Reason != "" {
				dest = route.DLQURL
			}
			meta = meta.Sealed(h.sealKey(), m.body, dest)
		}
		var err error
		if attrs, err = envelope.Pack(attrs, replay.AttributeName, meta); err != nil {
			h.t.Fatal(err)
		}
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(route.DLQURL), MessageBody: aws.String(m.body), MessageAttributes: attrs}
	if route.FIFO() {
		h.seq++
		group := m.group
		if group == "" {
			group = "g"
		}
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(group), aws.String(fmt.Sprint(h.seq))
	}
	out, err := h.q.SendMessage(context.Background(), in)
	if err != nil {
		h.t.Fatal(err)
	}
	return aws.ToString(out.MessageId)
}

// orders puts n orders ORD-<prefix>-<i> in the DLQ.
func (h *harness) orders(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range n {
		ids[i] = h.deadLetter(h.route, msg{body: order(fmt.Sprintf("ORD-%s-%03d", prefix, i))})
	}
	return ids
}

// stored is a message as stored in a queue, with our metadata decoded.
type stored struct {
	body     string
	group    string
	meta     replay.Metadata
	hasMeta  bool
	producer map[string]types.MessageAttributeValue
	raw      types.Message
}

func (h *harness) stored(url string) []stored {
	h.t.Helper()
	var out []stored
	for _, m := range h.q.Messages(url) {
		meta, producer, found, err := replay.Read(m.MessageAttributes)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, stored{body: aws.ToString(m.Body), group: m.Attributes["MessageGroupId"], meta: meta, hasMeta: found, producer: producer, raw: m})
	}
	return out
}

func bodiesOf(ms []stored) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.body
	}
	return out
}

// depth returns the visible and in-flight messages of the queue at url.
func (h *harness) depth(url string) (visible, inFlight int) {
	h.t.Helper()
	out, err := h.q.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		h.t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	inFlight, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, inFlight
}

// counts compares the interesting counts of a route or total.
type counts struct {
	Examined, DeadLettered, Replayed, Recovered, Applied, Delayed, Blocked, Skipped, Deferred, Errors int
	Parked                                                                                            map[string]int
}

func countsOf(c replay.Counts) counts {
	p := maps.Clone(c.Parked)
	maps.DeleteFunc(p, func(_ string, v int) bool { return v == 0 })
	if len(p) == 0 {
		p = nil
	}
	return counts{c.Examined, c.DeadLettered, c.Replayed, c.Recovered, c.Applied, c.Delayed, c.Blocked, c.Skipped, c.Deferred, c.Errors, p}
}

func checkCounts(t *testing.T, got replay.Counts, want counts) {
	t.Helper()
	if g := countsOf(got); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("counts = %+v\n          want %+v", g, want)
	}
}

// logLines returns the JSON log lines with msg.
func (h *harness) logLines(message string) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for line := range strings.Lines(h.logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			h.t.Fatalf("log line is not JSON: %q", line)
		}
		if m["msg"] == message {
			out = append(out, m)
		}
	}
	return out
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// markEach marks each record with mark, concurrently: MarkBatch of the test
// ledgers that wrap Mark.
func markEach(ctx context.Context, mark func(context.Context, record.Message) (record.Message, bool, error), recs []record.Message) []record.Marked {
	out := make([]record.Marked, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Go(func() { out[i].Record, out[i].OK, out[i].Err = mark(ctx, r) })
	}
	wg.Wait()
	return out
}
