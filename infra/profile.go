package main

import (
	"fmt"
	"runtime"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/settings"
)

// Profiles of the stack.
const (
	// ProfileAWS is the production-grade profile: 10 receives, 30 s consumer
	// timeout, replay every 15 minutes with backoff 5m..4h and a 10 minute
	// timeout, arm64, data retained when the stack is deleted or an update
	// removes it but not by the rollback of a failed first deploy, the
	// tables' deletion protection a deploy parameter. It is environment
	// agnostic: no account or region is fixed at synthesis, so one cloud
	// assembly deploys to environments in different regions (each deploy
	// takes the account and region of its credentials).
	ProfileAWS = "aws"
	// ProfileLocal is the emulator profile: fast failure (3 receives, 3 s
	// timeout, 18 s visibility), replay every minute with backoff in seconds,
	// the host's architecture (the emulator runs bootstraps as local
	// processes), everything destroyed with the stack; and the example
	// lane of examples/ (FIFO, payments) beside the order lane. Its stack
	// is in the environment CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION name
	// (the Makefile's CDK_LOCAL_ENV: the emulator's account and region).
	ProfileLocal = "local"
)

// DefaultLocalTaxServiceURL is the tax service of the local profile when
// TAX_SERVICE_URL is not set: the stand-in the e2e tests start.
const DefaultLocalTaxServiceURL = "http://127.0.0.1:4580"

// ProfileProps returns the stack props of the named profile; an unknown
// profile is an error. getenv supplies two optional variables:
//
//	TAX_SERVICE_URL  the consumer's tax service; locally it defaults to
//	                 DefaultLocalTaxServiceURL, on AWS it must be https://
//	                 and its absence makes the stack take the URL as the
//	                 TaxServiceUrl deploy parameter (https:// too)
//	HOMING_CODE_DIR  the directory of the bin/<function>/bootstrap builds
//	                 (default deadletter.DefaultCodeDir, ../bin from infra/)
//
// and, for the local profile only, CDK_DEFAULT_ACCOUNT and
// CDK_DEFAULT_REGION (the CDK CLI sets them), the stack's environment.
// The aws profile ignores them: the CLI sets CDK_DEFAULT_REGION=us-east-1
// even where no AWS configuration exists (the deploy workflow's build
// job), and a region fixed at synthesis would follow the assembly into
// every environment it is deployed to.
func ProfileProps(profile string, getenv func(string) string) (*HomingStackProps, error) {
	taxURL := getenv(settings.TaxServiceURL.Env)
	// The sample deploys the bootstraps `make build` writes, the replay
	// function's among them (a lane without CodeDir builds its own).
	codeDir := jsii.String(deadletter.DefaultCodeDir)
	if dir := getenv("HOMING_CODE_DIR"); dir != "" {
		codeDir = jsii.String(dir)
	}
	switch profile {
	case ProfileAWS:
		p := &HomingStackProps{}
		p.Orders.CodeDir = codeDir
		if taxURL != "" {
			p.TaxServiceURL = jsii.String(taxURL)
		}
		p.StackProps.Description = jsii.String("homing: dead-letter lane for order processing (profile aws)")
		p.TableDeletionProtectionParameter = jsii.Bool(true)
		return p, nil
	case ProfileLocal:
		if taxURL == "" {
			taxURL = DefaultLocalTaxServiceURL
		}
		p := &HomingStackProps{}
		p.StackProps.Description = jsii.String("homing: dead-letter lane for order processing (profile local, emulator)")
		if account, region := getenv("CDK_DEFAULT_ACCOUNT"), getenv("CDK_DEFAULT_REGION"); account != "" || region != "" {
			p.StackProps.Env = &awscdk.Environment{}
			if account != "" {
				p.StackProps.Env.Account = jsii.String(account)
			}
			if region != "" {
				p.StackProps.Env.Region = jsii.String(region)
			}
		}
		p.TaxServiceURL = jsii.String(taxURL)
		// The tax stand-in listens on 127.0.0.1 without TLS.
		p.AllowPlainHTTP = jsii.Bool(true)
		p.Orders = localLane(codeDir)
		// The consumer's defaults (10 s tax budget, 2 s margin) do not fit in
		// a 3 s invocation.
		p.Orders.Consumer.Environment = map[string]string{settings.TaxBudget.Env: "1s", settings.ConsumerDeadlineMargin.Env: "1s"}
		// The example lane (examples/) beside it, FIFO, as fast. It keeps
		// group order: the redrive is a backstop, 10 deliveries behind the
		// consumer, which parks a failing head at its 5th delivery, after
		// backoffs of 30 s, 1, 2 and 4 minutes (x0.75..1): an account
		// frozen for two schedule periods is posted after the thaw, one
		// frozen for about seven minutes is parked.
		payments := localLane(codeDir)
		payments.Queues.MaxReceiveCount = jsii.Number(deadletter.ParkMargin + PaymentsParkReceives)
		payments.Consumer.Environment = map[string]string{settings.ConsumerDeadlineMargin.Env: "1s"}
		p.Payments = &payments
		return p, nil
	default:
		return nil, fmt.Errorf("unknown profile %q: want %q or %q", profile, ProfileAWS, ProfileLocal)
	}
}

// localLane is a lane of the local profile: fast failure (3 receives, 3 s
// timeout, 18 s visibility), replay every minute with backoff in seconds,
// the host's architecture, everything destroyed with the stack.
func localLane(codeDir *string) deadletter.LaneProps {
	return deadletter.LaneProps{
		CodeDir: codeDir,
		Queues: deadletter.QueuesProps{
			MaxReceiveCount:   jsii.Number(3),
			VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(18)),
		},
		Consumer: deadletter.ConsumerProps{
			Timeout: awscdk.Duration_Seconds(jsii.Number(3)),
		},
		Architecture:  hostArchitecture(),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		LogRetention:  awslogs.RetentionDays_ONE_DAY,
		Alarms: deadletter.AlarmProps{
			// ministack rejects metric-math alarms: the consumer's failure alarm
			// counts failed records instead of their rate.
			MetricMath: jsii.Bool(false),
		},
		// A dead letter comes back within a minute or two: the backoff
		// before its first replay is seconds, not minutes.
		Replay: deadletter.ReplayProps{
			Schedule:           jsii.String("rate(1 minute)"),
			Timeout:            awscdk.Duration_Seconds(jsii.Number(30)),
			MaxReplays:         jsii.Number(3),
			BackoffBase:        awscdk.Duration_Seconds(jsii.Number(2)),
			BackoffMax:         awscdk.Duration_Seconds(jsii.Number(10)),
			ExpiryRescueWindow: awscdk.Duration_Hours(jsii.Number(24)),
			DeadlineMargin:     awscdk.Duration_Seconds(jsii.Number(3)),
			// The rate and cap the demo and the e2e tests were written
			// against (the function's defaults before issue 9): an
			// on-demand request above them is refused.
			Rate:      jsii.Number(50),
			MaxPerRun: jsii.Number(1000),
		},
	}
}

// hostArchitecture is the Lambda architecture of the machine the app runs
// on, which is what `make build` targets by default.
func hostArchitecture() awslambda.Architecture {
	if runtime.GOARCH == "arm64" {
		return awslambda.Architecture_ARM_64()
	}
	return awslambda.Architecture_X86_64()
}
