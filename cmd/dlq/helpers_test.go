package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	tagtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/fifo/fifotest"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/archive/archivetest"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// fixture is dlq on the in-memory queue and ledger, on a manual clock,
// with an outputs file in CDK's format naming the lane's queues and tables
// (stack Homing, lane orders).
type fixture struct {
	t       *testing.T
	clock   *replaytest.Clock
	q       *replaytest.MemoryQueue
	ledger  *replaytest.MemoryLedger
	items   *fakeItems
	outputs map[string]string // lane orders: lane output key -> value
	file    string            // the outputs file
	tagging *fakeTagging
	urls    map[string]string // queue name -> URL

	// parks are the lane's parked groups; store is what dlq opens (parks,
	// unless a test wraps it), and opened lists the tables it opened it on.
	parks  *fifotest.Memory
	store  fifo.Store
	opened []string
	// consumer, when set, is the lane's consumer at work: it runs at each
	// of dlq's waits, once the clock has advanced; sleeps counts the waits.
	consumer func()
	sleeps   int

	env    map[string]string // the replay function's environment
	envErr error
	vars   map[string]string // dlq's own environment (HOMING_OUTPUTS...)

	connects int  // calls of connect: none for a rejected command
	operator bool // dlq's ledger denies the seal key, as the construct's grants do
	// noAWS makes connect fail the test: a command that must fail on its
	// flags or resources before any AWS client is built.
	noAWS bool

	stdin                string
	stdinTTY, stderrTTY  bool
	mu                   sync.Mutex
	calls                map[string]int // SQS operation -> calls
	dlq, source, parking string
	invalid              string
	s3                   *archivetest.MemoryS3 // the lane's archive bucket, "orders-archive"
	// foreign maps the URL of a queue in another account or region to
	// the memory queue that stands for it (elsewhere).
	foreign map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		t: t, clock: replaytest.NewClock(time.Now().UTC().Truncate(time.Second)), items: &fakeItems{items: map[string]map[string]dbtypes.AttributeValue{}},
		calls: map[string]int{}, urls: map[string]string{}, vars: map[string]string{}, tagging: &fakeTagging{},
	}
	f.parks = &fifotest.Memory{}
	f.store = f.parks
	f.q = replaytest.NewMemoryQueue(f.clock.Now)
	f.ledger = replaytest.NewMemoryLedger(f.clock.Now)
	f.q.CallFault = func(op, _ string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls[op]++
		return nil
	}
	f.dlq, f.source, f.parking, f.invalid = f.queue("orders-dlq", nil), f.queue("orders", nil), f.queue("orders-parking", nil), f.queue("orders-invalid", nil)
	f.outputs = map[string]string{
		outDLQ: f.dlq, outSource: f.source, outParking: f.parking, outInvalid: f.invalid,
		outLedger: "ledger", outIdempotency: "idempotency", outReplayFunction: "replay-fn", outArchive: "orders-archive",
	}
	f.s3 = archivetest.NewMemoryS3()
	f.s3.AddBucket("orders-archive")
	f.env = map[string]string{"MAX_REPLAYS": "3", "BACKOFF_BASE": "1s", "BACKOFF_MAX": "10s", "CONSUMER_NAME": "invoice"}
	f.routes(replay.Route{Key: "orderId", Records: true})
	f.file = filepath.Join(t.TempDir(), "outputs.json")
	f.writeOutputs()
	return f
}

// routes sets the replay function's REPLAY_ROUTES to the lane's route
// with the key, payload hash and records of lane, as the construct sets
// them.
func (f *fixture) routes(lane replay.Route) {
	f.t.Helper()
	lane.Name, lane.DLQURL, lane.SourceURL, lane.ParkingURL = "orders", f.dlq, f.source, f.parking
	b, err := json.Marshal([]replay.Route{lane})
	if err != nil {
		f.t.Fatal(err)
	}
	f.env["REPLAY_ROUTES"] = string(b)
}

func (f *fixture) queue(name string, attrs map[string]string) string {
	f.t.Helper()
	url, err := f.q.CreateQueue(name, attrs)
	if err != nil {
		f.t.Fatal(err)
	}
	f.urls[name] = url
	return url
}

// stackOutputs are the outputs of stack Homing: lane orders' under its
// prefix, and one output of the stack's own.
func (f *fixture) stackOutputs() map[string]string {
	out := map[string]string{"TaxServiceAdminUrl": "http://127.0.0.1:1"}
	for k, v := range f.outputs {
		out[settings.OutputID("orders", k)] = v
	}
	return out
}

// writeOutputs writes the outputs file as `cdk deploy --outputs-file` does.
func (f *fixture) writeOutputs() {
	f.writeFile(f.file, map[string]any{"Homing": f.stackOutputs()})
}

func (f *fixture) writeFile(path string, v any) {
	f.t.Helper()
	b, _ := json.Marshal(v)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// tagLane tags the fixture's queues, tables and replay function as the
// construct tags lane orders, in a region that also holds lane payments.
func (f *fixture) tagLane() {
	res := func(arn, lane, role string) tagtypes.ResourceTagMapping {
		return tagtypes.ResourceTagMapping{ResourceARN: aws.String(arn), Tags: []tagtypes.Tag{
			{Key: aws.String("team"), Value: aws.String("billing")},
			{Key: aws.String(settings.TagLane), Value: aws.String(lane)},
			{Key: aws.String(settings.TagRole), Value: aws.String(role)},
		}}
	}
	const acct = "arn:aws:%s:us-east-1:123456789012:%s"
	f.tagging.resources = []tagtypes.ResourceTagMapping{
		res(f.q.ARN(f.dlq), "orders", settings.RoleDeadLetter),
		res(f.q.ARN(f.source), "orders", settings.RoleSource),
		res(f.q.ARN(f.parking), "orders", settings.RoleParking),
		res(f.q.ARN(f.invalid), "orders", settings.RoleInvalid),
		res(fmt.Sprintf(acct, "dynamodb", "table/ledger"), "orders", settings.RoleLedger),
		res(fmt.Sprintf(acct, "dynamodb", "table/idempotency"), "orders", settings.RoleIdempotency),
		res(fmt.Sprintf(acct, "lambda", "function:replay-fn"), "orders", settings.RoleReplay),
		res("arn:aws:s3:::orders-archive", "orders", settings.RoleArchive),
		res(fmt.Sprintf(acct, "lambda", "function:consumer-fn"), "orders", settings.RoleConsumer),
		res(fmt.Sprintf(acct, "sns", "orders-alarms"), "orders", "alarms"),
		res(fmt.Sprintf(acct, "sqs", "payments-dlq.fifo"), "payments", settings.RoleDeadLetter),
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
	return f.runRaw(append([]string{"--outputs-file", f.file}, args...)...)
}

// runRaw executes dlq with args as given.
func (f *fixture) runRaw(args ...string) result {
	f.t.Helper()
	var stdout, stderr bytes.Buffer
	stdin := strings.NewReader(f.stdin)
	a := &app{
		stdin: stdin, stdout: &stdout, stderr: &stderr, now: f.clock.Now,
		sleep: func(ctx context.Context, d time.Duration) error {
			f.sleeps++
			f.clock.Advance(d)
			if f.consumer != nil {
				f.consumer()
			}
			return ctx.Err()
		},
		getenv:     func(k string) string { return f.vars[k] },
		isTerminal: func(x any) bool { return x == any(stdin) && f.stdinTTY || x == any(&stderr) && f.stderrTTY },
		connect: func(context.Context, *globalFlags, *slog.Logger) (*backend, error) {
			f.connects++
			if f.noAWS {
				f.t.Errorf("dlq %s: connected to AWS, want a failure before any AWS client is built", strings.Join(args, " "))
				return nil, errors.New("connected to AWS")
			}
			return &backend{
				queue: elsewhere{f.q, f.foreign},
				ledger: func(string) replay.Ledger {
					if f.operator {
						return operatorLedger{f.ledger}
					}
					return f.ledger
				},
				completions: func(_, consumer string) replay.Completions {
					return &replaytest.MemoryCompletions{Store: idempotency.NewMemoryStore(), Scope: consumer}
				},
				idempotency: func(table string) *dynamo.IdempotencyStore { return dynamo.NewIdempotencyStore(f.items, table) },
				failures:    func(table, consumer string) *dynamo.FailureLog { return dynamo.NewFailureLog(f.items, table, consumer) },
				groupStore: func(table string) fifo.Store {
					f.opened = append(f.opened, table)
					return f.store
				},
				releaseQueue: releaseQueue{f.q},
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
					return f.stackOutputs(), nil
				},
				tagging:   f.tagging,
				queueURLs: fakeQueueURLs(f.urls),
				archive:   func(bucket string) *archive.Store { return archive.NewStore(f.s3, bucket) },
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

// send puts a message in url, with our metadata when meta is set, sealed
// as the engine seals it: a replay for the source queue it came through, a
// parked message for the queue it sits in.
func (f *fixture) send(url, body string, meta *replay.Metadata, attrs map[string]types.MessageAttributeValue) {
	f.t.Helper()
	if meta != nil {
		key, err := replay.SealKey(context.Background(), f.ledger, f.clock.Now())
		if err != nil {
			f.t.Fatal(err)
		}
		dest := f.source
		if meta.Reason != "" {
			dest = url
		}
		if attrs, err = replay.Attributes(attrs, meta.Sealed(key, body, dest)); err != nil {
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

// elsewhere creates a memory queue that stands for the queue of url, in
// another account or region, and returns url.
func (f *fixture) elsewhere(url string) string {
	f.t.Helper()
	if f.foreign == nil {
		f.foreign = map[string]string{}
	}
	f.foreign[url] = f.queue(fmt.Sprintf("elsewhere-%d", len(f.foreign)), nil)
	return url
}

// elsewhere is the memory queue with the queues of other accounts and
// regions in it: a URL of foreign is the memory queue's URL it maps to.
type elsewhere struct {
	*replaytest.MemoryQueue
	foreign map[string]string
}

func (q elsewhere) url(u *string) *string {
	if v, ok := q.foreign[aws.ToString(u)]; ok {
		return aws.String(v)
	}
	return u
}

func (q elsewhere) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c := *in
	c.QueueUrl = q.url(in.QueueUrl)
	return q.MemoryQueue.SendMessageBatch(ctx, &c, optFns...)
}

func (q elsewhere) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c := *in
	c.QueueUrl = q.url(in.QueueUrl)
	return q.MemoryQueue.GetQueueAttributes(ctx, &c, optFns...)
}

// releaseQueue is the memory queue with the single delete a release makes
// (a batch of one).
type releaseQueue struct {
	*replaytest.MemoryQueue
}

func (q releaseQueue) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	out, err := q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: in.QueueUrl,
		Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("single"), ReceiptHandle: in.ReceiptHandle}}})
	if err != nil {
		return nil, err
	}
	if len(out.Failed) > 0 {
		return nil, fmt.Errorf("delete: %s: %s", aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// fakeItems is the GetItem and BatchGetItem of an idempotency table;
// batchGets records the keys of each BatchGetItem, and batchGetErr fails
// them.
type fakeItems struct {
	dynamo.API  // GetItem and BatchGetItem alone
	items       map[string]map[string]dbtypes.AttributeValue
	batchGets   [][]string
	batchGetErr error
}

func (f *fakeItems) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if f.batchGetErr != nil {
		return nil, f.batchGetErr
	}
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]dbtypes.AttributeValue{}}
	for table, ka := range in.RequestItems {
		var keys []string
		for _, k := range ka.Keys {
			key := k[settings.PartitionKeyAttribute].(*dbtypes.AttributeValueMemberS).Value
			keys = append(keys, key)
			if item, ok := f.items[key]; ok {
				out.Responses[table] = append(out.Responses[table], item)
			}
		}
		f.batchGets = append(f.batchGets, keys)
	}
	return out, nil
}

// fail puts the failure record of consumer's message id, as the
// consumer's dynamo.FailureLog writes it.
func (f *fakeItems) fail(consumer string, r batch.Failure) {
	key := settings.FailurePrefix + consumer + settings.KeySeparator + r.MessageID
	n := func(v int64) dbtypes.AttributeValue { return &dbtypes.AttributeValueMemberN{Value: fmt.Sprint(v)} }
	f.items[key] = map[string]dbtypes.AttributeValue{
		"pk": &dbtypes.AttributeValueMemberS{Value: key}, "class": &dbtypes.AttributeValueMemberS{Value: r.Class},
		"message": &dbtypes.AttributeValueMemberS{Value: r.Message}, "failures": n(int64(r.Failures)),
		"firstAt": n(r.FirstAt.UnixMilli()), "lastAt": n(r.LastAt.UnixMilli()),
		"expiresAt": n(r.LastAt.Add(settings.DefaultRecordLifetime).Unix()),
	}
}

func (f *fakeItems) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	key := in.Key[settings.PartitionKeyAttribute].(*dbtypes.AttributeValueMemberS).Value
	return &dynamodb.GetItemOutput{Item: f.items[key]}, nil
}

func (f *fakeItems) put(key, status, result string, expires time.Time) {
	f.items[key] = map[string]dbtypes.AttributeValue{
		"pk": &dbtypes.AttributeValueMemberS{Value: key}, "status": &dbtypes.AttributeValueMemberS{Value: status},
		"result":    &dbtypes.AttributeValueMemberS{Value: result},
		"expiresAt": &dbtypes.AttributeValueMemberN{Value: fmt.Sprint(expires.Unix())},
	}
}

// fakeTagging is the Resource Groups Tagging API over a list of tagged
// resources: it filters by tag (AND across keys, OR across values) and by
// resource type as the service does, and answers two resources a page so
// that discovery must follow the pages.
type fakeTagging struct {
	resources []tagtypes.ResourceTagMapping
	err       error
	calls     int
	inputs    []*resourcegroupstaggingapi.GetResourcesInput
}

func (f *fakeTagging) GetResources(_ context.Context, in *resourcegroupstaggingapi.GetResourcesInput, _ ...func(*resourcegroupstaggingapi.Options)) (*resourcegroupstaggingapi.GetResourcesOutput, error) {
	f.calls++
	f.inputs = append(f.inputs, in)
	if f.err != nil {
		return nil, f.err
	}
	var match []tagtypes.ResourceTagMapping
	for _, r := range f.resources {
		if tagsMatch(r.Tags, in.TagFilters) && typeMatches(aws.ToString(r.ResourceARN), in.ResourceTypeFilters) {
			match = append(match, r)
		}
	}
	start := 0
	if t := aws.ToString(in.PaginationToken); t != "" {
		fmt.Sscan(t, &start)
	}
	end := min(start+2, len(match))
	out := &resourcegroupstaggingapi.GetResourcesOutput{ResourceTagMappingList: match[start:end], PaginationToken: aws.String("")}
	if end < len(match) {
		out.PaginationToken = aws.String(fmt.Sprint(end))
	}
	return out, nil
}

func (f *fakeTagging) GetTagValues(_ context.Context, in *resourcegroupstaggingapi.GetTagValuesInput, _ ...func(*resourcegroupstaggingapi.Options)) (*resourcegroupstaggingapi.GetTagValuesOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := &resourcegroupstaggingapi.GetTagValuesOutput{}
	for _, r := range f.resources {
		for _, t := range r.Tags {
			if aws.ToString(t.Key) == aws.ToString(in.Key) {
				out.TagValues = append(out.TagValues, aws.ToString(t.Value))
			}
		}
	}
	return out, nil
}

func tagsMatch(tags []tagtypes.Tag, filters []tagtypes.TagFilter) bool {
	for _, f := range filters {
		i := slices.IndexFunc(tags, func(t tagtypes.Tag) bool { return aws.ToString(t.Key) == aws.ToString(f.Key) })
		if i < 0 || len(f.Values) > 0 && !slices.Contains(f.Values, aws.ToString(tags[i].Value)) {
			return false
		}
	}
	return true
}

// typeMatches filters as the service does: "service" or "service:type",
// the type being the resource part of the ARN up to its first / or :.
func typeMatches(arn string, filters []string) bool {
	if len(filters) == 0 {
		return true
	}
	parts := strings.SplitN(arn, ":", 6)
	typ, _, _ := strings.Cut(parts[5], "/")
	typ, _, _ = strings.Cut(typ, ":")
	for _, f := range filters {
		svc, want, _ := strings.Cut(f, ":")
		if svc == parts[2] && (want == "" || want == typ) {
			return true
		}
	}
	return false
}

// fakeQueueURLs is GetQueueUrl over queue names.
type fakeQueueURLs map[string]string

func (f fakeQueueURLs) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	url, ok := f[aws.ToString(in.QueueName)]
	if !ok {
		return nil, &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(url)}, nil
}
