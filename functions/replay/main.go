// Command replay is the replay Lambda: on an EventBridge schedule (or when
// an operator invokes it) it brings messages back from the dead-letter
// queues of its routes with the replay engine, and returns the run summary.
// The payloads it accepts and its configuration are package
// replay/handler's (handler.Config.ParseInvocation, handler.LoadConfig):
// each route of REPLAY_ROUTES names its lane's business key, payload hash,
// whether the lane's consumer writes completion records, which it reads
// in the idempotency table under the scope CONSUMER_NAME. With
// ARCHIVE_BUCKET, each run first archives the lane's parking and invalid
// queues there (package archive).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/replay"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := handler.LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	health, err := cfg.Health(nil)
	if err != nil {
		return err
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
		_ replay.Queue     = queue
		_ dynamo.API       = db
		_ archive.Receiver = queue
	)
	deps := handler.Deps{
		Queue:       queue,
		Ledger:      dynamo.NewLedger(db, cfg.LedgerTable, nil),
		Completions: dynamo.NewCompletions(db, cfg.IdempotencyTable, cfg.ConsumerName, nil),
		Failures:    dynamo.NewFailureLog(db, cfg.IdempotencyTable, cfg.ConsumerName),
		Health:      health,
		Logger:      lambdacontext.NewLogger(lambdacontext.WithFunctionARN()),
		Metrics:     os.Stdout,
	}
	if cfg.Archive.Bucket != "" {
		bucket := s3.NewFromConfig(awsCfg)
		var _ archive.S3 = bucket
		deps.Archive = bucket
	}
	h := handler.New(cfg, deps)
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return nil
}
