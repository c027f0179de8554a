// Command consumer is the invoice consumer Lambda: it reads order.created
// messages from the source queue through an SQS event source mapping with
// ReportBatchItemFailures, issues one invoice per order through the tax
// service, sends invalid orders to the invalid queue with their reason, and
// reports transient failures per record so SQS redrives them. What it does
// and how it is configured are package internal/sample/consumer's.
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
	"github.com/homingdlq/homing/internal/sample/consumer"
	"github.com/homingdlq/homing/internal/sample/tax"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := consumer.LoadConfig(os.Getenv)
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
		_ batch.Sender = queue
		_ dynamo.API   = db
	)
	var failures batch.FailureLog
	if cfg.FailureRecords {
		failures = dynamo.NewFailureLog(db, cfg.IdempotencyTable, cfg.ConsumerName)
	}
	p := consumer.New(cfg, consumer.Deps{
		Sender:   queue,
		Store:    dynamo.NewIdempotencyStore(db, cfg.IdempotencyTable),
		Invoicer: taxClient,
		Lookup:   taxClient,
		Logger:   lambdacontext.NewLogger(lambdacontext.WithFunctionARN()),
		Metrics:  os.Stdout,
		Failures: failures,
	})
	lambda.StartWithOptions(p, lambda.WithContext(ctx))
	return nil
}
