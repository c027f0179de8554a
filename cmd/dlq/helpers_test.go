package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// fixture is dlq on the in-memory queue and ledger, on a manual clock,
// with an outputs file naming the lane's queues and tables.
type fixture struct {
	t       *testing.T
	clock   *replaytest.Clock
	q       *replaytest.MemoryQueue
	ledger  *replay.MemoryLedger
	items   *fakeItems
	outputs map[string]string
	file    string // the outputs file

	env    map[string]string // the replay function's environment
	envErr error

	stdin                string
	stdinTTY, stderrTTY  bool
	mu                   sync.Mutex
	calls                map[string]int // SQS operation -> calls
	dlq, source, parking string
	invalid              string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: replaytest.NewClock(time.Now().UTC().Truncate(time.Second)), items: &fakeItems{items: map[string]map[string]dbtypes.AttributeValue{}}, calls: map[string]int{}}
	f.q = replaytest.NewMemoryQueue(f.clock.Now)
	f.ledger = replay.NewMemoryLedger(f.clock.Now)
	f.q.CallFault = func(op, _ string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls[op]++
		return nil
	}
	f.dlq, f.source, f.parking, f.invalid = f.queue("orders-dlq", nil), f.queue("orders", nil), f.queue("orders-parking", nil), f.queue("orders-invalid", nil)
	f.outputs = map[string]string{
		outDLQ: f.dlq, outSource: f.source, outParking: f.parking, outInvalid: f.invalid,
		outLedger: "ledger", outIdempotency: "idempotency", outReplayFunction: "replay-fn",
	}
	f.env = map[string]string{"MAX_REPLAYS": "3", "BACKOFF_BASE": "1s", "BACKOFF_MAX": "10s", "CONSUMER_NAME": "invoice"}
	f.file = filepath.Join(t.TempDir(), "outputs.json")
	f.writeOutputs()
	return f
}

func (f *fixture) queue(name string, attrs map[string]string) string {
	f.t.Helper()
	url, err := f.q.CreateQueue(name, attrs)
	if err != nil {
		f.t.Fatal(err)
	}
	return url
}

func (f *fixture) writeOutputs() {
	b, _ := json.Marshal(f.outputs)
	if err := os.WriteFile(f.file, b, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) callsOf(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// result is one execution of dlq.
type result struct {
	code           int
	stdout, stderr string
}

// run executes dlq with the outputs file and args.
func (f *fixture) run(args ...string) result {
	return f.runRaw(append([]string{"--stack-outputs", f.file}, args...)...)
}

// runRaw executes dlq with args as given.
func (f *fixture) runRaw(args ...string) result {
	f.t.Helper()
	var stdout, stderr bytes.Buffer
	stdin := strings.NewReader(f.stdin)
	a := &app{
		stdin: stdin, stdout: &stdout, stderr: &stderr, now: f.clock.Now,
		isTerminal: func(x any) bool { return x == any(stdin) && f.stdinTTY || x == any(&stderr) && f.stderrTTY },
		connect: func(context.Context, *globalFlags) (*backend, error) {
			return &backend{
				queue:  f.q,
				ledger: func(string) replay.Ledger { return f.ledger },
				completions: func(_, consumer string) replay.Completions {
					return &replaytest.MemoryCompletions{Store: idempotency.NewMemoryStore(), Scope: consumer}
				},
				items: f.items,
				functionEnv: func(_ context.Context, name string) (map[string]string, error) {
					if f.envErr != nil {
						return nil, f.envErr
					}
					return f.env, nil
				},
				stackOutputs: func(_ context.Context, name string) (map[string]string, error) {
					if name != "Homing" {
						return nil, fmt.Errorf("Stack with id %s does not exist", name)
					}
					return f.outputs, nil
				},
			}, nil
		},
	}
	code := execute(context.Background(), args, a)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func (r result) want(t *testing.T, code int, stderr ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stderr {
		if !strings.Contains(r.stderr, s) {
			t.Fatalf("stderr does not mention %q:\n%s", s, r.stderr)
		}
	}
}

func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	return v
}

func order(id string) string {
	return fmt.Sprintf(`{"eventType":"order.created","version":1,"orderId":%q,"total":"99.80"}`, id)
}

// send puts a message in url, with our metadata when meta is set.
func (f *fixture) send(url, body string, meta *replay.Metadata, attrs map[string]types.MessageAttributeValue) {
	f.t.Helper()
	if meta != nil {
		var err error
		if attrs, err = envelope.Pack(attrs, replay.AttributeName, meta); err != nil {
			f.t.Fatal(err)
		}
	}
	if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}); err != nil {
		f.t.Fatal(err)
	}
}

// visible returns the visible messages of url.
func (f *fixture) visible(url string) int {
	f.t.Helper()
	attrs, err := attributes(context.Background(), f.q, url)
	if err != nil {
		f.t.Fatal(err)
	}
	return statsOf("", url, attrs).Visible
}

// fakeItems is the GetItem of an idempotency table.
type fakeItems struct {
	items map[string]map[string]dbtypes.AttributeValue
}

func (f *fakeItems) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	key := in.Key[dynamo.KeyAttribute].(*dbtypes.AttributeValueMemberS).Value
	return &dynamodb.GetItemOutput{Item: f.items[key]}, nil
}

func (f *fakeItems) put(key, status, result string, expires time.Time) {
	f.items[key] = map[string]dbtypes.AttributeValue{
		"pk": &dbtypes.AttributeValueMemberS{Value: key}, "status": &dbtypes.AttributeValueMemberS{Value: status},
		"result":    &dbtypes.AttributeValueMemberS{Value: result},
		"expiresAt": &dbtypes.AttributeValueMemberN{Value: fmt.Sprint(expires.Unix())},
	}
}
