// Command payments is the example lane's consumer Lambda: it posts
// payment.captured messages from a FIFO source queue (message group =
// account) to the accounts' ledger, exactly once each, sends invalid ones
// to the invalid queue with their reason, and reports transient failures
// per record. On the FIFO lane (GROUP_ORDER) an account whose payment
// fails waits behind it in the source queue, and an account whose head can
// never be posted is parked until an operator releases it (package fifo).
//
// Each invocation writes the lane's metrics to stdout as EMF lines (package
// emf), under the names the lane's alarms and dashboard watch.
//
// Configuration is read from the environment; see posting.Config, and
// emf.LoadConfig for POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/fifo"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/posting"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := posting.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	metrics := emf.LoadConfig(os.Getenv, cfg.ConsumerName)
	if err := metrics.Validate(); err != nil {
		return fmt.Errorf("payments metrics: %w", err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	var (
		queue = sqs.NewFromConfig(awsCfg)
		db    = dynamodb.NewFromConfig(awsCfg)
	)
	var (
		_ batch.Sender    = queue
		_ dynamo.API      = db
		_ ledger.TableAPI = db
		_ fifo.Queue      = queue
	)
	logger := lambdacontext.NewLogger(lambdacontext.WithFunctionARN())
	deps := posting.Deps{
		Sender: queue,
		Store:  dynamo.NewIdempotencyStore(db, cfg.IdempotencyTable),
		Ledger: ledger.NewTable(db, cfg.EntriesTable),
		Queue:  queue,
		Parks:  parks(db, cfg),
		Logger: logger,
	}
	if cfg.FailureRecords { // why each payment failed, for dlq
		deps.Failures = dynamo.NewFailureLog(db, cfg.IdempotencyTable, cfg.ConsumerName)
	}
	p := posting.NewProcessor(cfg, deps)
	lambda.StartWithOptions(newHandler(p, metrics, os.Stdout, logger), lambda.WithContext(ctx))
	return nil
}

// parks is the lane's store of parked accounts, in its ledger; nil when
// the lane parks none (no LEDGER_TABLE: GROUP_ORDER off or skip).
func parks(db *dynamodb.Client, cfg posting.Config) fifo.Store {
	if cfg.LedgerTable == "" {
		return nil
	}
	return dynamo.NewGroupStore(db, cfg.LedgerTable)
}

// newHandler is the Lambda handler: p's Process, its outcomes written to w
// after each invocation as the lane's EMF lines. A failed write is logged;
// it does not change the batch's answer.
func newHandler(p *batch.Processor, metrics emf.Config, w io.Writer, logger *slog.Logger) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	rec := emf.NewRecorder(w, metrics)
	rec.OnError = func(err error) { logger.Warn("metrics", slog.String("error", err.Error())) }
	return emf.Wrap(rec, p.Process)
}
