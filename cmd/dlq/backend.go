package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	tagschemas "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/schemas"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"
	"golang.org/x/term"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/replay"
)

// backend holds the adapters the commands work on; tests build one on the
// in-memory queue and ledger.
type backend struct {
	queue       replay.Queue
	ledger      func(table string) replay.Ledger
	completions func(table, consumer string) replay.Completions
	// idempotency reads an idempotency table's records.
	idempotency func(table string) *dynamo.IdempotencyStore
	// failures reads the failure records of a consumer in an idempotency
	// table.
	failures func(table, consumer string) *dynamo.FailureLog
	// groupStore returns the parks of a FIFO lane whose ledger is table.
	groupStore func(table string) fifo.Store
	// releaseQueue moves a parked group's records back to the source.
	releaseQueue fifo.ReleaseQueue
	// functionEnv returns the environment of a Lambda function.
	functionEnv func(ctx context.Context, name string) (map[string]string, error)
	// stackOutputs returns the outputs of a CloudFormation stack.
	stackOutputs func(ctx context.Context, name string) (map[string]string, error)
	// tagging and queueURLs find a lane by its tags (--lane without outputs).
	tagging   resourceTagger
	queueURLs queueURLGetter
	// archive reads the lane's archive in bucket.
	archive func(bucket string) *archive.Store
}

// connectAWS loads the AWS configuration (loadAWSConfig) and builds the
// clients.
func connectAWS(ctx context.Context, g *globalFlags, log *slog.Logger) (*backend, error) {
	cfg, err := loadAWSConfig(ctx, g, log)
	if err != nil {
		return nil, err
	}
	var (
		queue = sqs.NewFromConfig(cfg)
		db    = dynamodb.NewFromConfig(cfg)
		fn    = lambda.NewFromConfig(cfg)
		cf    = cloudformation.NewFromConfig(cfg)
		tags  = taggingClient(cfg)
		store = s3.NewFromConfig(cfg)
	)
	var (
		_ replay.Queue      = queue
		_ dynamo.API        = db
		_ fifo.ReleaseQueue = queue
		_ resourceTagger    = tags
		_ queueURLGetter    = queue
		_ archive.S3        = store
	)
	return &backend{
		queue:  queue,
		ledger: func(table string) replay.Ledger { return dynamo.NewLedger(db, table, nil) },
		completions: func(table, consumer string) replay.Completions {
			return dynamo.NewCompletions(db, table, consumer, nil)
		},
		idempotency:  func(table string) *dynamo.IdempotencyStore { return dynamo.NewIdempotencyStore(db, table) },
		failures:     func(table, consumer string) *dynamo.FailureLog { return dynamo.NewFailureLog(db, table, consumer) },
		groupStore:   func(table string) fifo.Store { return dynamo.NewGroupStore(db, table) },
		releaseQueue: queue,
		functionEnv: func(ctx context.Context, name string) (map[string]string, error) {
			out, err := fn.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
			if err != nil {
				return nil, err
			}
			if out.Environment == nil {
				return map[string]string{}, nil
			}
			return out.Environment.Variables, nil
		},
		stackOutputs: func(ctx context.Context, name string) (map[string]string, error) {
			out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
			if err != nil {
				return nil, err
			}
			if len(out.Stacks) != 1 {
				return nil, fmt.Errorf("%d stacks named %s", len(out.Stacks), name)
			}
			flat := map[string]string{}
			for _, o := range out.Stacks[0].Outputs {
				flat[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
			}
			return flat, nil
		},
		tagging:   tags,
		queueURLs: queue,
		archive:   func(bucket string) *archive.Store { return archive.NewStore(store, bucket) },
	}, nil
}

// loadAWSConfig loads the SDK's default configuration (AWS_PROFILE,
// AWS_REGION, AWS_ENDPOINT_URL...), with --region and --profile when set,
// and resolves its credentials once, before any client is built. The
// SDK's own log lines go to log at debug level (sdkLogger): a warning
// such as the EC2 metadata client's "falling back to IMDSv1" on a machine
// that is not an instance shows with -vv only, while the metadata service
// stays one of the places credentials come from. A missing profile,
// region or credentials is a one-line error that says what to set, its
// cause the SDK's chain of errors (printed with -v).
func loadAWSConfig(ctx context.Context, g *globalFlags, log *slog.Logger) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{config.WithLogger(sdkLogger(log))}
	if g.region != "" {
		opts = append(opts, config.WithRegion(g.region))
	}
	if g.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(g.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	var missing config.SharedConfigProfileNotExistError
	switch {
	case errors.As(err, &missing):
		return cfg, &codedError{code: exitUsage, cause: err, err: fmt.Errorf(
			"no AWS profile %s in the shared config files: check --profile and AWS_PROFILE, or create it with `aws configure --profile %s`%s", missing.Profile, missing.Profile, causeHint)}
	case err != nil:
		return cfg, fmt.Errorf("load the AWS configuration: %w (check AWS_PROFILE/--profile and AWS_REGION/--region)", err)
	}
	if cfg.Region == "" {
		return cfg, usageError("no AWS region: pass --region REGION, or set AWS_REGION (or the region of your AWS profile)")
	}
	if cfg.Credentials == nil {
		return cfg, noCredentials(g, cfg, errors.New("no credentials provider"))
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return cfg, noCredentials(g, cfg, err)
	}
	return cfg, nil
}

// causeHint ends a one-line error whose cause -v prints.
const causeHint = " (-v shows why)"

// noCredentials is the error of credentials that do not resolve: what to
// set, for the profile in use if there is one; cause is the SDK's error.
func noCredentials(g *globalFlags, cfg aws.Config, cause error) error {
	profile := g.profile
	for _, src := range cfg.ConfigSources {
		if env, ok := src.(config.EnvConfig); ok && profile == "" {
			profile = env.SharedConfigProfile // AWS_PROFILE
		}
	}
	if profile != "" {
		return &codedError{code: exitError, cause: cause, err: fmt.Errorf(
			"no AWS credentials from profile %s: sign in (`aws sso login --profile %s` for an SSO profile) or check its keys, or pick another profile with --profile or AWS_PROFILE%s", profile, profile, causeHint)}
	}
	return &codedError{code: exitError, cause: cause, err: fmt.Errorf(
		"no AWS credentials: set AWS_PROFILE (or pass --profile) to a profile that has them, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY%s", causeHint)}
}

// sdkLogger is the AWS SDK's logger: each of its lines goes to log at
// debug level, with the SDK's own classification (WARN, DEBUG).
func sdkLogger(log *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if !log.Enabled(context.Background(), slog.LevelDebug) {
			return
		}
		log.LogAttrs(context.Background(), slog.LevelDebug, fmt.Sprintf(format, v...), slog.String("source", "aws-sdk"), slog.String("sdkLevel", string(c)))
	})
}

// taggingClient is a Resource Groups Tagging API client that speaks AWS
// JSON 1.1, the protocol every implementation of the API has: the SDK's
// default since v1.42.0, Smithy RPC v2 CBOR, is newer than the emulators
// (ministack 1.5.33 answers it with a 500; TestE2ETaggingAPIProtocols).
func taggingClient(cfg aws.Config) *resourcegroupstaggingapi.Client {
	return resourcegroupstaggingapi.NewFromConfig(cfg, func(o *resourcegroupstaggingapi.Options) {
		o.Protocol = awsjson.New11(tagschemas.ResourceGroupsTaggingAPI_20170126)
	})
}

// isTerminal reports whether f is an *os.File on a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}
