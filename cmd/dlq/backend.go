package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	tagschemas "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/schemas"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"
	"golang.org/x/term"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/replay"
)

// backend holds the adapters the commands work on; tests build one on the
// in-memory queue and ledger.
type backend struct {
	queue       replay.Queue
	ledger      func(table string) replay.Ledger
	completions func(table, consumer string) replay.Completions
	items       dynamo.ItemGetter
	// functionEnv returns the environment of a Lambda function.
	functionEnv func(ctx context.Context, name string) (map[string]string, error)
	// stackOutputs returns the outputs of a CloudFormation stack.
	stackOutputs func(ctx context.Context, name string) (map[string]string, error)
	// tagging and queueURLs find a lane by its tags (--lane without outputs).
	tagging   resourceTagger
	queueURLs queueURLGetter
}

// connectAWS loads the SDK's default configuration (AWS_PROFILE,
// AWS_REGION, AWS_ENDPOINT_URL...), with --region and --profile when set,
// and builds the clients.
func connectAWS(ctx context.Context, g *globalFlags) (*backend, error) {
	var opts []func(*config.LoadOptions) error
	if g.region != "" {
		opts = append(opts, config.WithRegion(g.region))
	}
	if g.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(g.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w (check AWS_PROFILE/--profile and AWS_REGION/--region)", err)
	}
	if cfg.Region == "" {
		return nil, usageError("no AWS region: pass --region or set AWS_REGION")
	}
	var (
		queue = sqs.NewFromConfig(cfg)
		db    = dynamodb.NewFromConfig(cfg)
		fn    = lambda.NewFromConfig(cfg)
		cf    = cloudformation.NewFromConfig(cfg)
		tags  = taggingClient(cfg)
	)
	var (
		_ replay.Queue          = queue
		_ dynamo.LedgerAPI      = db
		_ dynamo.CompletionsAPI = db
		_ dynamo.ItemGetter     = db
		_ resourceTagger        = tags
		_ queueURLGetter        = queue
	)
	return &backend{
		queue:  queue,
		ledger: func(table string) replay.Ledger { return dynamo.NewLedger(db, table, nil) },
		completions: func(table, consumer string) replay.Completions {
			return dynamo.NewCompletions(db, table, consumer, nil)
		},
		items: db,
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
	}, nil
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
