package deadletter

import (
	"math"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/internal/settings"
)

// Defaults of [ConsumerProps].
const (
	// defaultConsumerTimeoutSeconds is the consumer function's timeout.
	defaultConsumerTimeoutSeconds = 30
	// lambdaDefaultTimeoutSeconds is the timeout of an awslambda.Function
	// whose props set none (Lambda's own default).
	lambdaDefaultTimeoutSeconds = 3
	// defaultConsumerMemoryMB is the consumer function's memory size.
	defaultConsumerMemoryMB = 256
	// defaultBatchSize is the event source mapping's batch size.
	defaultBatchSize = 10
	// defaultMaxConcurrency caps the concurrent invocations the event source
	// mapping starts.
	defaultMaxConcurrency = 5
)

// Ranges of [ConsumerProps] enforced by [LaneProps.Validate], from the
// Lambda quotas.
const (
	// minMaxConcurrency and maxMaxConcurrency bound MaxConcurrency (the SQS
	// event source's maximum concurrency).
	minMaxConcurrency = 2
	maxMaxConcurrency = 1000
	// maxConsumerTimeoutSeconds is the Lambda maximum timeout (15 minutes).
	maxConsumerTimeoutSeconds = 900
	// maxBatchingWindowSeconds is the SQS event source maximum batching window.
	maxBatchingWindowSeconds = 300
	// maxBatchSizeStandard and maxBatchSizeFIFO are the batch size limits of
	// the SQS event source for standard and FIFO queues.
	maxBatchSizeStandard = 10000
	maxBatchSizeFIFO     = 10
)

// wiredEnvironment are the consumer variables the construct sets from its
// own resources; ConsumerProps.Environment must not set them.
var wiredEnvironment = []string{settings.InvalidQueueURL.Env, settings.IdempotencyTable.Env, settings.ConsumerName.Env,
	settings.MaxReceiveCount.Env, settings.FailureRecords.Env, settings.ServiceName.Env, settings.MetricsNamespace.Env,
	envKeyExpression, envPayloadHashExpression, settings.GroupOrder.Env, settings.SourceQueueURL.Env, settings.ParkingQueueURL.Env, settings.ParksTable.Env,
	settings.SourceRetention.Env, settings.MaxReceives.Env}

// ConsumerProps configures the lane's consumer: a Go bootstrap the lane
// deploys on provided.al2023 (CodeDir), or the team's own Function. The lane
// maps the source queue to it with ReportBatchItemFailures and grants it:
// consume the source queue, SendMessage on the invalid queue, GetItem,
// PutItem, UpdateItem and DeleteItem on the idempotency table, and what
// GroupOrder needs. Only Records is required.
type ConsumerProps struct {
	// Function is the team's own consumer function, in any runtime. It
	// must report partial batch failures (batchItemFailures); its role gets
	// the grants above (an imported function's only when it was imported
	// with a mutable role). When it is an awslambda.Function, the lane
	// adds the variables of [Lane.ConsumerEnvironment] to its environment;
	// an imported one must set them itself. It must belong to the lane's
	// stack (defined or imported there): the lane and the function refer
	// to each other. CodeDir, MemorySize, Environment, ReservedConcurrency
	// and FunctionProps are the lane's own function's and must be unset.
	// Default nil: the lane builds the consumer.
	Function awslambda.IFunction
	// CodeDir is the directory holding the bootstrap of the Go consumer the
	// lane builds (provided.al2023, handler bootstrap). A relative path is
	// resolved against the working directory of the CDK app. Default
	// LaneProps.CodeDir/consumer.
	CodeDir *string
	// Timeout is the consumer function's timeout. Default 30 s; 1 s..15
	// min. With a Function it is that function's timeout: an
	// awslambda.Function's own when unset (and it must agree when set);
	// required for an imported function.
	Timeout awscdk.Duration
	// MemorySize in MB. Default 256.
	MemorySize *float64
	// Name scopes the idempotency keys and signs invalid-message metadata
	// (the CONSUMER_NAME variable of both functions). Default the lane's
	// Name.
	Name *string
	// Records says whether the lane's consumer writes homing's completion
	// records (the idempotency package's records, or the documented
	// contract in another runtime). Required: the replay's canary gate,
	// breaker and already-applied removal read those records, and a lane
	// whose consumer does not write them must say so, or the canary would
	// hold it forever. See [ConsumerRecords].
	Records ConsumerRecords
	// FailureRecords says whether the consumer records why each dead
	// letter failed, in the idempotency table (FAILURE_RECORDS; the item
	// actions it has already). Default true.
	FailureRecords *bool
	// Key is the JMESPath expression of a message body's business key
	// (Powertools' eventKeyJmesPath): "orderId" for the sample's orders.
	// The replay route's "key" and the consumer's KEY_EXPRESSION. Default
	// none: messages are told apart by their message id. Required with
	// ConsumerWritesRecords: the records are keyed by it.
	Key *string
	// PayloadHash is the JMESPath expression of the part of a body whose
	// hash the consumer stores with its record (Powertools'
	// payloadValidationJmesPath): the replay route's "payloadHash" and
	// the consumer's PAYLOAD_HASH_EXPRESSION. Default none: the whole body.
	PayloadHash *string
	// GroupOrder is what a FIFO lane keeps of each message group's order
	// when a record of the group fails (package fifo; the consumer's
	// GROUP_ORDER):
	//
	//   - GroupOrderHold ("hold", the default on a FIFO lane, since order
	//     is the promise of one): a failed record, the group's head, stays
	//     in the source queue under an exponential backoff of its
	//     visibility, and SQS holds the group's later records behind it. A
	//     head that can never succeed (invalid, delivered MAX_RECEIVES
	//     times, or about to expire by the source's retention) parks its
	//     group: it goes to the invalid or parking queue, and the group's
	//     later records follow it to the parking queue, in order, until an
	//     operator runs `dlq groups release <group>`. The group's effects
	//     apply in publication order through any failure confined to it;
	//     other groups go on.
	//   - GroupOrderSkip ("skip", Powertools' skipGroupOnError): the same,
	//     but such a head goes to its queue alone and its group goes on.
	//     Cost: that head's effect comes after its successors', or never.
	//   - GroupOrderOff ("off"): SQS's own order only: once a failed
	//     record moves to the DLQ its group's later records are applied
	//     before it comes back.
	//
	// With hold or skip the redrive to the DLQ is a backstop:
	// Queues.MaxReceiveCount defaults to defaultGroupMaxReceiveCount, and
	// the consumer parks a head ParkMargin deliveries before it. The
	// consumer gets GROUP_ORDER, SOURCE_QUEUE_URL, PARKING_QUEUE_URL,
	// SOURCE_RETENTION and MAX_RECEIVES, and SendMessage on the parking
	// queue (its ChangeMessageVisibility on the source comes with
	// consuming it); with hold also LEDGER_TABLE and the parks' item
	// actions on the ledger's partition settings.GroupsPartition only.
	// The Go consumer of package batch implements it with
	// batch.Options.Groups; a Consumer.Function in another runtime that
	// does not must set "off". A standard lane has no message groups:
	// only unset or "off".
	GroupOrder *string
	// Environment adds variables of the consumer the lane builds: its
	// downstream (the sample's TAX_SERVICE_URL) and tuning (CONCURRENCY,
	// DEADLINE_MARGIN, RECORD_LIFETIME, MAX_PAYLOAD_BYTES...). It must not
	// set the variables the construct wires from its resources (those of
	// [Lane.ConsumerEnvironment]).
	Environment map[string]string
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

	// FunctionProps overrides the props of the consumer function the lane
	// builds (not with a Function): Vpc, SecurityGroups, Tracing, Layers,
	// Description, ApplicationLogLevelV2 and the rest pass through. The
	// lane owns Runtime, Handler, Code, Architecture, Timeout, MemorySize,
	// ReservedConcurrentExecutions, Role, LogGroup and the other logging
	// fields, Environment and Events: setting one is refused (see
	// [LaneProps]). Default none.
	FunctionProps *awslambda.FunctionProps
	// EventSourceProps overrides the props of the event source mapping from
	// the source queue to the consumer: Enabled, MetricsConfig and
	// ProvisionedPollerConfig pass through. The lane owns BatchSize,
	// MaxBatchingWindow, MaxConcurrency, ReportBatchItemFailures and
	// Filters (Lambda deletes a record that a filter drops: it would be
	// neither consumed nor dead-lettered). Default none.
	EventSourceProps *awslambdaeventsources.SqsEventSourceProps
}

// consumerResolved is ConsumerProps with the defaults applied, durations
// in seconds.
type consumerResolved struct {
	function awslambda.IFunction
	codeDir  string
	// ownProps are the set props that configure the consumer the lane
	// builds (an error with a Function).
	ownProps []string
	// functionTimeout is the Function's own timeout in seconds, nil when it
	// is not known (an imported function).
	functionTimeout  *float64
	timeoutSet       bool
	timeout          float64
	memory           float64
	name             string
	records          ConsumerRecords
	failureRecords   bool
	key, payloadHash *string
	// groupOrderProp is GroupOrder as given; groupOrder the order in
	// effect (see groupOrder), set once the lane's queue type is known.
	groupOrderProp      *string
	groupOrder          string
	environment         map[string]string
	reservedConcurrency *float64
	batchSize           float64
	maxConcurrency      float64
	batchingWindow      float64
	functionProps       *awslambda.FunctionProps
	eventSourceProps    *awslambdaeventsources.SqsEventSourceProps
}

// resolve applies the defaults; lane is the lane's name, the default Name,
// and codeDir the lane's CodeDir.
func (p *ConsumerProps) resolve(lane, codeDir string) consumerResolved {
	r := consumerResolved{
		function:            p.Function,
		codeDir:             filepath.Join(codeDir, "consumer"),
		timeoutSet:          p.Timeout != nil,
		timeout:             seconds(p.Timeout, defaultConsumerTimeoutSeconds),
		memory:              number(p.MemorySize, defaultConsumerMemoryMB),
		name:                lane,
		records:             p.Records,
		failureRecords:      p.FailureRecords == nil || *p.FailureRecords,
		key:                 p.Key,
		payloadHash:         p.PayloadHash,
		groupOrderProp:      p.GroupOrder,
		environment:         p.Environment,
		reservedConcurrency: p.ReservedConcurrency,
		batchSize:           number(p.BatchSize, defaultBatchSize),
		maxConcurrency:      number(p.MaxConcurrency, defaultMaxConcurrency),
		batchingWindow:      seconds(p.MaxBatchingWindow, 0),
		functionProps:       p.FunctionProps,
		eventSourceProps:    p.EventSourceProps,
	}
	if p.CodeDir != nil {
		r.codeDir = *p.CodeDir
	}
	if p.Name != nil {
		r.name = *p.Name
	}
	if fn, ok := p.Function.(awslambda.Function); ok {
		r.functionTimeout = jsii.Number(seconds(fn.Timeout(), lambdaDefaultTimeoutSeconds))
		if p.Timeout == nil {
			r.timeout = *r.functionTimeout
		}
	}
	r.ownProps = setProps(
		namedSet{"Consumer.CodeDir", p.CodeDir != nil},
		namedSet{"Consumer.MemorySize", p.MemorySize != nil},
		namedSet{"Consumer.Environment", p.Environment != nil},
		namedSet{"Consumer.ReservedConcurrency", p.ReservedConcurrency != nil},
		namedSet{"Consumer.FunctionProps", p.FunctionProps != nil})
	return r
}

// validate reports the invalid consumer props; fifo is the lane's queue
// type, which bounds the batch.
func (r consumerResolved) validate(fifo bool) []error {
	c := checker{prefix: "Consumer."}
	c.whole("MaxConcurrency", r.maxConcurrency, minMaxConcurrency, maxMaxConcurrency)
	if fifo {
		c.whole("BatchSize (FIFO)", r.batchSize, 1, maxBatchSizeFIFO)
		if r.batchingWindow != 0 {
			c.bad("MaxBatchingWindow is %s, want 0 for FIFO queues", human(r.batchingWindow))
		}
	} else {
		c.whole("BatchSize", r.batchSize, 1, maxBatchSizeStandard)
		if r.batchSize > 10 && r.batchingWindow < 1 {
			c.bad("BatchSize is %v, above 10 it needs a MaxBatchingWindow of at least 1s", r.batchSize)
		}
	}
	if r.batchingWindow < 0 || r.batchingWindow > maxBatchingWindowSeconds {
		c.bad("MaxBatchingWindow is %s, want 0s..%s", human(r.batchingWindow), human(maxBatchingWindowSeconds))
	}
	if r.reservedConcurrency != nil {
		c.whole("ReservedConcurrency", *r.reservedConcurrency, 1, math.MaxInt32)
	}
	if r.timeout < 1 || r.timeout > maxConsumerTimeoutSeconds {
		c.bad("Timeout is %s, want 1s..%s", human(r.timeout), human(maxConsumerTimeoutSeconds))
	}
	c.memory("MemorySize", r.memory)

	if r.function != nil {
		if len(r.ownProps) > 0 {
			c.bad("Function is the team's: %s configure the consumer the lane builds; set them on that function", strings.Join(r.ownProps, ", "))
		}
		switch {
		case r.functionTimeout == nil && !r.timeoutSet:
			c.bad("Timeout is required with an imported Consumer.Function: the source queue's visibility timeout is at least %dx it", visibilityFactor)
		case r.functionTimeout != nil && *r.functionTimeout != r.timeout:
			c.bad("Timeout is %s, but the Consumer.Function's timeout is %s", human(r.timeout), human(*r.functionTimeout))
		}
	} else if strings.TrimSpace(r.codeDir) == "" {
		c.bad("CodeDir is empty")
	}
	if strings.TrimSpace(r.name) == "" || settings.ConsumerName.Check(r.name) != nil {
		c.bad("Name is %q, want %s (it scopes the idempotency keys: settings.ConsumerName)", r.name, settings.ConsumerName.Want())
	}
	for _, key := range wiredEnvironment {
		if _, ok := r.environment[key]; ok {
			c.bad("Environment sets %s, which the lane wires itself", key)
		}
	}
	errs := append(c.errs, r.validateContract()...)
	errs = append(errs, r.validateGroupOrder(fifo)...)
	errs = append(errs, functionRule("Consumer").refused("Consumer.FunctionProps", r.functionProps)...)
	errs = append(errs, eventSourceRule.refused("Consumer.EventSourceProps", r.eventSourceProps)...)
	return errs
}

// functionRule is the override rule of the lane's functions, the
// consumer's or the replay's (group names it): what the lane sets on both
// (see overrides.go).
func functionRule(group string) overrideRule {
	rule := overrideRule{
		owns: []ownedField{
			{"Runtime", "the lane runs a Go bootstrap on provided.al2023"},
			{"Handler", "the lane runs a Go bootstrap (handler bootstrap)"},
			{"Code", "set " + group + ".CodeDir"},
			{"Architecture", "set LaneProps.Architecture"},
			{"Timeout", "set " + group + ".Timeout"},
			{"MemorySize", "set " + group + ".MemorySize"},
			{"ReservedConcurrentExecutions", "set " + group + ".ReservedConcurrency"},
			{"Role", "the lane's role holds only the grants the function's ports need; add statements with InitialPolicy"},
			{"LogGroup", "the function logs to the lane's log group, which its role may write and the outputs name"},
			{"LogRetention", "set LaneProps.LogRetention"},
			{"LogRetentionRole", "the lane's log group keeps LaneProps.LogRetention itself"},
			{"LogRetentionRetryOptions", "the lane's log group keeps LaneProps.LogRetention itself"},
			{"LogRemovalPolicy", "set LaneProps.RemovalPolicy"},
			{"LoggingFormat", "the function logs JSON, which the runbook's queries read"},
			{"LogFormat", "the function logs JSON, which the runbook's queries read"},
			{"SystemLogLevel", "set LaneProps.SystemLogLevel"},
			{"SystemLogLevelV2", "set LaneProps.SystemLogLevel"},
			{"ApplicationLogLevel", "it is deprecated: set ApplicationLogLevelV2"},
			{"Environment", "set " + group + ".Environment"},
		},
		defaults: []string{"Description", "ApplicationLogLevelV2"},
	}
	if group == "Consumer" {
		rule.owns = append(rule.owns, ownedField{"Events", "the lane maps the source queue to the consumer (Consumer.EventSourceProps); add other sources to Lane.Consumer()"})
	} else {
		rule.owns = append(rule.owns,
			ownedField{"Events", "the lane's schedule invokes the replay function (Replay.Schedule)"},
			ownedField{"RetryAttempts", "a failed scheduled run is not retried: the next schedule is the retry"},
			ownedField{"MaxEventAge", "the lane configures the replay's asynchronous invocation (no retries)"},
			ownedField{"OnFailure", "the lane configures the replay's asynchronous invocation (no retries)"},
			ownedField{"OnSuccess", "the lane configures the replay's asynchronous invocation (no retries)"})
	}
	return rule
}

// eventSourceRule is the override rule of the consumer's event source
// mapping (see overrides.go).
var eventSourceRule = overrideRule{owns: []ownedField{
	{"BatchSize", "set Consumer.BatchSize"},
	{"MaxBatchingWindow", "set Consumer.MaxBatchingWindow"},
	{"MaxConcurrency", "set Consumer.MaxConcurrency"},
	{"ReportBatchItemFailures", "the consumer reports partial batch failures, always"},
	{"Filters", "Lambda deletes a record that a filter drops: it would be neither consumed nor dead-lettered"},
	{"FilterEncryption", "the lane sets no filters"},
}}
