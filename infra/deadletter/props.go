package deadletter

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
)

// Defaults of [LaneProps]. They are the production-grade values; a local
// emulator profile overrides some of them with faster ones.
const (
	// DefaultMaxReceiveCount is how many receives SQS allows before it moves
	// a message from the source queue to the DLQ.
	DefaultMaxReceiveCount = 10
	// DefaultSourceRetentionDays is the source queue's retention (the SQS default).
	DefaultSourceRetentionDays = 4
	// DefaultDeadLetterRetentionDays is the retention of the DLQ, the invalid
	// queue and the parking queue (the SQS maximum).
	DefaultDeadLetterRetentionDays = 14
	// DefaultConsumerTimeoutSeconds is the consumer function's timeout.
	DefaultConsumerTimeoutSeconds = 30
	// DefaultConsumerMemoryMB is the consumer function's memory size.
	DefaultConsumerMemoryMB = 256
	// DefaultConsumerName scopes idempotency keys (the CONSUMER_NAME variable).
	DefaultConsumerName = "invoice"
	// DefaultBatchSize is the event source mapping's batch size.
	DefaultBatchSize = 10
	// DefaultMaxConcurrency caps the concurrent invocations the event source
	// mapping starts.
	DefaultMaxConcurrency = 5
	// DefaultCodeDir holds one directory per function with its bootstrap
	// binary, as `make build` writes them, relative to infra/.
	DefaultCodeDir = "../bin"
	// VisibilityFactor is the minimum ratio of the source queue's visibility
	// timeout to the consumer timeout, as AWS recommends for SQS event sources.
	VisibilityFactor = 6
	// DeadLetterAgeAlarmRatio is the fraction of the DLQ retention at which the
	// age of the oldest DLQ message raises an alarm, so that nothing expires
	// unseen.
	DeadLetterAgeAlarmRatio = 0.75
)

// Ranges enforced by [LaneProps.Validate], from the SQS and Lambda quotas.
const (
	// MinMaxReceiveCount and MaxMaxReceiveCount bound MaxReceiveCount.
	MinMaxReceiveCount = 1
	MaxMaxReceiveCount = 1000
	// MinMaxConcurrency and MaxMaxConcurrency bound MaxConcurrency (the SQS
	// event source's maximum concurrency).
	MinMaxConcurrency = 2
	MaxMaxConcurrency = 1000
	// MinRetentionSeconds and MaxRetentionSeconds bound SQS message retention.
	MinRetentionSeconds = 60
	MaxRetentionSeconds = 14 * 24 * 3600
	// MaxVisibilitySeconds is the SQS maximum visibility timeout (12 hours).
	MaxVisibilitySeconds = 12 * 3600
	// MaxConsumerTimeoutSeconds is the Lambda maximum timeout (15 minutes).
	MaxConsumerTimeoutSeconds = 900
	// MaxBatchingWindowSeconds is the SQS event source maximum batching window.
	MaxBatchingWindowSeconds = 300
	// MaxBatchSizeStandard and MaxBatchSizeFIFO are the batch size limits of
	// the SQS event source for standard and FIFO queues.
	MaxBatchSizeStandard = 10000
	MaxBatchSizeFIFO     = 10
)

// ErrInvalidProps is wrapped by every error that [LaneProps.Validate] returns,
// and so by the value [NewLane] panics with.
var ErrInvalidProps = errors.New("invalid deadletter.LaneProps")

// wiredEnvironment are the consumer variables the construct sets from its own
// resources; ConsumerEnvironment must not set them.
var wiredEnvironment = []string{"INVALID_QUEUE_URL", "IDEMPOTENCY_TABLE", "TAX_SERVICE_URL", "CONSUMER_NAME"}

// LaneProps configures one [Lane]. Every field is optional except
// TaxServiceURL; a nil (or zero) field takes the default named in its comment.
// Numbers are *float64 and durations awscdk.Duration, as in the CDK's own
// props (jsii.Number(3), awscdk.Duration_Seconds(jsii.Number(5))), so that an
// explicit 0 is told apart from "unset" and rejected where it is invalid.
type LaneProps struct {
	// Fifo makes all four queues FIFO queues (names end in .fifo) with
	// content-based deduplication off: producers set MessageDeduplicationId.
	// Default false (standard queues).
	Fifo *bool

	// SourceRetention is how long the source queue keeps a message.
	// Default 4 days; 60 s..14 days.
	SourceRetention awscdk.Duration
	// DeadLetterRetention is how long the DLQ, the invalid queue and the
	// parking queue keep a message. It must be longer than SourceRetention:
	// SQS keeps a message's original enqueue time when it moves it to the DLQ.
	// Default 14 days (the SQS maximum).
	DeadLetterRetention awscdk.Duration
	// MaxReceiveCount is the number of receives after which SQS moves a
	// message from the source queue to the DLQ. Default 10; 1..1000.
	MaxReceiveCount *float64
	// VisibilityTimeout is the source queue's visibility timeout.
	// Default 6x ConsumerTimeout plus MaxBatchingWindow; at least 6x
	// ConsumerTimeout, at most 12 hours.
	VisibilityTimeout awscdk.Duration

	// CodeDir is the directory holding one sub-directory per function with
	// its `bootstrap` binary (`make build` writes bin/<function>/bootstrap).
	// The consumer's code is CodeDir/consumer. A relative path is resolved
	// against the working directory of the CDK app. Default "../bin".
	CodeDir *string
	// Architecture of the functions; it must match the bootstrap build
	// (ARCH=arm64 for AWS). Default ARM_64.
	Architecture awslambda.Architecture
	// ConsumerTimeout is the consumer function's timeout. Default 30 s;
	// 1 s..15 min.
	ConsumerTimeout awscdk.Duration
	// ConsumerMemorySize in MB. Default 256.
	ConsumerMemorySize *float64
	// ConsumerName scopes the idempotency keys and signs invalid-message
	// metadata (the CONSUMER_NAME variable). Default "invoice".
	ConsumerName *string
	// TaxServiceURL is the base URL of the tax and invoice service (the
	// TAX_SERVICE_URL variable); it may be a token such as a CfnParameter.
	// Required.
	TaxServiceURL *string
	// ConsumerEnvironment adds tuning variables of the consumer (CONCURRENCY,
	// DEADLINE_MARGIN, TAX_BUDGET, RECORD_LIFETIME, MAX_PAYLOAD_BYTES). It
	// must not set the variables the construct wires from its resources:
	// INVALID_QUEUE_URL, IDEMPOTENCY_TABLE, TAX_SERVICE_URL and CONSUMER_NAME.
	ConsumerEnvironment map[string]string
	// ReservedConcurrency reserves (and caps) the consumer's concurrency.
	// Default none: MaxConcurrency already caps what the queue starts.
	ReservedConcurrency *float64

	// BatchSize is the event source mapping's batch size. Default 10;
	// 1..10 for FIFO queues, 1..10000 otherwise (above 10 needs a
	// MaxBatchingWindow of at least 1 s).
	BatchSize *float64
	// MaxConcurrency caps the concurrent invocations the event source mapping
	// starts. Default 5; 2..1000.
	MaxConcurrency *float64
	// MaxBatchingWindow is how long the event source mapping gathers records
	// before it invokes. Default 0; 0..300 s; must be 0 for FIFO queues.
	MaxBatchingWindow awscdk.Duration

	// LogRetention of the consumer's log group. Default one month.
	LogRetention awslogs.RetentionDays
	// RemovalPolicy of everything that holds data or history: the queues,
	// the tables, the log group and the alarm topic's key. Default RETAIN;
	// a throw-away emulator stack uses DESTROY.
	RemovalPolicy awscdk.RemovalPolicy
	// AlarmPeriod is the period over which every alarm evaluates its metric.
	// Default 1 minute.
	AlarmPeriod awscdk.Duration

	// The replay function and its EventBridge schedule are not part of the
	// lane yet. The issue that adds them adds a `Replay *ReplayProps` field
	// here (schedule, max replays, backoff, rate, cap) and the method
	// lane.addReplay in lane.go; see the comment at its call site there.
}

// resolved is LaneProps with every default applied and every duration in
// seconds, as Validate checks it and NewLane builds from it.
type resolved struct {
	fifo                bool
	sourceRetention     float64
	deadLetterRetention float64
	maxReceiveCount     float64
	visibility          float64
	codeDir             string
	architecture        awslambda.Architecture
	timeout             float64
	memory              float64
	consumerName        string
	taxServiceURL       *string
	environment         map[string]string
	reservedConcurrency *float64
	batchSize           float64
	maxConcurrency      float64
	batchingWindow      float64
	logRetention        awslogs.RetentionDays
	removalPolicy       awscdk.RemovalPolicy
	alarmPeriod         float64
}

// seconds converts d to seconds, or returns def when d is nil. A duration
// that is an unresolved token panics, as the CDK does.
func seconds(d awscdk.Duration, def float64) float64 {
	if d == nil {
		return def
	}
	return *d.ToMilliseconds(nil) / 1000
}

func number(n *float64, def float64) float64 {
	if n == nil {
		return def
	}
	return *n
}

func (p *LaneProps) resolve() resolved {
	r := resolved{
		fifo:                p.Fifo != nil && *p.Fifo,
		sourceRetention:     seconds(p.SourceRetention, DefaultSourceRetentionDays*24*3600),
		deadLetterRetention: seconds(p.DeadLetterRetention, DefaultDeadLetterRetentionDays*24*3600),
		maxReceiveCount:     number(p.MaxReceiveCount, DefaultMaxReceiveCount),
		codeDir:             DefaultCodeDir,
		architecture:        p.Architecture,
		timeout:             seconds(p.ConsumerTimeout, DefaultConsumerTimeoutSeconds),
		memory:              number(p.ConsumerMemorySize, DefaultConsumerMemoryMB),
		consumerName:        DefaultConsumerName,
		taxServiceURL:       p.TaxServiceURL,
		environment:         p.ConsumerEnvironment,
		reservedConcurrency: p.ReservedConcurrency,
		batchSize:           number(p.BatchSize, DefaultBatchSize),
		maxConcurrency:      number(p.MaxConcurrency, DefaultMaxConcurrency),
		batchingWindow:      seconds(p.MaxBatchingWindow, 0),
		logRetention:        p.LogRetention,
		removalPolicy:       p.RemovalPolicy,
		alarmPeriod:         seconds(p.AlarmPeriod, 60),
	}
	r.visibility = seconds(p.VisibilityTimeout, VisibilityFactor*r.timeout+r.batchingWindow)
	if p.CodeDir != nil {
		r.codeDir = *p.CodeDir
	}
	if r.architecture == nil {
		r.architecture = awslambda.Architecture_ARM_64()
	}
	if p.ConsumerName != nil {
		r.consumerName = *p.ConsumerName
	}
	if r.logRetention == "" {
		r.logRetention = awslogs.RetentionDays_ONE_MONTH
	}
	if r.removalPolicy == "" {
		r.removalPolicy = awscdk.RemovalPolicy_RETAIN
	}
	return r
}

// Validate reports every invalid field at once, each error naming the field,
// its value and the accepted range; the error wraps [ErrInvalidProps]. It
// does not check that the consumer's bootstrap exists: NewLane does.
//
// A duration that is an unresolved token makes Validate panic.
func (p *LaneProps) Validate() error {
	if p == nil {
		return fmt.Errorf("%w: props are nil (TaxServiceURL is required)", ErrInvalidProps)
	}
	return p.resolve().validate()
}

func (r resolved) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	whole := func(name string, v, lo, hi float64) {
		if v != math.Trunc(v) || v < lo || v > hi {
			bad("%s is %v, want a whole number in %v..%v", name, v, lo, hi)
		}
	}

	whole("MaxReceiveCount", r.maxReceiveCount, MinMaxReceiveCount, MaxMaxReceiveCount)
	whole("MaxConcurrency", r.maxConcurrency, MinMaxConcurrency, MaxMaxConcurrency)
	if r.fifo {
		whole("BatchSize (FIFO)", r.batchSize, 1, MaxBatchSizeFIFO)
		if r.batchingWindow != 0 {
			bad("MaxBatchingWindow is %vs, want 0 for FIFO queues", r.batchingWindow)
		}
	} else {
		whole("BatchSize", r.batchSize, 1, MaxBatchSizeStandard)
		if r.batchSize > 10 && r.batchingWindow < 1 {
			bad("BatchSize is %v, above 10 it needs a MaxBatchingWindow of at least 1s", r.batchSize)
		}
	}
	if r.batchingWindow < 0 || r.batchingWindow > MaxBatchingWindowSeconds {
		bad("MaxBatchingWindow is %vs, want 0s..%ds", r.batchingWindow, MaxBatchingWindowSeconds)
	}
	if r.reservedConcurrency != nil {
		whole("ReservedConcurrency", *r.reservedConcurrency, 1, math.MaxInt32)
	}

	for _, f := range [...]struct {
		name string
		v    float64
	}{{"SourceRetention", r.sourceRetention}, {"DeadLetterRetention", r.deadLetterRetention}} {
		if f.v < MinRetentionSeconds || f.v > MaxRetentionSeconds {
			bad("%s is %vs, want %ds..%ds (60 seconds..14 days)", f.name, f.v, MinRetentionSeconds, MaxRetentionSeconds)
		}
	}
	if r.deadLetterRetention <= r.sourceRetention {
		bad("DeadLetterRetention (%vs) must be longer than SourceRetention (%vs): SQS keeps a message's original enqueue time when it moves it to the DLQ",
			r.deadLetterRetention, r.sourceRetention)
	}

	if r.timeout < 1 || r.timeout > MaxConsumerTimeoutSeconds {
		bad("ConsumerTimeout is %vs, want 1s..%ds", r.timeout, MaxConsumerTimeoutSeconds)
	}
	if r.visibility < VisibilityFactor*r.timeout {
		bad("VisibilityTimeout is %vs, want at least %dx ConsumerTimeout (%vs)", r.visibility, VisibilityFactor, VisibilityFactor*r.timeout)
	}
	if r.visibility > MaxVisibilitySeconds {
		bad("VisibilityTimeout is %vs, want at most %ds (12 hours)", r.visibility, MaxVisibilitySeconds)
	}
	if r.memory < 128 || r.memory > 10240 || r.memory != math.Trunc(r.memory) {
		bad("ConsumerMemorySize is %v, want a whole number of MB in 128..10240", r.memory)
	}
	if r.alarmPeriod < 60 || math.Mod(r.alarmPeriod, 60) != 0 {
		bad("AlarmPeriod is %vs, want a whole number of minutes", r.alarmPeriod)
	}

	if r.taxServiceURL == nil || *r.taxServiceURL == "" {
		bad("TaxServiceURL is required")
	}
	if strings.TrimSpace(r.consumerName) == "" {
		bad("ConsumerName is empty")
	}
	if strings.TrimSpace(r.codeDir) == "" {
		bad("CodeDir is empty")
	}
	for _, key := range wiredEnvironment {
		if _, ok := r.environment[key]; ok {
			bad("ConsumerEnvironment sets %s, which the lane wires itself", key)
		}
	}

	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidProps, errors.Join(errs...))
}

// codePath is the absolute asset directory of function under CodeDir.
func (r resolved) codePath(function string) (string, error) {
	dir, err := filepath.Abs(filepath.Join(r.codeDir, function))
	if err != nil {
		return "", fmt.Errorf("resolve code directory of %s: %w", function, err)
	}
	return dir, nil
}
