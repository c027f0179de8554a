// Command payments is the example lane's consumer Lambda: it posts
// payment.captured messages from a FIFO source queue (message group =
// account) to the accounts' ledger, exactly once each, sends invalid ones
// to the invalid queue with their reason, and reports transient failures
// per record so that SQS redrives them to the lane's dead-letter queue.
//
// Configuration is read from the environment; see posting.Config.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/dynamo"

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
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	var (
		queue = sqs.NewFromConfig(awsCfg)
		db    = dynamodb.NewFromConfig(awsCfg)
	)
	var (
		_ batch.Sender          = queue
		_ dynamo.IdempotencyAPI = db
		_ ledger.TableAPI       = db
	)
	p := posting.NewProcessor(cfg, posting.Deps{
		Sender: queue,
		Store:  dynamo.NewIdempotencyStore(db, cfg.IdempotencyTable),
		Ledger: ledger.NewTable(db, cfg.EntriesTable),
		Logger: lambdacontext.NewLogger(lambdacontext.WithFunctionARN()),
	})
	lambda.StartWithOptions(p.Process, lambda.WithContext(ctx))
	return nil
}
