package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/consumer"
	"github.com/homingdlq/homing/invalid"
)

// FuzzHandleEvent feeds arbitrary invocation payloads through the Lambda
// handler. Properties:
//   - an undecodable payload is an error; a decodable SQS event never is;
//   - the response is a JSON list of failures naming only records of the
//     event;
//   - every publication to the invalid queue is of a record of the event, its
//     body unchanged, and its verdict reads back (invalid.Read);
//   - nothing waits on real time: the clock is manual, and the receiver's
//     retries of a completion (orders whose id ends in -NOREC never get
//     theirs recorded: the store takes a second of the clock and fails)
//     sleep on it, so an execution costs what its input costs. A receiver
//     that slept on the real clock would not be seen sleeping here.
//
// The seeds are the sample SQS events in events/, read from there so that
// they never drift from the golden tests' (plain go test replays them, and
// the corpus in testdata/fuzz/FuzzHandleEvent).
func FuzzHandleEvent(f *testing.F) {
	for _, file := range sqsEventFiles() {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 64<<10 { // batch-invalid.json is one 256 KiB body: too slow to mutate
			f.Add(b)
		}
	}
	f.Add([]byte(`{"Records":[{"messageId":"m","body":"{}","eventSourceARN":"q.fifo"}]}`))
	f.Add([]byte(`{"Records":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"Records":[{"messageId":"","body":"\u0000"}]}`))
	cfg, err := consumer.LoadConfig(func(key string) string {
		return map[string]string{
			"INVALID_QUEUE_URL": "https://sqs.local/000/orders-invalid",
			"IDEMPOTENCY_TABLE": "idempotency",
			"TAX_SERVICE_URL":   "http://127.0.0.1:1",
			// One record at a time: the same input always runs the same
			// code, so the coverage the fuzzer steers by does not depend
			// on how goroutines were scheduled (the concurrent path is
			// TestConcurrentDuplicates' and the -race unit tests').
			"CONCURRENCY": "1",
		}[key]
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		clock := &manualClock{now: fixedNow}
		sent := &fakeSQS{}
		store := &unrecordedStore{MemoryStore: idempotency.NewMemoryStore(), clock: clock}
		h := lambda.NewHandler(consumer.New(cfg, consumer.Deps{
			Sender: sent, Store: store, Invoicer: &fakeTax{},
			Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
			Now: clock.Now, Sleep: clock.Sleep,
		}))
		out, err := h.Invoke(context.Background(), payload)
		var ev events.SQSEvent
		// Decode as the Lambda runtime library does: the first JSON value.
		if json.NewDecoder(bytes.NewReader(payload)).Decode(&ev) != nil {
			if err == nil {
				t.Fatalf("undecodable payload accepted: %q", payload)
			}
			return
		}
		if err != nil {
			t.Fatalf("decodable event failed: %v", err)
		}
		if failed, slept := store.failures(), clock.sleeps(); failed > 1 && slept == 0 {
			t.Fatalf("%d attempts to record a completion, none slept on the clock", failed)
		}
		var resp struct {
			Failures *[]events.SQSBatchItemFailure `json:"batchItemFailures"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || resp.Failures == nil {
			t.Fatalf("response %s: not a list of failures (%v)", out, err)
		}
		// The bodies of each message id (a fuzzed event may repeat one).
		records := map[string][]string{}
		for _, r := range ev.Records {
			records[r.MessageId] = append(records[r.MessageId], r.Body)
		}
		for _, f := range *resp.Failures {
			if _, ok := records[f.ItemIdentifier]; !ok {
				t.Fatalf("failure %q is not a record of the event", f.ItemIdentifier)
			}
		}
		for _, in := range sent.sent {
			meta, _, found, err := invalid.Read(in.MessageAttributes)
			if err != nil || !found {
				t.Fatalf("published verdict does not read back: found=%v err=%v", found, err)
			}
			if len(meta.MessageID) > invalid.MaxNameBytes {
				continue // clipped by Stamp: not an id any more
			}
			bodies, ok := records[meta.MessageID]
			if !ok {
				t.Fatalf("published %q, not a record of the event", meta.MessageID)
			}
			if !slices.Contains(bodies, aws.ToString(in.MessageBody)) {
				t.Fatalf("record %q published with another body", meta.MessageID)
			}
		}
	})
}

// manualClock is the fuzz target's clock: Sleep advances it at once.
type manualClock struct {
	mu    sync.Mutex
	now   time.Time
	slept int
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *manualClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept++
	return nil
}

func (c *manualClock) sleeps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}

// unrecordedStore fails every completion of an order whose id ends in
// -NOREC, slowly (a second of the clock) and with a transient error: the
// receiver retries it, sleeping between attempts, until its budget on the
// clock runs out (three attempts).
type unrecordedStore struct {
	*idempotency.MemoryStore
	clock *manualClock
	mu    sync.Mutex
	fails int
}

func (s *unrecordedStore) Complete(ctx context.Context, l idempotency.Lease, result string) error {
	if strings.HasSuffix(l.Key, "-NOREC") {
		s.clock.advance(time.Second)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.fails++
		return errors.New("throttled")
	}
	return s.MemoryStore.Complete(ctx, l, result)
}

func (s *unrecordedStore) failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fails
}
