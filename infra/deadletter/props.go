package deadletter

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/settings"
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
	// LambdaDefaultTimeoutSeconds is the timeout of an awslambda.Function
	// whose props set none (Lambda's own default).
	LambdaDefaultTimeoutSeconds = 3
	// DefaultConsumerMemoryMB is the consumer function's memory size.
	DefaultConsumerMemoryMB = 256
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
	// DefaultReplaySchedule is the replay function's EventBridge schedule.
	DefaultReplaySchedule = "rate(15 minutes)"
	// DefaultReplayTimeoutSeconds is the replay function's timeout: at the
	// function's default RATE it leaves room for a run of MAX_PER_RUN
	// (100,000 messages at 250 msgs/s take 400 s) and ends before the
	// next scheduled run starts (docs/OPERATIONS.md, "How long a backlog
	// takes").
	DefaultReplayTimeoutSeconds = 10 * 60
	// DefaultReplayMemoryMB is the replay function's memory size.
	DefaultReplayMemoryMB = 256
	// DeadLetterAgeAlarmRatio is the fraction of the DLQ retention at which the
	// age of the oldest dead letter the replay examined (its
	// OldestDeadLetterAgeSeconds) raises an alarm, so that nothing expires
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
	// MinReplayTimeoutSeconds and MaxReplayTimeoutSeconds bound
	// ReplayProps.Timeout: a run needs time for its gates and at least one
	// batch beside the deadline margin.
	MinReplayTimeoutSeconds = 10
	MaxReplayTimeoutSeconds = 900
	// MaxReplayIntervalSeconds bounds ReplayProps.Interval: the report
	// alarms' period, twice it, stays within a day.
	MaxReplayIntervalSeconds = 12 * 3600
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
var wiredEnvironment = []string{settings.InvalidQueueURL.Env, settings.IdempotencyTable.Env, settings.ConsumerName.Env, settings.ServiceName.Env, settings.MetricsNamespace.Env,
	EnvKeyExpression, EnvPayloadHashExpression}

// replayWiredEnvironment are the replay variables the construct sets from its
// own resources and props; ReplayProps.Environment must not set them, nor any
// variable of [replayTuning].
var replayWiredEnvironment = []string{settings.ReplayRoutes.Env, settings.LedgerTable.Env, settings.IdempotencyTable.Env, settings.ConsumerName.Env,
	settings.HealthURL.Env, settings.ServiceName.Env, settings.MetricsNamespace.Env}

// LaneProps configures one [Lane]. Every field is optional; a nil (or zero)
// field takes the default named in its comment.
// Numbers are *float64 and durations awscdk.Duration, as in the CDK's own
// props (jsii.Number(3), awscdk.Duration_Seconds(jsii.Number(5))), so that an
// explicit 0 is told apart from "unset" and rejected where it is invalid.
type LaneProps struct {
	// Name is the lane's name: the value of its settings.TagLane tag, the
	// prefix of its stack outputs (settings.OutputID(Name, key)), the
	// default of ConsumerName and Replay.RouteName, what `dlq --lane` takes.
	// Two lanes of one stack need different names. Default the construct id
	// in kebab case ("Orders" -> "orders", "PaymentsLedger" ->
	// "payments-ledger"); 1..64 ASCII letters, digits, '-' and '_',
	// starting with a letter.
	Name *string

	// Fifo makes all four queues FIFO queues (names end in .fifo) with
	// content-based deduplication off: producers set MessageDeduplicationId.
	// Default false (standard queues), or the SourceQueue's type.
	Fifo *bool

	// SourceQueue is an existing source queue, the team's own, instead of
	// one the lane creates. The lane's promise (a message that keeps
	// failing reaches the DLQ after MaxReceiveCount receives) rests on the
	// queue's redrive policy, which the lane must set, and CloudFormation can
	// only set it on a queue of the lane's own stack. So the queue must be an
	// awssqs.Queue defined in the lane's stack (to adopt a deployed queue,
	// `cdk import` it into the stack first), whose name the lane knows (the
	// DLQ's redrive allow-policy names it by name: by reference it would be
	// a cycle): its QueueName, or SourceQueueName for a deployed queue
	// without one. A queue that redrives to a dead-letter queue of its own
	// needs that queue as DeadLetterQueue, which the lane then adopts as
	// its DLQ (docs/ADOPTING.md walks through both).
	//
	// On that queue the lane sets its RedrivePolicy (the DLQ, with
	// MaxReceiveCount) and the lane's tags, and its MaximumMessageSize only
	// if the queue leaves it unset: SQS's default, MaxMessageBytes, would
	// accept messages that the invalid and parking queues cannot take with
	// the lane's metadata, so the lane sets SourceMaxMessageBytes (an update
	// without interruption) and warns at synth; set MaxMessageSizeBytes on
	// the queue, at most SourceMaxMessageBytes, to silence the warning. What
	// it cannot set it checks instead: the queue's visibility timeout is at
	// least 6x ConsumerTimeout (plus MaxBatchingWindow), its retention is
	// shorter than DeadLetterRetention, a MaximumMessageSize of its own
	// leaves room for the lane's metadata (at most SourceMaxMessageBytes),
	// and its type is the lane's (Fifo). SourceRetention and
	// VisibilityTimeout are the lane's own queue's props and must be unset;
	// the queue's encryption, policy and redrive allow-policy stay the
	// team's (cdk-nag checks them as any other queue of the stack). Default nil: the lane creates the queue.
	SourceQueue awssqs.IQueue
	// SourceQueueName is the deployed name of a SourceQueue that has no
	// QueueName in its props (CloudFormation generated one: the queue's
	// physical id, `aws cloudformation describe-stack-resource`). The DLQ's
	// redrive allow-policy names the queue by it; the queue itself is left
	// as it is. Adding a QueueName to a deployed queue instead would make
	// CloudFormation replace it, and its messages would be lost. Only with
	// a SourceQueue; it must agree with the queue's own QueueName if the
	// queue has one. Default none.
	SourceQueueName *string
	// DeadLetterQueue is the team's existing dead-letter queue, the one
	// its SourceQueue redrives to, adopted as the lane's DLQ so that its
	// messages stay and are replayed. It must be an awssqs.Queue of the
	// lane's stack (`cdk import` a deployed one), of the lane's type, with
	// no dead-letter queue and no redrive allow-policy of its own (the lane
	// sets byQueue, naming the source queue). The lane sets its
	// MessageRetentionPeriod to DeadLetterRetention only if it leaves it
	// unset (an update without interruption; a warning says so), its
	// redrive allow-policy, tags and queue policy statements; its
	// encryption and its name stay the team's. Its retention must be longer
	// than the source queue's. Only with a SourceQueue. Default nil: the
	// lane creates the DLQ.
	DeadLetterQueue awssqs.IQueue
	// AllowQueueReplacement lets the lane make a change that makes
	// CloudFormation replace a queue: naming a SourceQueue that has no
	// QueueName and no SourceQueueName. A replaced queue is a new, empty
	// queue; the messages of the old one are lost. Say so only for a queue
	// that is not deployed yet, or empty. Default false: refused at synth.
	AllowQueueReplacement *bool

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
	// When set, the replay function's code is CodeDir/replay (functions/replay
	// of github.com/homingdlq/homing; see ReplayProps.CodeDir for what the
	// lane does without it), the consumer's CodeDir/consumer unless
	// ConsumerCodeDir or ConsumerFunction says otherwise. A relative path
	// is resolved against the working directory of the CDK app. Default
	// "../bin".
	CodeDir *string

	// The consumer: the lane builds a provided.al2023 function from a Go
	// bootstrap (ConsumerCodeDir, by default CodeDir/consumer), or takes
	// the team's own function (ConsumerFunction), in any runtime. Either
	// way it wires the source queue to it (an event source mapping with
	// ReportBatchItemFailures, BatchSize, MaxConcurrency, MaxBatchingWindow)
	// and grants it: consume the source queue, SendMessage on the invalid
	// queue, GetItem, PutItem, UpdateItem and DeleteItem on the idempotency
	// table.

	// ConsumerFunction is the team's own consumer function, in any runtime.
	// It must report partial batch failures (batchItemFailures); its role
	// gets the grants above (an imported function's only when it was
	// imported with a mutable role). When it is an awslambda.Function, the
	// lane adds the variables of [Lane.ConsumerEnvironment] to its
	// environment; an imported one must set them itself. It must belong to
	// the lane's stack (defined or imported there): the lane and the
	// function refer to each other. ConsumerCodeDir, ConsumerMemorySize,
	// ConsumerEnvironment and ReservedConcurrency are the lane's own
	// function's and must be unset. Default nil: the lane builds the
	// consumer.
	ConsumerFunction awslambda.IFunction
	// ConsumerCodeDir is the directory holding the bootstrap of the Go
	// consumer the lane builds (provided.al2023, handler bootstrap). A
	// relative path is resolved against the working directory of the CDK
	// app. Default CodeDir/consumer.
	ConsumerCodeDir *string
	// Architecture of the functions; it must match the bootstrap build
	// (ARCH=arm64 for AWS). Default ARM_64.
	Architecture awslambda.Architecture
	// ConsumerTimeout is the consumer function's timeout. Default 30 s;
	// 1 s..15 min. With a ConsumerFunction it is that function's timeout:
	// an awslambda.Function's own when unset (and it must agree when set);
	// required for an imported function.
	ConsumerTimeout awscdk.Duration
	// ConsumerMemorySize in MB. Default 256.
	ConsumerMemorySize *float64
	// ConsumerName scopes the idempotency keys and signs invalid-message
	// metadata (the CONSUMER_NAME variable of both functions). Default the
	// lane's Name.
	ConsumerName *string
	// ConsumerRecords says whether the lane's consumer writes homing's
	// completion records (the idempotency package's records, or the
	// documented contract in another runtime). Required: the replay's
	// canary gate, breaker and already-applied removal read those records,
	// and a lane whose consumer does not write them must say so, or the
	// canary would hold it forever. See [ConsumerRecords].
	ConsumerRecords ConsumerRecords
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
	// ConsumerEnvironment adds variables of the consumer the lane builds:
	// its downstream (the sample's TAX_SERVICE_URL) and tuning (CONCURRENCY,
	// DEADLINE_MARGIN, RECORD_LIFETIME, MAX_PAYLOAD_BYTES...). It must not
	// set the variables the construct wires from its resources (those of
	// [Lane.ConsumerEnvironment]).
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

	// LogRetention of the functions' log groups. Default one month.
	LogRetention awslogs.RetentionDays
	// RemovalPolicy of everything that holds data or history: the queues,
	// the tables, the log groups and the alarm topic's key. Default
	// RETAIN_ON_UPDATE_OR_DELETE (CloudFormation's RetainExceptOnCreate):
	// kept when the stack is deleted or an update removes or replaces them,
	// but deleted by the rollback of the deploy that created them, so that
	// a failed first deploy leaves nothing behind (the source queue's name
	// above all) and can be retried. RETAIN keeps them on that rollback
	// too; a throw-away emulator stack uses DESTROY.
	RemovalPolicy awscdk.RemovalPolicy
	// AlarmPeriod is the period over which every alarm evaluates its metric.
	// Default 1 minute.
	AlarmPeriod awscdk.Duration
	// AlarmTopic is an existing topic that receives the lane's alarm and OK
	// transitions instead of one the lane creates (with its own KMS key).
	// The lane adds a statement to its policy that lets CloudWatch alarms of
	// this account publish; an imported topic's policy (and its KMS key,
	// if it has one) must allow that already, since the CDK cannot change
	// an imported topic. Default nil: the lane creates the topic.
	AlarmTopic awssns.ITopic

	// Metrics and the alarms that page early (issue 11; see [Alarms]).

	// ServiceName is both functions' POWERTOOLS_SERVICE_NAME, the Lane
	// dimension of their EMF metrics. Default the lane's construct path
	// (for the stack's lane, "Homing/Orders"): unique in the app, so the
	// metrics of two lanes never merge. 1..1024 printable ASCII characters.
	ServiceName *string
	// MetricsNamespace is both functions' POWERTOOLS_METRICS_NAMESPACE.
	// Default settings.MetricsNamespace.Default ("Homing"); CloudWatch's namespace
	// rules, not AWS/.
	MetricsNamespace *string
	// ConsumerFailureRateThreshold: the ConsumerFailures alarm fires when
	// more than this percentage of the consumer's records failed in one
	// AlarmPeriod (so a lone failed record, 100%, fires it). Default 10;
	// above 0, below 100.
	ConsumerFailureRateThreshold *float64
	// ConsumerFailedRecordsThreshold replaces the rate when MetricMath is
	// false: the alarm fires when more than this many records failed in
	// one AlarmPeriod. Default 0; a whole number.
	ConsumerFailedRecordsThreshold *float64
	// SourceAgeThreshold: the SourceAge alarm fires when the source queue's
	// oldest message is older than this in one AlarmPeriod. Default the
	// source queue's visibility timeout plus ConsumerTimeout plus
	// SourceAgeMarginSeconds (270 s on the defaults): older than a message
	// that failed once and then succeeded can be, so that a transient
	// failure does not page (ConsumerFailures does when it matters); at
	// least 1 s.
	SourceAgeThreshold awscdk.Duration
	// MetricMath lets the ConsumerFailures alarm compute a failure rate
	// with metric math, and the dashboard show it and the invalid records
	// by reason. Default true; false for emulators that reject metric-math
	// alarms (the local profile, ministack): the alarm then counts failed
	// records against ConsumerFailedRecordsThreshold.
	MetricMath *bool
	// AlarmActions are further actions of every alarm's ALARM and OK
	// transitions, besides AlarmTopic (for example an SNS action on a
	// paging service's topic). Default none.
	AlarmActions []awscloudwatch.IAlarmAction

	// Who may steer the lane from outside (issue 11): the queue policies,
	// the tables' protection, the functions' platform logs.

	// AllowNativeRedrive lets principals with the permission start SQS's
	// own message move task ("Start DLQ redrive", sqs:StartMessageMoveTask)
	// on the DLQ. Default false: the DLQ's queue policy denies it to
	// everyone, because a move task has no filter, no cap per order, no
	// ledger and no parking (docs/OPERATIONS.md, caution 4).
	AllowNativeRedrive *bool
	// OperatorArns are IAM principal ARNs (ArnLike patterns, e.g. an SSO
	// role's arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_Ops_*)
	// that may send to the parking queue besides the replay function: the
	// operators who run `dlq replay`, which parks what it cannot replay.
	// This names them in the queue policy only; [Lane.GrantOperator] names
	// a role of the app and grants it what the runbook needs too. Default
	// none. The DLQ accepts messages only from SQS's redrive, the
	// invalid queue only from the consumer.
	OperatorArns []string
	// HealthURL gates replay: the replay function (HEALTH_URL) probes
	// GET HealthURL/health before a run and holds the run while the
	// downstream is unhealthy. Default none: no health gate (the canary
	// and refill gates still hold). An http:// or https:// URL, or a token
	// (a deploy parameter).
	HealthURL *string
	// DeletionProtection of both tables. Default true with RemovalPolicy
	// RETAIN, false otherwise: a throw-away stack (DESTROY) must be
	// deletable, and the rollback of a failed first deploy
	// (RETAIN_ON_UPDATE_OR_DELETE, the default) must be able to delete the
	// tables it created (DynamoDB refuses to delete a protected table, and
	// CloudFormation's rollback would stop there). Turn it on once the
	// first deploy has succeeded; the stack of this repository does that
	// with its TableDeletionProtection deploy parameter.
	DeletionProtection *bool

	// QueueEncryptionKey encrypts the lane's own queues (the DLQ, the
	// invalid and the parking queue, and the source queue when the lane
	// creates it) with this KMS key (SSE-KMS) instead of SQS-managed keys.
	// Every grant the lane makes on a queue with a key (its own or an
	// adopted SourceQueue's EncryptionMasterKey) also grants the key
	// actions SQS needs: kms:GenerateDataKey and kms:Decrypt to send,
	// kms:Decrypt to receive. Default nil: SQS-managed keys.
	QueueEncryptionKey awskms.IKey
	// SystemLogLevel of both functions' platform logs (JSON). Default INFO,
	// which keeps the START and REPORT lines (duration, billed duration, max
	// memory, init duration); WARN drops them.
	SystemLogLevel awslambda.SystemLogLevel

	// Replay configures the replay function and its schedule. Default nil:
	// every ReplayProps default.
	Replay *ReplayProps
}

// ReplayProps configures the lane's replay function (functions/replay) and
// the EventBridge rule that invokes it. Every field is optional.
//
// The tuning fields (MaxReplays through Workers) become the function's
// environment variables of the same meaning; an unset field sets no
// variable, so the function's own default, named in the field's comment,
// applies. Validate checks them against the function's ranges and the lane.
type ReplayProps struct {
	// RouteName names the lane's one route in REPLAY_ROUTES (operators select
	// it with {"routes":["<name>"]}). Default the lane's Name.
	RouteName *string
	// Schedule is the rule's schedule expression, "rate(...)" or "cron(...)".
	// Default "rate(15 minutes)".
	Schedule *string
	// Enabled is the rule's state as deployed. Default true. During an
	// incident operators stop scheduled replay without a deploy:
	// `aws events disable-rule --name <ReplayScheduleName output>`, and
	// enable-rule to resume. CloudFormation does not notice that change; only
	// a deploy that changes the rule applies this state again.
	Enabled *bool
	// Interval is the longest time between two scheduled runs. The replay
	// function reports each run (its heartbeat and its dead letters'
	// expiry, see [Alarms]) and the alarms on that report evaluate periods
	// of twice the Interval. Default the interval of a rate() Schedule;
	// required with a cron() Schedule or a token; whole minutes,
	// 1 min..12 h.
	Interval awscdk.Duration
	// Timeout of the replay function. Default 10 minutes; 10 s..15 min.
	// Keep it shorter than the Schedule's interval.
	Timeout awscdk.Duration
	// MemorySize in MB. Default 256.
	MemorySize *float64
	// ReservedConcurrency reserves (and caps) the replay function's
	// concurrency. Default none: Lambda keeps 100 of the account's
	// concurrency unreserved, so any reservation fails the deploy in an
	// account whose quota is small (new accounts start at 10). Runs that
	// overlap are safe (the ledger leases every message to one run), so set
	// it to 1 only to keep a scheduled run and an on-demand one from
	// overlapping, in an account whose quota leaves at least 100 unreserved
	// after every reservation (the default quota, 1000, does).
	ReservedConcurrency *float64

	// MaxReplays is how often a message is replayed before it is parked
	// (MAX_REPLAYS). Function default 3; 1..100.
	MaxReplays *float64
	// BackoffBase is the backoff ceiling before the first replay, doubled per
	// replay (BACKOFF_BASE). Function default 5m; above 0.
	BackoffBase awscdk.Duration
	// BackoffMax caps the backoff ceiling (BACKOFF_MAX). Function default
	// 4h; at least BackoffBase.
	BackoffMax awscdk.Duration
	// ExpiryRescueWindow: a DLQ message this close to its expiry that cannot
	// be replayed is parked (EXPIRY_RESCUE_WINDOW). Function default
	// 24h; above 0 and shorter than DeadLetterRetention.
	ExpiryRescueWindow awscdk.Duration
	// Rate is the messages sent per second (RATE). Function default 250;
	// 0.1..3000.
	Rate *float64
	// MaxPerRun caps the messages moved per run (MAX_PER_RUN). Function
	// default 100000; a whole number >= 1.
	MaxPerRun *float64
	// CanaryLimit is the replays per run while the previous run's orders
	// are not completed (CANARY_LIMIT). Function default 5; >= 1.
	CanaryLimit *float64
	// RefillThreshold is the DLQ growth since the previous run that holds
	// the route (REFILL_THRESHOLD). Function default 100; >= 1.
	RefillThreshold *float64
	// DeadlineMargin: no batch starts with less time left
	// (DEADLINE_MARGIN). Function default 5s; above 0 and shorter than
	// Timeout.
	DeadlineMargin awscdk.Duration
	// Workers is the number of receive loops per route (WORKERS), sharing
	// the rate and the cap. Function default 4; 1..16.
	Workers *float64

	// CodeDir is a directory holding a prebuilt bootstrap of the replay
	// function (functions/replay of github.com/homingdlq/homing, built for
	// Lambda: CGO_ENABLED=0 GOOS=linux GOARCH=arm64 -tags lambda.norpc, or
	// the release's replay_<version>_lambda_<arch>.zip unzipped). Default:
	// LaneProps.CodeDir/replay when CodeDir is set, or ../bin/replay when it
	// holds a bootstrap (`make build` in this repository); otherwise the
	// lane builds it at synth from the root module the CDK app requires
	// (`go list -m github.com/homingdlq/homing`), into the user's cache
	// directory, so an adopter needs no build step (Go must be on PATH, as
	// it is for any CDK app in Go).
	CodeDir *string

	// Environment adds further variables of the replay function. It must
	// not set the variables the construct wires (REPLAY_ROUTES,
	// LEDGER_TABLE, IDEMPOTENCY_TABLE, CONSUMER_NAME, HEALTH_URL) nor those
	// of the tuning fields above.
	Environment map[string]string
}

// tuning is one replay tuning variable: its field, its variable and, when
// the field is set, its value (a number, or a duration in seconds).
type tuning struct {
	field, key string
	value      *float64
	duration   bool
}

// env renders a set tuning value as the function parses it (strconv.Atoi,
// ParseFloat, time.ParseDuration), durations without zero trailing units
// ("5m", "4h", "1m30s").
func (t tuning) env() string {
	if !t.duration {
		return strconv.FormatFloat(*t.value, 'f', -1, 64)
	}
	return settings.FormatDuration(time.Duration(math.Round(*t.value * float64(time.Second))))
}

// replayResolved is ReplayProps with the defaults the construct owns applied.
type replayResolved struct {
	routeName string
	schedule  string
	// interval is the longest time between two scheduled runs in seconds,
	// 0 when it is not known (a cron() Schedule without Interval).
	interval    float64
	enabled     bool
	timeout     float64
	memory      float64
	reserved    *float64
	codeDir     *string
	tuning      []tuning // in the order of ReplayProps
	environment map[string]string
}

func optionalSeconds(d awscdk.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := seconds(d, 0)
	return &s
}

// resolve applies the defaults; lane is the lane's name, the default route.
func (p *ReplayProps) resolve(lane string) replayResolved {
	if p == nil {
		p = &ReplayProps{}
	}
	r := replayResolved{
		routeName:   lane,
		schedule:    DefaultReplaySchedule,
		enabled:     p.Enabled == nil || *p.Enabled,
		timeout:     seconds(p.Timeout, DefaultReplayTimeoutSeconds),
		memory:      number(p.MemorySize, DefaultReplayMemoryMB),
		reserved:    p.ReservedConcurrency,
		codeDir:     p.CodeDir,
		environment: p.Environment,
		tuning: []tuning{
			{field: "MaxReplays", key: settings.MaxReplays.Env, value: p.MaxReplays},
			{field: "BackoffBase", key: settings.BackoffBase.Env, value: optionalSeconds(p.BackoffBase), duration: true},
			{field: "BackoffMax", key: settings.BackoffMax.Env, value: optionalSeconds(p.BackoffMax), duration: true},
			{field: "ExpiryRescueWindow", key: settings.ExpiryRescueWindow.Env, value: optionalSeconds(p.ExpiryRescueWindow), duration: true},
			{field: "Rate", key: settings.Rate.Env, value: p.Rate},
			{field: "MaxPerRun", key: settings.MaxPerRun.Env, value: p.MaxPerRun},
			{field: "CanaryLimit", key: settings.CanaryLimit.Env, value: p.CanaryLimit},
			{field: "RefillThreshold", key: settings.RefillThreshold.Env, value: p.RefillThreshold},
			{field: "DeadlineMargin", key: settings.ReplayDeadlineMargin.Env, value: optionalSeconds(p.DeadlineMargin), duration: true},
			{field: "Workers", key: settings.Workers.Env, value: p.Workers},
		},
	}
	if p.RouteName != nil {
		r.routeName = *p.RouteName
	}
	if p.Schedule != nil {
		r.schedule = *p.Schedule
	}
	r.interval = rateSeconds(r.schedule)
	if p.Interval != nil {
		r.interval = seconds(p.Interval, 0)
	}
	return r
}

// rateSeconds is the interval of a schedule expression rate(N unit) in
// seconds, 0 for any other expression (cron(...), a token).
func rateSeconds(schedule string) float64 {
	inner, ok := strings.CutPrefix(schedule, "rate(")
	if !ok {
		return 0
	}
	inner, ok = strings.CutSuffix(inner, ")")
	if !ok {
		return 0
	}
	count, unit, ok := strings.Cut(strings.TrimSpace(inner), " ")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 {
		return 0
	}
	perUnit := map[string]float64{"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}[strings.TrimSpace(unit)]
	return float64(n) * perUnit
}

// setting returns the tuning value of field, or def (in seconds for a
// duration) when it is unset.
func (r replayResolved) setting(field string, def float64) float64 {
	for _, t := range r.tuning {
		if t.field == field && t.value != nil {
			return *t.value
		}
	}
	return def
}

// variables are the tuning variables of the set fields.
func (r replayResolved) variables() map[string]string {
	env := map[string]string{}
	for _, t := range r.tuning {
		if t.value != nil {
			env[t.key] = t.env()
		}
	}
	return env
}

// resolved is LaneProps with every default applied and every duration in
// seconds, as Validate checks it and NewLane builds from it.
type resolved struct {
	name        string
	fifo        bool
	sourceQueue awssqs.IQueue
	// sourceProblems are the reasons the SourceQueue cannot be adopted.
	sourceProblems []string
	// ownSourceProps are the set props of the lane's own source queue (an
	// error with a SourceQueue).
	ownSourceProps []string
	// sourceName is the team's source queue's name: its QueueName, or
	// SourceQueueName; "" when the lane names the queue.
	sourceName string
	// nameSource: the lane names the team's unnamed queue
	// (AllowQueueReplacement).
	nameSource bool
	// deadLetterQueue is the team's DLQ (LaneProps.DeadLetterQueue), nil
	// when the lane creates it; deadLetterProblems the reasons it cannot be
	// adopted.
	deadLetterQueue    awssqs.Queue
	deadLetterProblems []string
	// deadLetterUnsetRetention: the team's DLQ leaves its retention unset.
	deadLetterUnsetRetention bool
	// withoutSource are the set props that adopt a part of the team's
	// lane, given without its SourceQueue.
	withoutSource       []string
	allowReplacement    bool
	alarmTopic          awssns.ITopic
	queueKey            awskms.IKey
	sourceRetention     float64
	deadLetterRetention float64
	maxReceiveCount     float64
	visibility          float64
	codeDir             string
	codeDirSet          bool
	consumerFunction    awslambda.IFunction
	// sourceMaxBytes is an adopted SourceQueue's MaximumMessageSize, NaN
	// when it is a token, nil when the queue leaves it unset (SQS's default,
	// MaxMessageBytes) and the lane sets it to SourceMaxMessageBytes.
	sourceMaxBytes  *float64
	consumerCodeDir string
	// ownConsumerProps are the set props that configure the consumer the
	// lane builds (an error with a ConsumerFunction).
	ownConsumerProps []string
	// functionTimeout is the ConsumerFunction's own timeout in seconds, nil
	// when it is not known (an imported function).
	functionTimeout     *float64
	timeoutSet          bool
	architecture        awslambda.Architecture
	timeout             float64
	memory              float64
	consumerName        string
	consumerRecords     ConsumerRecords
	key, payloadHash    *string
	healthURL           *string
	environment         map[string]string
	reservedConcurrency *float64
	batchSize           float64
	maxConcurrency      float64
	batchingWindow      float64
	logRetention        awslogs.RetentionDays
	removalPolicy       awscdk.RemovalPolicy
	alarmPeriod         float64
	allowNativeRedrive  bool
	operatorArns        []string
	deletionProtection  bool
	systemLogLevel      awslambda.SystemLogLevel
	alarms              alarmsResolved
	replay              replayResolved
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

// kebab is the default lane name of a construct id: "Orders" -> "orders",
// "PaymentsLedger" -> "payments-ledger", "EU_Orders" -> "eu-orders".
func kebab(id string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range id {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				b.WriteByte('-')
			}
			b.WriteRune(r + 'a' - 'A')
			prevLower = false
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = true
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
			prevLower = false
		}
	}
	return strings.Trim(b.String(), "-")
}

// adoptSource reads what the lane needs of p.SourceQueue and notes why it
// cannot use it, if so.
func (r *resolved) adoptSource(p *LaneProps) {
	r.sourceQueue = p.SourceQueue
	for _, f := range [...]struct {
		name string
		set  bool
	}{{"SourceRetention", p.SourceRetention != nil}, {"VisibilityTimeout", p.VisibilityTimeout != nil}} {
		if f.set {
			r.ownSourceProps = append(r.ownSourceProps, f.name)
		}
	}
	if f := p.SourceQueue.Fifo(); p.Fifo == nil && f != nil {
		r.fifo = *f
	}
	q, ok := p.SourceQueue.(awssqs.Queue)
	var cfn awssqs.CfnQueue
	if ok {
		cfn, ok = q.Node().DefaultChild().(awssqs.CfnQueue)
	}
	if !ok {
		r.sourceProblems = append(r.sourceProblems, "is imported: the lane cannot set an imported queue's redrive policy; define the queue in the lane's stack (`cdk import` a deployed one)")
		return
	}
	r.adoptSourceRedrive(p, q, cfn)
	r.adoptSourceName(p, cfn)
	known := func(v *float64, def float64) float64 {
		if v == nil {
			return def
		}
		if *awscdk.Token_IsUnresolved(v) {
			return math.NaN()
		}
		return *v
	}
	r.sourceRetention = known(cfn.MessageRetentionPeriod(), DefaultSourceRetentionDays*24*3600)
	r.visibility = known(cfn.VisibilityTimeout(), 30)
	if v := cfn.MaximumMessageSize(); v != nil {
		b := known(v, MaxMessageBytes)
		r.sourceMaxBytes = &b
	}
}

// resolve applies the defaults; id is the lane's construct id, the source
// of the default Name.
func (p *LaneProps) resolve(id string) resolved {
	r := resolved{
		name:                kebab(id),
		fifo:                p.Fifo != nil && *p.Fifo,
		sourceRetention:     seconds(p.SourceRetention, DefaultSourceRetentionDays*24*3600),
		deadLetterRetention: seconds(p.DeadLetterRetention, DefaultDeadLetterRetentionDays*24*3600),
		maxReceiveCount:     number(p.MaxReceiveCount, DefaultMaxReceiveCount),
		codeDir:             DefaultCodeDir,
		architecture:        p.Architecture,
		timeout:             seconds(p.ConsumerTimeout, DefaultConsumerTimeoutSeconds),
		memory:              number(p.ConsumerMemorySize, DefaultConsumerMemoryMB),
		consumerFunction:    p.ConsumerFunction,
		timeoutSet:          p.ConsumerTimeout != nil,
		healthURL:           p.HealthURL,
		consumerRecords:     p.ConsumerRecords,
		key:                 p.Key,
		payloadHash:         p.PayloadHash,
		environment:         p.ConsumerEnvironment,
		reservedConcurrency: p.ReservedConcurrency,
		batchSize:           number(p.BatchSize, DefaultBatchSize),
		maxConcurrency:      number(p.MaxConcurrency, DefaultMaxConcurrency),
		batchingWindow:      seconds(p.MaxBatchingWindow, 0),
		logRetention:        p.LogRetention,
		removalPolicy:       p.RemovalPolicy,
		alarmPeriod:         seconds(p.AlarmPeriod, 60),
		allowNativeRedrive:  p.AllowNativeRedrive != nil && *p.AllowNativeRedrive,
		operatorArns:        p.OperatorArns,
		systemLogLevel:      p.SystemLogLevel,
		alarms:              p.resolveAlarms(),
	}
	if p.Name != nil {
		r.name = *p.Name
	}
	r.consumerName = r.name
	r.replay = p.Replay.resolve(r.name)
	if fn, ok := p.ConsumerFunction.(awslambda.Function); ok {
		r.functionTimeout = jsii.Number(seconds(fn.Timeout(), LambdaDefaultTimeoutSeconds))
		if p.ConsumerTimeout == nil {
			r.timeout = *r.functionTimeout
		}
	}
	for _, f := range [...]struct {
		name string
		set  bool
	}{
		{"ConsumerCodeDir", p.ConsumerCodeDir != nil},
		{"ConsumerMemorySize", p.ConsumerMemorySize != nil},
		{"ConsumerEnvironment", p.ConsumerEnvironment != nil},
		{"ReservedConcurrency", p.ReservedConcurrency != nil},
	} {
		if f.set {
			r.ownConsumerProps = append(r.ownConsumerProps, f.name)
		}
	}
	r.visibility = seconds(p.VisibilityTimeout, VisibilityFactor*r.timeout+r.batchingWindow)
	r.alarmTopic = p.AlarmTopic
	r.queueKey = p.QueueEncryptionKey
	r.allowReplacement = p.AllowQueueReplacement != nil && *p.AllowQueueReplacement
	if p.SourceQueue != nil {
		r.adoptSource(p)
	} else {
		for _, f := range [...]struct {
			name string
			set  bool
		}{{"SourceQueueName", p.SourceQueueName != nil}, {"DeadLetterQueue", p.DeadLetterQueue != nil}} {
			if f.set {
				r.withoutSource = append(r.withoutSource, f.name)
			}
		}
	}
	if p.SourceAgeThreshold == nil {
		r.alarms.sourceAge = defaultSourceAge(r.visibility, r.timeout)
	}
	if p.CodeDir != nil {
		r.codeDir = *p.CodeDir
		r.codeDirSet = true
	}
	r.consumerCodeDir = filepath.Join(r.codeDir, "consumer")
	if p.ConsumerCodeDir != nil {
		r.consumerCodeDir = *p.ConsumerCodeDir
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
		r.removalPolicy = awscdk.RemovalPolicy_RETAIN_ON_UPDATE_OR_DELETE
	}
	r.deletionProtection = r.removalPolicy == awscdk.RemovalPolicy_RETAIN
	if p.DeletionProtection != nil {
		r.deletionProtection = *p.DeletionProtection
	}
	if r.systemLogLevel == "" {
		r.systemLogLevel = awslambda.SystemLogLevel_INFO
	}
	return r
}

// Validate reports every invalid field at once, each error naming the field,
// its value and the accepted range (durations as people write them: 15d,
// 4h, 90s); the error wraps [ErrInvalidProps]. It checks the props as
// [NewLane] does, but without the lane's scope: NewLane also checks the
// default Name (from its construct id), that a ConsumerFunction, a
// SourceQueue and an AlarmTopic can be wired from the lane's stack, and
// that the bootstraps exist.
//
// A duration that is an unresolved token makes Validate panic.
func (p *LaneProps) Validate() error {
	if p == nil {
		p = &LaneProps{}
	}
	return joinInvalid(p.resolve("lane").validate())
}

// joinInvalid wraps the problems in [ErrInvalidProps], or returns nil.
func joinInvalid(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidProps, errors.Join(errs...))
}

func (r resolved) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	whole := func(name string, v, lo, hi float64) {
		if v != math.Trunc(v) || v < lo || v > hi {
			bad("%s is %v, want a whole number in %v..%v", name, v, lo, hi)
		}
	}

	if !validName(r.name) {
		bad("Name is %q, want 1..64 ASCII letters, digits, '-' and '_', starting with a letter", r.name)
	}
	whole("MaxReceiveCount", r.maxReceiveCount, MinMaxReceiveCount, MaxMaxReceiveCount)
	whole("MaxConcurrency", r.maxConcurrency, MinMaxConcurrency, MaxMaxConcurrency)
	if r.fifo {
		whole("BatchSize (FIFO)", r.batchSize, 1, MaxBatchSizeFIFO)
		if r.batchingWindow != 0 {
			bad("MaxBatchingWindow is %s, want 0 for FIFO queues", human(r.batchingWindow))
		}
	} else {
		whole("BatchSize", r.batchSize, 1, MaxBatchSizeStandard)
		if r.batchSize > 10 && r.batchingWindow < 1 {
			bad("BatchSize is %v, above 10 it needs a MaxBatchingWindow of at least 1s", r.batchSize)
		}
	}
	if r.batchingWindow < 0 || r.batchingWindow > MaxBatchingWindowSeconds {
		bad("MaxBatchingWindow is %s, want 0s..%s", human(r.batchingWindow), human(MaxBatchingWindowSeconds))
	}
	if r.reservedConcurrency != nil {
		whole("ReservedConcurrency", *r.reservedConcurrency, 1, math.MaxInt32)
	}

	// An adopted queue's settings are named as the queue's; NaN is a token,
	// which CloudFormation checks.
	sourceRetention, visibility := "SourceRetention", "VisibilityTimeout"
	if r.sourceQueue != nil {
		sourceRetention, visibility = "SourceQueue's MessageRetentionPeriod", "SourceQueue's VisibilityTimeout"
		for _, problem := range r.sourceProblems {
			bad("SourceQueue %s", problem)
		}
		for _, problem := range r.deadLetterProblems {
			bad("DeadLetterQueue %s", problem)
		}
		if len(r.ownSourceProps) > 0 {
			bad("%s configure the queue the lane creates; with a SourceQueue, set them on that queue", strings.Join(r.ownSourceProps, ", "))
		}
		if f := r.sourceQueue.Fifo(); f != nil && *f != r.fifo {
			bad("SourceQueue is FIFO: %v, but Fifo is %v: all four queues are of one type", *f, r.fifo)
		}
		if b := r.sourceMaxBytes; b != nil && *b > SourceMaxMessageBytes {
			bad("SourceQueue's MaximumMessageSize is %v, want at most %d: the invalid and parking queues need room for the lane's metadata", *b, SourceMaxMessageBytes)
		}
	}
	if len(r.withoutSource) > 0 {
		bad("%s adopt a part of the team's existing lane and need its SourceQueue", strings.Join(r.withoutSource, ", "))
	}
	for _, f := range [...]struct {
		name string
		v    float64
	}{{sourceRetention, r.sourceRetention}, {"DeadLetterRetention", r.deadLetterRetention}} {
		if f.v < MinRetentionSeconds || f.v > MaxRetentionSeconds {
			bad("%s is %s, want %s..%s", f.name, human(f.v), human(MinRetentionSeconds), human(MaxRetentionSeconds))
		}
	}
	if r.deadLetterRetention <= r.sourceRetention {
		bad("DeadLetterRetention (%s) must be longer than %s (%s): SQS keeps a message's original enqueue time when it moves it to the DLQ",
			human(r.deadLetterRetention), sourceRetention, human(r.sourceRetention))
	}

	if r.timeout < 1 || r.timeout > MaxConsumerTimeoutSeconds {
		bad("ConsumerTimeout is %s, want 1s..%s", human(r.timeout), human(MaxConsumerTimeoutSeconds))
	}
	if r.visibility < VisibilityFactor*r.timeout {
		bad("%s is %s, want at least %dx ConsumerTimeout (%s)", visibility, human(r.visibility), VisibilityFactor, human(VisibilityFactor*r.timeout))
	}
	if r.visibility > MaxVisibilitySeconds {
		bad("%s is %s, want at most %s", visibility, human(r.visibility), human(MaxVisibilitySeconds))
	}
	if r.memory < 128 || r.memory > 10240 || r.memory != math.Trunc(r.memory) {
		bad("ConsumerMemorySize is %v, want a whole number of MB in 128..10240", r.memory)
	}
	if r.alarmPeriod < 60 || math.Mod(r.alarmPeriod, 60) != 0 {
		bad("AlarmPeriod is %s, want a whole number of minutes", human(r.alarmPeriod))
	}

	if r.consumerFunction != nil {
		if len(r.ownConsumerProps) > 0 {
			bad("%s configure the consumer the lane builds; with a ConsumerFunction, set them on that function", strings.Join(r.ownConsumerProps, ", "))
		}
		switch {
		case r.functionTimeout == nil && !r.timeoutSet:
			bad("ConsumerTimeout is required with an imported ConsumerFunction: the source queue's visibility timeout is at least %dx it", VisibilityFactor)
		case r.functionTimeout != nil && *r.functionTimeout != r.timeout:
			bad("ConsumerTimeout is %s, but the ConsumerFunction's timeout is %s", human(r.timeout), human(*r.functionTimeout))
		}
	} else if strings.TrimSpace(r.consumerCodeDir) == "" {
		bad("ConsumerCodeDir is empty")
	}

	if u := r.healthURL; u != nil && !*awscdk.Token_IsUnresolved(jsii.String(*u)) {
		if !(strings.HasPrefix(*u, "https://") && len(*u) > len("https://") || strings.HasPrefix(*u, "http://") && len(*u) > len("http://")) {
			bad("HealthURL is %q, want an http:// or https:// URL", *u)
		}
	}
	for _, arn := range r.operatorArns {
		if !strings.HasPrefix(arn, "arn:") {
			bad("OperatorArns has %q, want an IAM principal ARN (arn:...)", arn)
		}
	}
	if strings.TrimSpace(r.consumerName) == "" || settings.ConsumerName.Check(r.consumerName) != nil {
		bad("ConsumerName is %q, want %s (it scopes the idempotency keys: settings.ConsumerName)", r.consumerName, settings.ConsumerName.Want())
	}
	if strings.TrimSpace(r.codeDir) == "" {
		bad("CodeDir is empty")
	}
	for _, key := range wiredEnvironment {
		if _, ok := r.environment[key]; ok {
			bad("ConsumerEnvironment sets %s, which the lane wires itself", key)
		}
	}
	errs = append(errs, r.validateContract()...)
	errs = append(errs, r.alarms.validate()...)
	errs = append(errs, r.replay.validate(r.deadLetterRetention)...)
	return errs
}

// validName reports whether name is a lane name: 1..64 ASCII letters,
// digits, '-' and '_', starting with a letter.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 || !(name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validate reports the invalid replay props, in the words of
// [LaneProps.Validate]; deadLetterRetention is the lane's, in seconds.
func (r replayResolved) validate(deadLetterRetention float64) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("Replay."+format, args...)) }
	whole := func(name string, v, lo, hi float64) {
		if v != math.Trunc(v) || v < lo || v > hi {
			bad("%s is %v, want a whole number in %v..%v", name, v, lo, hi)
		}
	}

	if strings.TrimSpace(r.routeName) == "" {
		bad("RouteName is empty")
	}
	if len(r.routeName) > settings.MaxRouteNameBytes {
		bad("RouteName is %d bytes, want at most %d (it travels in the replay's sealed metadata)", len(r.routeName), settings.MaxRouteNameBytes)
	}
	// A token (a CfnParameter, say) is checked by EventBridge at deploy time.
	if !*awscdk.Token_IsUnresolved(jsii.String(r.schedule)) &&
		!((strings.HasPrefix(r.schedule, "rate(") || strings.HasPrefix(r.schedule, "cron(")) && strings.HasSuffix(r.schedule, ")")) {
		bad("Schedule is %q, want an EventBridge schedule expression, rate(...) or cron(...)", r.schedule)
	}
	switch {
	case r.interval == 0:
		bad("Interval is required with the Schedule %q: the heartbeat and expiry alarms evaluate periods of twice the interval between runs", r.schedule)
	case r.interval < 60 || r.interval > MaxReplayIntervalSeconds || math.Mod(r.interval, 60) != 0:
		bad("Interval is %s, want a whole number of minutes in %s..%s (CloudWatch alarm periods; the report alarms evaluate twice it)",
			human(r.interval), human(60), human(MaxReplayIntervalSeconds))
	}
	if r.timeout < MinReplayTimeoutSeconds || r.timeout > MaxReplayTimeoutSeconds {
		bad("Timeout is %s, want %s..%s", human(r.timeout), human(MinReplayTimeoutSeconds), human(MaxReplayTimeoutSeconds))
	}
	if r.memory < 128 || r.memory > 10240 || r.memory != math.Trunc(r.memory) {
		bad("MemorySize is %v, want a whole number of MB in 128..10240", r.memory)
	}
	if r.reserved != nil {
		whole("ReservedConcurrency", *r.reserved, 1, math.MaxInt32)
	}

	// An unset field is the function's default, which is valid: the checks
	// of single fields pass it a value in range, the checks of pairs the
	// function's default.
	for _, f := range []struct {
		field string
		decl  settings.Int
	}{{"MaxReplays", settings.MaxReplays}, {"MaxPerRun", settings.MaxPerRun}, {"CanaryLimit", settings.CanaryLimit}, {"RefillThreshold", settings.RefillThreshold}, {"Workers", settings.Workers}} {
		whole(f.field, r.setting(f.field, float64(f.decl.Default)), float64(f.decl.Min), float64(f.decl.Upper()))
	}
	if rate := r.setting("Rate", settings.Rate.Default); settings.Rate.Check(rate) != nil {
		bad("Rate is %v, want %s", rate, settings.Rate.Want())
	}
	base := r.setting("BackoffBase", settings.BackoffBase.Default.Seconds())
	backoffMax := r.setting("BackoffMax", settings.BackoffMax.Default.Seconds())
	if base <= 0 || backoffMax < base {
		bad("BackoffBase (%s) and BackoffMax (%s): want 0 < BackoffBase <= BackoffMax (unset: %s and %s)", human(base), human(backoffMax),
			human(settings.BackoffBase.Default.Seconds()), human(settings.BackoffMax.Default.Seconds()))
	}
	if window := r.setting("ExpiryRescueWindow", settings.ExpiryRescueWindow.Default.Seconds()); window <= 0 || window >= deadLetterRetention {
		bad("ExpiryRescueWindow is %s, want above 0 and shorter than DeadLetterRetention (%s)", human(window), human(deadLetterRetention))
	}
	if margin := r.setting("DeadlineMargin", settings.ReplayDeadlineMargin.Default.Seconds()); margin <= 0 || margin >= r.timeout {
		bad("DeadlineMargin is %s, want above 0 and shorter than Timeout (%s)", human(margin), human(r.timeout))
	}

	managed := append([]string{}, replayWiredEnvironment...)
	for _, t := range r.tuning {
		managed = append(managed, t.key)
	}
	for _, key := range managed {
		if _, ok := r.environment[key]; ok {
			bad("Environment sets %s, which the lane wires itself or from a ReplayProps field", key)
		}
	}
	return errs
}

// bootstrapDir is the absolute path of dir, a directory holding a
// bootstrap; the error says when the bootstrap is missing.
func bootstrapDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve code directory %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "bootstrap")); err != nil {
		return "", fmt.Errorf("%w in %s: %w", errNoBootstrap, abs, err)
	}
	return abs, nil
}
