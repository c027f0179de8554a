// Command consumer is the invoice consumer Lambda: it reads order.created
// messages from the source queue through an SQS event source mapping with
// ReportBatchItemFailures, issues one invoice per order through the tax
// service, sends invalid orders to the invalid queue with their reason, and
// reports transient failures per record so SQS redrives them.
//
// Configuration is read from the environment; see [Config].
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/envconfig"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/invoicing"
	"github.com/homingdlq/homing/internal/metrics"
	"github.com/homingdlq/homing/internal/order"
	"github.com/homingdlq/homing/internal/tax"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	taxClient, err := tax.New(cfg.TaxServiceURL, nil, tax.Options{Budget: cfg.TaxBudget})
	if err != nil {
		return fmt.Errorf("tax client: %w", err)
	}
	var (
		queue = sqs.NewFromConfig(awsCfg)
		db    = dynamodb.NewFromConfig(awsCfg)
	)
	var (
		_ batch.Sender          = queue
		_ dynamo.IdempotencyAPI = db
	)
	p := newProcessor(cfg, deps{
		sender:   queue,
		store:    dynamo.NewIdempotencyStore(db, cfg.IdempotencyTable),
		invoicer: taxClient,
		lookup:   taxClient,
		logger:   lambdacontext.NewLogger(lambdacontext.WithFunctionARN()),
		metrics:  os.Stdout,
	})
	lambda.StartWithOptions(p, lambda.WithContext(ctx))
	return nil
}

// deps are the adapters the processor is built from; tests pass fakes.
type deps struct {
	sender   batch.Sender
	store    idempotency.Store
	invoicer invoicing.Invoicer
	lookup   invoicing.InvoiceLookup // may be nil: in-doubt takeovers call again
	logger   *slog.Logger
	metrics  io.Writer // EMF lines
	now      func() time.Time
}

// newProcessor returns the handler of one SQS batch: the batch processor
// over the invoicing handler, counted into one set of EMF lines per
// invocation.
func newProcessor(cfg Config, d deps) metrics.ProcessFunc {
	receiver := &idempotency.Receiver{
		Store:    d.store,
		Scope:    cfg.ConsumerName,
		Lifetime: cfg.RecordLifetime,
		Now:      d.now,
		OnError: func(err error, key string) {
			d.logger.Warn("idempotency", slog.String("orderId", key), slog.String("error", err.Error()))
		},
		// The invoice was issued but not recorded: the record is acknowledged
		// (a redelivery would invoice again); this line is what counts it.
		OnUnrecorded: func(key, result string, err error) {
			d.logger.Error("invoice issued but its idempotency record not completed",
				slog.String("event", idempotency.EventUnrecorded), slog.String("orderId", key),
				slog.String("invoiceNumber", result), slog.String("error", err.Error()))
		},
	}
	h := &invoicing.Handler{Receiver: receiver, Invoicer: d.invoicer, Lookup: d.lookup, MaxBytes: cfg.MaxPayloadBytes,
		OnOutcome: metrics.Idempotency}
	p := batch.New(h.Handle,
		batch.NewInvalidQueue(d.sender, cfg.InvalidQueueURL, cfg.ConsumerName, d.now),
		batch.Options{Concurrency: cfg.Concurrency, DeadlineMargin: cfg.DeadlineMargin, Logger: d.logger, Now: d.now,
			OnOutcome: metrics.Record})
	w := d.metrics
	if w == nil {
		w = io.Discard
	}
	m := &metrics.Consumer{Config: cfg.Metrics, W: w, Now: d.now}
	return m.Wrap(p.Process, func(err error) { d.logger.Warn("metrics", slog.String("error", err.Error())) })
}

// Config is the consumer's configuration, from these environment variables:
//
//	INVALID_QUEUE_URL      required  queue for invalid orders
//	IDEMPOTENCY_TABLE      required  DynamoDB table of the idempotent receiver
//	TAX_SERVICE_URL        required  base URL of the tax and invoice service
//	CONSUMER_NAME          invoice   scopes idempotency keys, signs invalid-message metadata (1..64 bytes, no '#')
//	CONCURRENCY            10        records (or FIFO groups) processed at once
//	DEADLINE_MARGIN        2s        no record starts with less time left
//	TAX_BUDGET             10s       total time for the tax calls of one record, retries included
//	RECORD_LIFETIME        720h      how long an idempotency record lasts (>= 432h: source + DLQ retention)
//	MAX_PAYLOAD_BYTES      262144    larger bodies are invalid (payload-too-large); at most 983040, the source queue's size
//	                                 (SQS's 1 MiB minus envelope.MetadataReserveBytes for our metadata)
//	POWERTOOLS_SERVICE_NAME       CONSUMER_NAME  the Lane dimension of the metrics: the lane's name
//	POWERTOOLS_METRICS_NAMESPACE  Homing         the CloudWatch namespace of the metrics
type Config struct {
	InvalidQueueURL  string
	IdempotencyTable string
	TaxServiceURL    string
	ConsumerName     string
	Concurrency      int
	DeadlineMargin   time.Duration
	TaxBudget        time.Duration
	RecordLifetime   time.Duration
	MaxPayloadBytes  int
	Metrics          metrics.Config
}

// LoadConfig reads the configuration through getenv and validates it. The
// error lists every problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	env := envconfig.New(getenv)
	c := Config{
		InvalidQueueURL:  env.String("INVALID_QUEUE_URL", ""),
		IdempotencyTable: env.String("IDEMPOTENCY_TABLE", ""),
		TaxServiceURL:    env.String("TAX_SERVICE_URL", ""),
		ConsumerName:     env.String("CONSUMER_NAME", "invoice"),
		Concurrency:      env.Int("CONCURRENCY", batch.DefaultConcurrency),
		DeadlineMargin:   env.Duration("DEADLINE_MARGIN", batch.DefaultDeadlineMargin),
		TaxBudget:        env.Duration("TAX_BUDGET", 10*time.Second),
		RecordLifetime:   env.Duration("RECORD_LIFETIME", idempotency.DefaultLifetime),
		MaxPayloadBytes:  env.Int("MAX_PAYLOAD_BYTES", order.DefaultMaxBytes),
	}
	c.Metrics = metrics.Load(env, c.ConsumerName)
	if err := errors.Join(env.Err(), c.Validate()); err != nil {
		return Config{}, fmt.Errorf("consumer configuration: %w", err)
	}
	return c, nil
}

// maxConsumerName keeps idempotency keys of every orderId in the grammar
// unhashed (see idempotency.Key).
const maxConsumerName = 64

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	for _, f := range [...]struct{ key, value string }{
		{"INVALID_QUEUE_URL", c.InvalidQueueURL}, {"IDEMPOTENCY_TABLE", c.IdempotencyTable}, {"TAX_SERVICE_URL", c.TaxServiceURL},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.key))
		}
	}
	if c.Concurrency < 1 || c.Concurrency > 100 {
		errs = append(errs, fmt.Errorf("CONCURRENCY=%d: want 1..100", c.Concurrency))
	}
	if c.DeadlineMargin <= 0 {
		errs = append(errs, fmt.Errorf("DEADLINE_MARGIN=%s: want > 0", c.DeadlineMargin))
	}
	if c.TaxBudget <= 0 {
		errs = append(errs, fmt.Errorf("TAX_BUDGET=%s: want > 0", c.TaxBudget))
	}
	if c.RecordLifetime < idempotency.MinLifetime {
		errs = append(errs, fmt.Errorf("RECORD_LIFETIME=%s: want >= %s, so that a replay from the DLQ is still recognised", c.RecordLifetime, idempotency.MinLifetime))
	}
	if c.MaxPayloadBytes < 1 || c.MaxPayloadBytes > envelope.MaxSourceMessageBytes {
		errs = append(errs, fmt.Errorf("MAX_PAYLOAD_BYTES=%d: want 1..%d (the source queue's size: SQS's limit minus the reserve for our metadata)",
			c.MaxPayloadBytes, envelope.MaxSourceMessageBytes))
	}
	if c.ConsumerName == "" || len(c.ConsumerName) > maxConsumerName || strings.Contains(c.ConsumerName, "#") {
		errs = append(errs, fmt.Errorf("CONSUMER_NAME=%q: want 1..%d bytes without '#' (it scopes idempotency keys)", c.ConsumerName, maxConsumerName))
	}
	errs = append(errs, c.Metrics.Validate())
	return errors.Join(errs...)
}
