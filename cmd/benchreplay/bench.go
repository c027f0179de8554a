package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/drill"
)

// profile is one network the contenders run on.
type profile struct {
	name     string
	n        int           // messages per contender and round
	naiveMax int           // at most this many for the naive mover; 0: n
	cfg      aws.Config    // its endpoint: the emulator, or the delay proxy
	delay    time.Duration // what the proxy adds; 0 for the bare emulator
	calls    *callCounter  // the API calls of cfg's clients, and of subprocess's
	// subprocess is where a subprocess's AWS_ENDPOINT_URL points: a proxy
	// to cfg's endpoint that counts into calls (nil without CLI contenders)
	subprocess *countingProxy
}

// messages is how many dead letters contender k moves in a round on p.
func (p profile) messages(k contender) int {
	if k.key == "naive" && p.naiveMax > 0 {
		return min(p.n, p.naiveMax)
	}
	return p.n
}

func (p profile) close() {
	if p.subprocess != nil {
		p.subprocess.Close()
	}
}

// clients are the SDK clients of one profile.
type clients struct {
	sqs *sqs.Client
	db  *dynamodb.Client
}

func newClients(cfg aws.Config) clients {
	return clients{sqs: sqs.NewFromConfig(cfg), db: dynamodb.NewFromConfig(cfg)}
}

// setupClients create, fill, check and delete, at full speed and uncounted.
type setupClients struct {
	clients
	fn *lambda.Client
}

func newSetup(cfg aws.Config) setupClients {
	return setupClients{clients: newClients(cfg), fn: lambda.NewFromConfig(cfg)}
}

// route is the resources of one contender's round.
type route struct {
	dlq, source, parking string // queue URLs
	ledger, idempotency  string // table names (the engine's and the CLI's)
	function             string // the replay function whose environment the CLI reads (the CLI's only)
	outputs              string // the outputs file naming the lane's resources (the CLI's only)
	n                    int    // the messages of the round, the run's MAX_PER_RUN
	workers              int    // the run's WORKERS
}

// bench runs the rounds.
type bench struct {
	setup    setupClients
	workers  int
	progress io.Writer
	logger   *slog.Logger
	runID    string
	seq      int      // numbers the resources of the run
	dir      string   // where the outputs files go
	environ  []string // the environment of subprocesses, before their endpoint
}

// mover is what a contender's move works with on one profile.
type mover struct {
	clients
	logger *slog.Logger
	// endpoint is a subprocess's AWS_ENDPOINT_URL: the profile's network
	// through its call counter
	endpoint string
	environ  []string
	progress io.Writer // where a contender says what it measured beside its rate
}

// measure runs every contender once per round and profile, each on fresh
// queues, and returns the rates. The contenders' order rotates from round
// to round, so that none always runs first on a cold emulator.
func (b *bench) measure(ctx context.Context, profiles []profile, cs []contender, rounds int) (*results, error) {
	res := newResults()
	for round := range rounds {
		for _, p := range profiles {
			mv := mover{clients: newClients(p.cfg), logger: b.logger, environ: b.environ, progress: b.progress}
			if p.subprocess != nil {
				mv.endpoint = p.subprocess.URL()
			}
			for i := range cs {
				k := cs[(i+round)%len(cs)]
				m, err := b.once(ctx, p, mv, k)
				for try := 1; errors.Is(err, errHidden) && try < maxTries; try++ {
					fmt.Fprintf(b.progress, "  %s: %v; once more on fresh queues\n", k.name, err)
					m, err = b.once(ctx, p, mv, k)
				}
				if err != nil {
					return nil, fmt.Errorf("round %d, %s, %s: %w", round+1, p.name, k.name, err)
				}
				res.add(p.name, k.key, m.rate)
				res.addCalls(p.name, k.key, m.calls, m.n)
				fmt.Fprintf(b.progress, "round %d/%d  %-22s  %-26s  %5d msgs  %6.0f msgs/s\n", round+1, rounds, p.name, k.name, m.n, m.rate)
			}
		}
	}
	return res, nil
}

// measurement is one contender's run.
type measurement struct {
	n     int            // messages moved
	rate  float64        // messages per second
	calls map[string]int // API calls by operation
}

// once runs one contender on fresh queues holding p.messages(k) dead
// letters and returns its measurement. The resources are deleted after.
func (b *bench) once(ctx context.Context, p profile, mv mover, k contender) (m measurement, err error) {
	rt, cleanup, err := b.fresh(ctx, k)
	defer func() { err = errors.Join(err, cleanup()) }()
	if err != nil {
		return m, err
	}
	n, err := b.fill(ctx, rt.dlq, p.messages(k))
	if err != nil {
		return m, err
	}
	rt.n = n
	if k.cli {
		// The CLI reads MAX_PER_RUN from the function, created with it.
		if err := b.function(ctx, rt); err != nil {
			return m, err
		}
	}
	p.calls.take()
	begin := time.Now()
	if err := k.move(ctx, mv, rt); err != nil {
		return m, err
	}
	elapsed := time.Since(begin)
	calls := p.calls.take()
	dups, err := b.check(ctx, rt, n)
	if err != nil {
		return m, err
	}
	if dups > 0 {
		fmt.Fprintf(b.progress, "  %s: %d duplicates in the source queue (an SDK retry of a batch whose answer was lost)\n", k.name, dups)
	}
	return measurement{n: n, rate: float64(n) / elapsed.Seconds(), calls: calls}, nil
}

// fresh creates a route's queues (and, for the engine and the CLI, its
// tables; for the CLI, the names of its replay function and outputs file)
// and returns a function that deletes them.
func (b *bench) fresh(ctx context.Context, k contender) (route, func() error, error) {
	b.seq++
	prefix := fmt.Sprintf("bench-%s-%d", b.runID, b.seq)
	var undo []func() error
	cleanup := func() error {
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, undo[i]())
		}
		return errors.Join(errs...)
	}
	rt := route{workers: k.workers}
	for _, q := range []struct {
		url   *string
		name  string
		attrs map[string]string
	}{{&rt.dlq, "dlq", map[string]string{"VisibilityTimeout": strconv.Itoa(dlqVisibility)}}, {&rt.source, "source", nil}, {&rt.parking, "parking", nil}} {
		out, err := b.setup.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "-" + q.name), Attributes: q.attrs})
		if err != nil {
			return rt, cleanup, fmt.Errorf("create queue %s-%s: %w", prefix, q.name, err)
		}
		url := aws.ToString(out.QueueUrl)
		*q.url = url
		undo = append(undo, func() error {
			// A retried delete whose first attempt was applied finds nothing.
			_, err := b.setup.sqs.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			if err != nil && !errors.As(err, new(*types.QueueDoesNotExist)) {
				return fmt.Errorf("delete queue %s: %w", url, err)
			}
			return nil
		})
	}
	if !k.tables {
		return rt, cleanup, nil
	}
	for _, t := range []struct {
		name *string
		keys []string
		what string
	}{{&rt.ledger, []string{settings.PartitionKeyAttribute, settings.SortKeyAttribute}, "ledger"}, {&rt.idempotency, []string{settings.PartitionKeyAttribute}, "idempotency"}} {
		name := prefix + "-" + t.what
		if err := b.table(ctx, name, t.keys); err != nil {
			return rt, cleanup, err
		}
		*t.name = name
		undo = append(undo, func() error {
			_, err := b.setup.db.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			if err != nil && !errors.As(err, new(*dbtypes.ResourceNotFoundException)) {
				return fmt.Errorf("delete table %s: %w", name, err)
			}
			return nil
		})
	}
	if k.cli {
		rt.function = prefix + "-replay"
		rt.outputs = filepath.Join(b.dir, prefix+"-outputs.json")
		undo = append(undo, func() error { return b.deleteFunction(context.WithoutCancel(ctx), rt.function, rt.outputs) })
	}
	return rt, cleanup, nil
}

// table creates an on-demand table keyed by keys (partition, then sort),
// String attributes, as the stack's ledger and idempotency tables are.
func (b *bench) table(ctx context.Context, name string, keys []string) error {
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: dbtypes.BillingModePayPerRequest}
	for i, k := range keys {
		kt := dbtypes.KeyTypeHash
		if i > 0 {
			kt = dbtypes.KeyTypeRange
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions, dbtypes.AttributeDefinition{AttributeName: aws.String(k), AttributeType: dbtypes.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, dbtypes.KeySchemaElement{AttributeName: aws.String(k), KeyType: kt})
	}
	// A retried create whose first attempt was applied finds the table.
	if _, err := b.setup.db.CreateTable(ctx, in); err != nil && !errors.As(err, new(*dbtypes.ResourceInUseException)) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(b.setup.db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	return nil
}

// deadLetters returns n dead letters as SQS's redrive leaves them in a DLQ:
// the producer's body (a valid order.created event, a distinct order each)
// and its attributes (a W3C traceparent), no replay metadata yet.
func deadLetters(n int) []types.SendMessageBatchRequestEntry {
	entries := make([]types.SendMessageBatchRequestEntry, n)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:          aws.String(strconv.Itoa(i % 10)),
			MessageBody: aws.String(drill.Encode(drill.Order(fmt.Sprintf("ORD-2026-%06d", i+1), i))),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"traceparent": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("00-%032x-%016x-01", i+1, i+1))},
			},
		}
	}
	return entries
}

// fill sends n dead letters to url and returns how many the queue holds:
// n, or a few more when the SDK retried a batch whose answer was lost (see
// [bench.check]); the contender moves them all.
func (b *bench) fill(ctx context.Context, url string, n int) (int, error) {
	entries := deadLetters(n)
	for i := 0; i < n; i += 10 {
		out, err := b.setup.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries[i:min(i+10, n)]})
		if err != nil {
			return 0, fmt.Errorf("fill %s: %w", url, err)
		}
		if len(out.Failed) > 0 {
			return 0, fmt.Errorf("fill %s: %d refused: %s", url, len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
	}
	d, err := drill.QueueDepth(ctx, b.setup.sqs, url)
	if err != nil {
		return 0, err
	}
	if d.Visible < n || d.Total() != d.Visible {
		return 0, fmt.Errorf("the DLQ holds %d messages (%d visible) after the fill, want %d visible", d.Total(), d.Visible, n)
	}
	return d.Visible, nil
}

// dlqVisibility is the DLQ's visibility timeout in seconds. The naive
// mover and the raw loop hold a message for a few round trips; a receive
// whose answer was lost (see [bench.check]) hides its messages this long,
// not SQS's default 30 s. The engine sets its own on every receive
// (replay.Options.DecisionWindow).
const dlqVisibility = 2

// errHidden is the error of a move that ended with messages hidden in the
// DLQ: a receive whose answer was lost (see [bench.check]) hides its
// messages for the visibility timeout, and the mover, seeing an empty
// queue, stops. The contender runs again, up to maxTries times.
var errHidden = errors.New("messages left hidden in the DLQ by a receive whose answer was lost")

const maxTries = 3

// check verifies the move: none left in the DLQ, none parked, every
// message in the source queue. It returns the duplicates the source queue
// received: at least once is the contract of SQS and of every mover here
// (the SDK retries a batch whose answer was lost); the consumer's
// idempotency absorbs them. More than a tenth of n is an error. The
// emulator's HTTP server loses about one answer in a thousand calls under
// load (the SDK reads "use of closed network connection" in a 200's body,
// and retries the call).
func (b *bench) check(ctx context.Context, rt route, n int) (duplicates int, err error) {
	left, err := drill.QueueDepth(ctx, b.setup.sqs, rt.dlq)
	if err != nil {
		return 0, err
	}
	if left.Visible == 0 && left.Delayed == 0 && left.InFlight > 0 && left.InFlight <= 10 {
		return 0, fmt.Errorf("%w (%d)", errHidden, left.InFlight)
	}
	if err := errors.Join(b.expect(ctx, rt.dlq, "the DLQ", 0), b.expect(ctx, rt.parking, "the parking queue", 0)); err != nil {
		return 0, err
	}
	d, err := drill.QueueDepth(ctx, b.setup.sqs, rt.source)
	if err != nil {
		return 0, err
	}
	if d.Total() < n || d.Total() > n+n/10 {
		return 0, fmt.Errorf("the source queue holds %d messages, want %d (up to %d with duplicates)", d.Total(), n, n+n/10)
	}
	return d.Total() - n, nil
}

// expect fails unless url holds exactly n messages (visible, in flight or
// delayed).
func (b *bench) expect(ctx context.Context, url, what string, n int) error {
	d, err := drill.QueueDepth(ctx, b.setup.sqs, url)
	if err != nil {
		return err
	}
	if d.Total() != n {
		return fmt.Errorf("%s holds %d messages (%d visible, %d in flight, %d delayed), want %d", what, d.Total(), d.Visible, d.InFlight, d.Delayed, n)
	}
	return nil
}
