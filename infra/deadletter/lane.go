package deadletter

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/homingdlq/homing/internal/settings"
)

// Key schema of the lane's tables, as package settings declares it for the
// stores of package dynamo too.
const (
	// partitionKey is the String partition key of every table.
	partitionKey = settings.PartitionKeyAttribute
	// sortKey is the String sort key of the replay ledger.
	sortKey = settings.SortKeyAttribute
	// tTLAttribute holds a record's expiry in epoch seconds on both
	// tables (a park in the ledger has none). DynamoDB's TTL deletion is
	// housekeeping only: readers check the expiry themselves.
	tTLAttribute = settings.TTLAttribute
)

// Lane is one dead-letter lane for one source queue: the queues, the tables,
// the consumer function with its event source mapping, the replay function
// with its schedule, the alarms and the dashboard. It declares its own stack
// outputs (settings.OutputID(Name, key) per settings.Output* key) and tags.
// Every resource is reachable through a getter so that a later construct
// can grant on it or output more. A Lane is built once by [NewLane] and is
// not safe for concurrent use (no construct is).
type Lane interface {
	constructs.Construct
	// Name is the lane's name (LaneProps.Name): its settings.TagLane tag and
	// the prefix of its stack outputs.
	Name() string
	// SourceQueue receives the producers' messages; its redrive policy moves
	// a message to the DLQ after QueuesProps.MaxReceiveCount receives (on
	// a FIFO lane that keeps group order, a backstop: see
	// ConsumerProps.GroupOrder).
	SourceQueue() awssqs.IQueue
	// DeadLetterQueue holds the messages that failed MaxReceiveCount times.
	// Its redrive allow-policy names only the source queue.
	DeadLetterQueue() awssqs.Queue
	// InvalidQueue holds the messages the consumer rejected as never valid,
	// with their reason. They are fixed at the source, never replayed as is.
	InvalidQueue() awssqs.Queue
	// ParkingQueue holds the dead letters whose replays are exhausted, and
	// on a FIFO lane that keeps group order the records of parked groups.
	ParkingQueue() awssqs.Queue
	// IdempotencyTable is the idempotent receiver's table (pk; TTL expiresAt).
	IdempotencyTable() awsdynamodb.Table
	// LedgerTable is the replay ledger (pk, sk; TTL expiresAt), and on a
	// FIFO lane that keeps group order the parks of its groups (partition
	// settings.GroupsPartition, no TTL).
	LedgerTable() awsdynamodb.Table
	// Consumer is the consumer function: ConsumerProps.Function, or the
	// one the lane built.
	Consumer() awslambda.IFunction
	// ConsumerRole is the consumer's execution role, nil when an imported
	// Consumer.Function has none. The role of a consumer the lane built has
	// no managed policies, only the grants the lane makes.
	ConsumerRole() awsiam.IRole
	// ConsumerLogGroup receives the logs of a consumer the lane built; nil
	// for a Consumer.Function, whose log group is the team's.
	ConsumerLogGroup() awslogs.ILogGroup
	// ConsumerEnvironment are the variables by which the consumer finds the
	// lane: INVALID_QUEUE_URL, IDEMPOTENCY_TABLE, CONSUMER_NAME,
	// POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE, the
	// route's contract, KEY_EXPRESSION and PAYLOAD_HASH_EXPRESSION (each
	// only when ConsumerProps.Key, PayloadHash is set), and on a FIFO lane
	// that keeps group order GROUP_ORDER, SOURCE_QUEUE_URL,
	// PARKING_QUEUE_URL, SOURCE_RETENTION, MAX_RECEIVES and with hold
	// LEDGER_TABLE (see ConsumerProps.GroupOrder). The lane sets them on a
	// consumer it builds and on an awslambda.Function given as
	// Consumer.Function (never overwriting a variable the function sets: a
	// different value is refused at synth); an imported function sets them
	// itself.
	ConsumerEnvironment() map[string]*string
	// ConsumerEventSource is the SQS event source mapping of the consumer.
	ConsumerEventSource() awslambdaeventsources.SqsEventSource
	// Replay is the replay function: it moves dead letters from the DLQ back
	// to the source queue, or to the parking queue when their replays are
	// exhausted. It has no event source mapping, no asynchronous retries and
	// the reserved concurrency of ReplayProps.ReservedConcurrency (none by
	// default).
	Replay() awslambda.Function
	// ReplayRole is the replay function's execution role: no managed
	// policies, only the grants the lane makes.
	ReplayRole() awsiam.Role
	// ReplayLogGroup receives the replay function's JSON logs and run
	// summaries.
	ReplayLogGroup() awslogs.LogGroup
	// ReplaySchedule is the EventBridge rule that invokes Replay; disabling
	// it stops scheduled replay (on-demand invocations still run). When
	// its schedule starts runs more often than ReplayProps.Timeout lets
	// them end (rate(1 minute) with a 10 minute timeout, say), the lane
	// warns on it at synth: overlapping runs are safe, but each applies
	// its own RATE (see shortestGap for what is read of a cron()).
	ReplaySchedule() awsevents.Rule
	// Archive is the lane's archive bucket (ArchiveProps.Bucket, or the one
	// the lane created): the replay function writes the parking and
	// invalid queues' messages there before SQS's retention ends.
	Archive() awss3.IBucket
	// AlarmTopic receives every alarm and OK transition: AlarmProps.Topic,
	// or the topic the lane created.
	AlarmTopic() awssns.ITopic
	// AlarmTopicKey encrypts the topic the lane created; nil with an
	// AlarmProps.Topic.
	AlarmTopicKey() awskms.Key
	// Alarms are the lane's alarms.
	Alarms() Alarms
	// Dashboard shows the queue depths and ages and the functions' health.
	Dashboard() awscloudwatch.Dashboard
	// GrantOperator grants principal what the runbook's operator does with
	// `dlq` and the AWS CLI (docs/OPERATIONS.md), and no more: inspect and
	// peek the DLQ, invalid and parking queues (the source queue's
	// attributes only), replay on demand (also from the invalid and parking
	// queues), audit the ledger, stop and resume the schedule, read and invoke
	// the replay function, read the logs, subscribe to the alarm topic, and
	// on a FIFO lane that parks its groups list and release them (`dlq
	// groups`). It denies principal the ledger's seal key (every item
	// action) and writes of its public key. principal must be a role, a user or an
	// awsiam.ArnPrincipal: its ARN joins the parking queue's senders (`dlq
	// replay` parks what it cannot replay). It panics with another principal.
	GrantOperator(principal awsiam.IGrantable)
}

type lane struct {
	constructs.Construct
	props resolved

	source, deadLetter, invalid, parking awssqs.Queue
	idempotency, ledger                  awsdynamodb.Table
	consumer                             awslambda.IFunction
	consumerRole                         awsiam.IRole
	consumerLogs                         awslogs.ILogGroup
	replay                               laneFunction
	eventSource                          awslambdaeventsources.SqsEventSource
	schedule                             awsevents.Rule
	topic                                awssns.ITopic
	topicKey                             awskms.Key
	alarms                               Alarms
	dashboard                            awscloudwatch.Dashboard
	parkingSenders                       *senders
	archive                              awss3.IBucket
}

// NewLane adds a lane under scope. Following the CDK convention for invalid
// construct props, it panics when props are invalid (the value is an error
// wrapping [ErrInvalidProps], listing every problem; see [LaneProps.Validate]),
// when the consumer's bootstrap does not exist (unless props give a
// Consumer.Function), or when the replay function's code can be neither found
// nor built (see ReplayProps.CodeDir; the error says how to build it). Nil
// props are refused: Consumer.Records has no default.
func NewLane(scope constructs.Construct, id string, props *LaneProps) Lane {
	if props == nil {
		props = &LaneProps{}
	}
	r := props.resolve(id)
	if err := joinInvalid(append(r.validate(), r.validateScope(scope)...)); err != nil {
		panic(fmt.Errorf("deadletter.NewLane %q: %w", id, err))
	}
	code := map[string]string{}
	if r.consumer.function == nil {
		abs, err := bootstrapDir(r.consumer.codeDir)
		if err != nil {
			panic(fmt.Errorf("deadletter.NewLane %q: consumer code: %w (build your consumer's bootstrap for Lambda, GOOS=linux GOARCH=%s, "+
				"into Consumer.CodeDir, or pass your function as Consumer.Function)", id, err, r.goArch()))
		}
		code["consumer"] = abs
	}
	replayCode, err := r.replayCode()
	if err != nil {
		panic(fmt.Errorf("deadletter.NewLane %q: replay code: %w", id, err))
	}
	code["replay"] = replayCode

	// The lane is a Go "subclass" of Construct (registered with jsii by the
	// _Override constructor), so that it can itself be the scope of further
	// constructs.
	l := &lane{props: r}
	constructs.NewConstruct_Override(l, scope, jsii.String(id))
	l.addQueues()
	l.addTables()
	l.addConsumer(code["consumer"])
	l.addArchive()
	// Before the alarms, so that they watch the replay function too.
	l.addReplay(code["replay"])
	// After both functions, whose roles the queue policies name.
	l.restrictSenders()
	l.addAlarms()
	l.addDashboard()
	l.addOutputs()
	l.addTags()
	return l
}

// validateScope reports the props that cannot be wired from scope's stack.
func (r resolved) validateScope(scope constructs.Construct) []error {
	var errs []error
	stack := awscdk.Stack_Of(scope)
	if q := r.queues.sourceQueue; q != nil && !sameStack(q, stack) {
		errs = append(errs, fmt.Errorf("Queues.SourceQueue %s belongs to stack %s, the lane to %s: the lane sets its redrive policy, which needs the queue in the lane's stack",
			*q.Node().Path(), *awscdk.Stack_Of(q).StackName(), *stack.StackName()))
	}
	if fn := r.consumer.function; fn != nil && !sameStack(fn, stack) {
		errs = append(errs, fmt.Errorf("Consumer.Function %s belongs to stack %s, the lane to %s: define or import it in the lane's stack (they refer to each other)",
			*fn.Node().Path(), *awscdk.Stack_Of(fn).StackName(), *stack.StackName()))
	}
	if q := r.queues.deadLetterQueue; q != nil && !sameStack(q, stack) {
		errs = append(errs, fmt.Errorf("Queues.DeadLetterQueue %s belongs to stack %s, the lane to %s: the lane sets its redrive allow-policy, which needs the queue in the lane's stack",
			*q.Node().Path(), *awscdk.Stack_Of(q).StackName(), *stack.StackName()))
	}
	if fn, ok := r.consumer.function.(awslambda.Function); ok && r.queues.sourceQueue != nil {
		paths, sameID := eventSourcesOn(stack, fn, r.queues.sourceQueue)
		switch {
		case sameID:
			errs = append(errs, fmt.Errorf("Consumer.Function %s has an SQS event source on the SourceQueue already (%s): remove your AddEventSource call; "+
				"the lane adds the same mapping, under the same construct id and so the same logical id, which CloudFormation updates in place "+
				"(ReportBatchItemFailures, the lane's BatchSize and MaxConcurrency): no second mapping, no message lost",
				*fn.Node().Path(), strings.Join(paths, ", ")))
		case len(paths) > 0:
			errs = append(errs, fmt.Errorf("the SourceQueue is consumed by the event source mapping %s already: remove it; "+
				"the lane adds its own (ReportBatchItemFailures, the lane's BatchSize and MaxConcurrency). Its logical id differs, so CloudFormation "+
				"creates the lane's mapping before it deletes yours: messages stay in the queue, and a record both receive meanwhile is absorbed by the idempotent consumer",
				strings.Join(paths, ", ")))
		}
	}
	return errs
}

func sameStack(c constructs.IConstruct, stack awscdk.Stack) bool {
	return *awscdk.Stack_Of(c).Node().Path() == *stack.Node().Path()
}

func (l *lane) Name() string                                              { return l.props.name }
func (l *lane) SourceQueue() awssqs.IQueue                                { return l.source }
func (l *lane) DeadLetterQueue() awssqs.Queue                             { return l.deadLetter }
func (l *lane) InvalidQueue() awssqs.Queue                                { return l.invalid }
func (l *lane) ParkingQueue() awssqs.Queue                                { return l.parking }
func (l *lane) IdempotencyTable() awsdynamodb.Table                       { return l.idempotency }
func (l *lane) LedgerTable() awsdynamodb.Table                            { return l.ledger }
func (l *lane) Consumer() awslambda.IFunction                             { return l.consumer }
func (l *lane) ConsumerRole() awsiam.IRole                                { return l.consumerRole }
func (l *lane) ConsumerLogGroup() awslogs.ILogGroup                       { return l.consumerLogs }
func (l *lane) ConsumerEventSource() awslambdaeventsources.SqsEventSource { return l.eventSource }
func (l *lane) Replay() awslambda.Function                                { return l.replay.fn }
func (l *lane) ReplayRole() awsiam.Role                                   { return l.replay.role }
func (l *lane) ReplayLogGroup() awslogs.LogGroup                          { return l.replay.logs }
func (l *lane) ReplaySchedule() awsevents.Rule                            { return l.schedule }
func (l *lane) AlarmTopic() awssns.ITopic                                 { return l.topic }
func (l *lane) AlarmTopicKey() awskms.Key                                 { return l.topicKey }
func (l *lane) Alarms() Alarms                                            { return l.alarms }
func (l *lane) Dashboard() awscloudwatch.Dashboard                        { return l.dashboard }
func (l *lane) Archive() awss3.IBucket                                    { return l.archive }

// scope is the lane's own construct, the parent of everything it creates.
func (l *lane) scope() constructs.Construct { return l }

func seconds2duration(s float64) awscdk.Duration { return awscdk.Duration_Seconds(jsii.Number(s)) }

// queue creates a queue of kind k from override (Validate refuses what it
// must not set) with the lane's own props on top, and the settings every
// lane queue shares: SSE with SQS-managed keys or Queues.EncryptionKey, a
// TLS-only queue policy, the lane's FIFO choice and removal policy.
func (l *lane) queue(id string, k queueKind, override *awssqs.QueueProps, own awssqs.QueueProps) awssqs.Queue {
	r := l.props.queues
	own.Encryption = awssqs.QueueEncryption_SQS_MANAGED
	if r.key != nil {
		own.Encryption = awssqs.QueueEncryption_KMS
		own.EncryptionMasterKey = r.key
	}
	own.EnforceSSL = jsii.Bool(true)
	own.RemovalPolicy = l.props.removalPolicy
	if r.fifo {
		own.Fifo = jsii.Bool(true)
		own.ContentBasedDeduplication = jsii.Bool(false)
	}
	return awssqs.NewQueue(l.scope(), jsii.String(id), overlay(queueRule(k), override, own))
}

func (l *lane) addQueues() {
	r := l.props.queues
	stack := awscdk.Stack_Of(l.scope())

	// The DLQ's byQueue allow-policy names the source queue, and the source
	// queue's redrive policy names the DLQ: referencing both ARNs would be a
	// dependency cycle CloudFormation rejects. So the source queue gets a
	// name generated by the CDK from its construct path (unique per stack and
	// lane, never hand-written) and the DLQ names it by a formatted ARN.
	// Changing a property that replaces the source queue (FIFO) therefore
	// needs a new lane id.
	suffix := "-source"
	if r.fifo {
		suffix += settings.FIFOSuffix
	}
	sourceName := *awscdk.Names_UniqueResourceName(l.scope(), &awscdk.UniqueResourceNameOptions{
		MaxLength: jsii.Number(float64(80 - len(suffix))),
		Separator: jsii.String("-"),
	}) + suffix
	// An adopted queue has a name of its own or a SourceQueueName
	// (Validate checks it), or the lane names it (AllowQueueReplacement).
	var adopted awssqs.CfnQueue
	if r.sourceQueue != nil {
		adopted = r.sourceQueue.Node().DefaultChild().(awssqs.CfnQueue)
		if r.nameSource {
			nameTeamQueue(r.sourceQueue, adopted, sourceName)
		} else {
			sourceName = r.sourceName
		}
	}
	sourceRef := awssqs.Queue_FromQueueAttributes(l.scope(), jsii.String("SourceQueueRef"), &awssqs.QueueAttributes{
		QueueArn:  stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("sqs"), Resource: jsii.String(sourceName)}),
		QueueName: jsii.String(sourceName),
		Fifo:      jsii.Bool(r.fifo),
	})

	if r.deadLetterQueue != nil {
		l.adoptDeadLetterQueue(sourceRef)
	} else {
		l.deadLetter = l.queue("DeadLetterQueue", queueDeadLetter, r.deadLetterProps, awssqs.QueueProps{
			RetentionPeriod:     seconds2duration(r.deadLetterRetention),
			MaxMessageSizeBytes: jsii.Number(maxMessageBytes),
			RedriveAllowPolicy: &awssqs.RedriveAllowPolicy{
				RedrivePermission: awssqs.RedrivePermission_BY_QUEUE,
				SourceQueues:      &[]awssqs.IQueue{sourceRef},
			},
		})
	}
	if adopted != nil {
		// The properties the lane sets on the team's queue: its redrive
		// policy, and its message size if the team left it unset.
		adopted.SetRedrivePolicy(map[string]any{
			"deadLetterTargetArn": l.deadLetter.QueueArn(),
			"maxReceiveCount":     r.maxReceiveCount,
		})
		l.source = r.sourceQueue.(awssqs.Queue)
		if r.sourceMaxBytes == nil {
			sizeSourceMessages(l.source, adopted)
		}
	} else {
		l.addSourceQueue(sourceName)
	}
	// Neither lane of last resort may become another queue's DLQ.
	l.invalid = l.queue("InvalidQueue", queueLastResort, r.invalidProps, awssqs.QueueProps{
		RetentionPeriod:     seconds2duration(r.deadLetterRetention),
		MaxMessageSizeBytes: jsii.Number(maxMessageBytes),
		RedriveAllowPolicy:  &awssqs.RedriveAllowPolicy{RedrivePermission: awssqs.RedrivePermission_DENY_ALL},
	})
	l.parking = l.queue("ParkingQueue", queueLastResort, r.parkingProps, awssqs.QueueProps{
		RetentionPeriod:     seconds2duration(r.deadLetterRetention),
		MaxMessageSizeBytes: jsii.Number(maxMessageBytes),
		RedriveAllowPolicy:  &awssqs.RedriveAllowPolicy{RedrivePermission: awssqs.RedrivePermission_DENY_ALL},
	})
	for _, q := range []awssqs.Queue{l.invalid, l.parking} {
		suppress(q, "AwsSolutions-SQS3",
			"This queue is itself a lane of last resort (invalid messages, or dead letters whose replays are exhausted): "+
				"it is watched by a depth alarm and drained by operators, and a DLQ behind it would only hide messages further.")
	}
}

// warnSourceMessageSize is the id of the warning on an adopted source
// queue whose MaximumMessageSize the lane set.
const warnSourceMessageSize = "homing-deadletter:SourceQueueMaximumMessageSize"

// sizeSourceMessages sets the MaximumMessageSize that the team's queue q
// (cfn its resource) leaves unset to SourceMaxMessageBytes, and says so in
// a warning. Unset, it is SQS's default, maxMessageBytes: such a message
// would not fit the invalid or the parking queue with the lane's metadata,
// so it would be retried into the DLQ, fail every replay and expire
// unparked. The property updates without interruption.
func sizeSourceMessages(q awssqs.Queue, cfn awssqs.CfnQueue) {
	cfn.SetMaximumMessageSize(jsii.Number(SourceMaxMessageBytes))
	awscdk.Annotations_Of(q).AddWarningV2(jsii.String(warnSourceMessageSize), jsii.String(fmt.Sprintf(
		"the dead-letter lane set this queue's MaximumMessageSize to %d (deadletter.SourceMaxMessageBytes): "+
			"unset, it is SQS's default of %d bytes, and a message that large would not fit the invalid or the parking queue "+
			"(%d bytes) once the lane adds its metadata (up to %d bytes). "+
			"To silence this warning, set MaxMessageSizeBytes on the queue yourself, at most %d.",
		SourceMaxMessageBytes, maxMessageBytes, maxMessageBytes, metadataReserveBytes, SourceMaxMessageBytes)), nil)
}

// addSourceQueue creates the lane's own source queue, named name. No other
// queue may name it as its DLQ and push its failures into the lane.
func (l *lane) addSourceQueue(name string) {
	r := l.props.queues
	l.source = l.queue("SourceQueue", queueSource, r.sourceProps, awssqs.QueueProps{
		QueueName:           jsii.String(name),
		RedriveAllowPolicy:  &awssqs.RedriveAllowPolicy{RedrivePermission: awssqs.RedrivePermission_DENY_ALL},
		RetentionPeriod:     seconds2duration(r.sourceRetention),
		VisibilityTimeout:   seconds2duration(r.visibility),
		MaxMessageSizeBytes: jsii.Number(SourceMaxMessageBytes),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           l.deadLetter,
			MaxReceiveCount: jsii.Number(r.maxReceiveCount),
		},
	})
}

// tableSpec is what tells the lane's tables apart.
type tableSpec struct {
	sortKey bool // a String sort key, sortKey, besides the partition key
	ttl     bool // DynamoDB expires items by tTLAttribute
}

// table creates a table of spec with the settings every lane table
// shares: a String partition key partitionKey, on-demand billing,
// AWS-managed encryption, point-in-time recovery, the lane's removal
// policy and deletion protection.
func (l *lane) table(id string, spec tableSpec) awsdynamodb.Table {
	props := &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(partitionKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:   awsdynamodb.TableEncryption_AWS_MANAGED,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy:      l.props.removalPolicy,
		DeletionProtection: jsii.Bool(l.props.deletionProtection),
	}
	if spec.sortKey {
		props.SortKey = &awsdynamodb.Attribute{Name: jsii.String(sortKey), Type: awsdynamodb.AttributeType_STRING}
	}
	if spec.ttl {
		props.TimeToLiveAttribute = jsii.String(tTLAttribute)
	}
	return awsdynamodb.NewTable(l.scope(), jsii.String(id), props)
}

func (l *lane) addTables() {
	l.idempotency = l.table("IdempotencyTable", tableSpec{ttl: true})
	l.ledger = l.table("LedgerTable", tableSpec{sortKey: true, ttl: true})
}

// laneFunction is one of the lane's functions with its role and log group.
type laneFunction struct {
	fn   awslambda.Function
	role awsiam.Role
	logs awslogs.LogGroup
}

// functionSpec is what tells the lane's functions apart; [lane.function]
// builds them all alike.
type functionSpec struct {
	// id is the function's construct id; its log group and role are
	// id+"Logs" and id+"Role". group names its props ("Consumer", "Replay").
	id, group, description, roleDescription string
	code                                    string
	timeout, memory                         float64
	reservedConcurrency                     *float64
	// wired are the variables from the lane's resources; environment the
	// further ones from the props (Validate keeps the two apart).
	wired       map[string]*string
	environment map[string]string
	// override is the group's FunctionProps.
	override *awslambda.FunctionProps
}

// function creates a provided.al2023 function running the bootstrap in
// spec.code, with JSON logs to its own log group and its own role. The role
// has no managed policy: the AWSLambdaBasicExecutionRole one would allow logs
// on every log group, this one may write to its own log group only. Callers
// add the function's other grants. The function's props are spec.override
// with the lane's own on top (see overrides.go).
func (l *lane) function(spec functionSpec) laneFunction {
	r := l.props
	f := laneFunction{}
	f.logs = awslogs.NewLogGroup(l.scope(), jsii.String(spec.id+"Logs"), &awslogs.LogGroupProps{
		Retention:     r.logRetention,
		RemovalPolicy: r.removalPolicy,
	})
	f.role = awsiam.NewRole(l.scope(), jsii.String(spec.id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String(spec.roleDescription),
	})
	f.logs.GrantWrite(f.role)

	env := maps.Clone(spec.wired)
	maps.DeleteFunc(env, func(_ string, v *string) bool { return v == nil })
	maps.Copy(env, l.metricsEnvironment())
	for k, v := range spec.environment {
		env[k] = jsii.String(v)
	}
	f.fn = awslambda.NewFunction(l.scope(), jsii.String(spec.id), overlay(functionRule(spec.group), spec.override, awslambda.FunctionProps{
		Description:                  jsii.String(spec.description),
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         awslambda.Code_FromAsset(jsii.String(spec.code), nil),
		Architecture:                 r.architecture,
		Timeout:                      seconds2duration(spec.timeout),
		MemorySize:                   jsii.Number(spec.memory),
		ReservedConcurrentExecutions: spec.reservedConcurrency,
		Role:                         f.role,
		LogGroup:                     f.logs,
		LoggingFormat:                awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2:        awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:             r.systemLogLevel,
		Environment:                  &env,
	}))
	return f
}

// ConsumerEnvironment: see [Lane].
func (l *lane) ConsumerEnvironment() map[string]*string {
	env := map[string]*string{
		settings.InvalidQueueURL.Env:  l.invalid.QueueUrl(),
		settings.IdempotencyTable.Env: l.idempotency.TableName(),
		settings.ConsumerName.Env:     jsii.String(l.props.consumer.name),
		settings.FailureRecords.Env:   jsii.String("off"),
	}
	if l.props.consumer.failureRecords {
		env[settings.FailureRecords.Env] = jsii.String("on")
	}
	if !l.props.queues.receivesUnknown {
		// Unknown (an adopted queue's token): the consumer writes a record
		// at every failed delivery rather than at a count it is not.
		env[settings.MaxReceiveCount.Env] = jsii.String(strconv.Itoa(int(l.props.queues.maxReceiveCount)))
	}
	maps.Copy(env, l.props.consumer.contractEnvironment())
	maps.Copy(env, l.groupEnvironment())
	maps.Copy(env, l.metricsEnvironment())
	return env
}

// addConsumer builds the consumer from the bootstrap in code, or takes
// ConsumerProps.Function, then grants it its ports and wires the source
// queue to it.
func (l *lane) addConsumer(code string) {
	r := l.props.consumer
	if fn := r.function; fn != nil {
		l.consumer = fn
		l.consumerRole = fn.Role()
		if own, ok := fn.(awslambda.Function); ok {
			wanted := l.ConsumerEnvironment()
			if err := joinInvalid(environmentClashes(own, wanted)); err != nil {
				panic(fmt.Errorf("deadletter.NewLane %q: %w", *l.Node().Id(), err))
			}
			set := environmentOf(own)
			for k, v := range wanted {
				if _, ok := set[k]; !ok {
					own.AddEnvironment(jsii.String(k), v, nil)
				}
			}
		}
		// Its log group stays unknown: asking the function for it makes the
		// CDK add a log retention custom resource to a function that has no
		// log group of its own.
	} else {
		built := l.function(functionSpec{
			id:                  "Consumer",
			group:               "Consumer",
			description:         "Consumer of the lane's source queue; reports failures per record, sends invalid messages to the invalid queue.",
			roleDescription:     "Consumer of the source queue: its own logs, send to the invalid queue, items of the idempotency table.",
			code:                code,
			timeout:             r.timeout,
			memory:              r.memory,
			reservedConcurrency: r.reservedConcurrency,
			wired:               l.ConsumerEnvironment(),
			environment:         r.environment,
			override:            r.functionProps,
		})
		l.consumer = built.fn
		l.consumerRole = built.role
		l.consumerLogs = built.logs
	}
	l.grantConsumer()

	esProps := awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(r.batchSize),
		MaxConcurrency:          jsii.Number(r.maxConcurrency),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	if r.batchingWindow > 0 {
		esProps.MaxBatchingWindow = seconds2duration(r.batchingWindow)
	}
	l.eventSource = awslambdaeventsources.NewSqsEventSource(l.source, overlay(eventSourceRule, r.eventSourceProps, esProps))
	l.consumer.AddEventSource(l.eventSource)
}

// grantConsumer grants the consumer the calls of its ports, and no more
// (least privilege): SendMessage on the invalid queue (batch.InvalidQueue),
// four item actions on the idempotency table (dynamo's idempotencyAPI); the
// event source mapping grants consume on the source queue, which Lambda's
// poller uses. Nothing on the DLQ; on the parking queue and the ledger
// only on a lane that keeps group order (grantGroups). On a queue with a
// KMS key, the key actions too (grantQueue); the event source mapping
// grants kms:Decrypt on the source queue's key.
func (l *lane) grantConsumer() {
	consumer := l.consumer
	grantQueue(l.invalid, consumer, "sqs:SendMessage")
	l.idempotency.Grant(consumer, jsii.String("dynamodb:GetItem"), jsii.String("dynamodb:PutItem"),
		jsii.String("dynamodb:UpdateItem"), jsii.String("dynamodb:DeleteItem"))
	l.grantGroups(consumer)
}

// addReplay adds the replay function, configured entirely by its
// environment, and the EventBridge rule that invokes it. It has no event
// source mapping: it streams the DLQ itself, one run at a time.
func (l *lane) addReplay(code string) {
	r := l.props
	rp := r.replay

	// The lane's one route. The queue URLs are tokens; the stack renders the
	// JSON as an Fn::Join that CloudFormation resolves at deploy time.
	routes := awscdk.Stack_Of(l.scope()).ToJsonString(&[]map[string]any{l.route()}, nil)
	environment := rp.variables()
	maps.Copy(environment, rp.environment)
	wired := map[string]*string{
		settings.HealthURL.Env:        rp.healthURL,
		settings.ReplayRoutes.Env:     routes,
		settings.LedgerTable.Env:      l.ledger.TableName(),
		settings.IdempotencyTable.Env: l.idempotency.TableName(),
		settings.ConsumerName.Env:     jsii.String(r.consumer.name),
	}
	maps.Copy(wired, l.archiveEnvironment())
	l.replay = l.function(functionSpec{
		id:                  "Replay",
		group:               "Replay",
		description:         "Scheduled replay of the DLQ: back to the source queue under backoff, caps and gates, or to the parking queue when replays are exhausted.",
		roleDescription:     "Replay of the DLQ: its own logs, consume the DLQ, send to the source and parking queues, items of the ledger, read the idempotency table.",
		code:                code,
		timeout:             rp.timeout,
		memory:              rp.memory,
		reservedConcurrency: rp.reserved,
		wired:               wired,
		environment:         environment,
		override:            rp.functionProps,
	})
	replay := l.replay.fn

	l.grantReplay()

	// A failed scheduled run is not run again by Lambda's asynchronous
	// retries (2 by default): the next schedule is the retry, with fresh
	// gates, and an error alarm has fired meanwhile.
	replay.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{RetryAttempts: jsii.Number(0)})

	// The target adds the Lambda permission for events.amazonaws.com, scoped
	// to this rule. The function receives the scheduled event as is.
	l.schedule = awsevents.NewRule(l.scope(), jsii.String("ReplaySchedule"), &awsevents.RuleProps{
		Description: jsii.String("Invokes the lane's replay function. Disable it to stop scheduled replay during an incident."),
		Schedule:    awsevents.Schedule_Expression(jsii.String(rp.schedule)),
		Enabled:     jsii.Bool(rp.enabled),
		Targets:     &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(replay, nil)},
	})
	if gap, ok := shortestGap(rp.schedule); ok && gap < rp.timeout {
		awscdk.Annotations_Of(l.schedule).AddWarningV2(jsii.String(warnReplayOverlap), jsii.String(overlapWarning(rp.schedule, gap, rp.timeout)), nil)
	}
}

// grantReplay grants the replay function the actions of its ports and no
// more (least privilege): receive, hide and delete on the DLQ (and its
// depth for the refill gate); send on the source and parking queues; the
// ledger's item actions (dynamo's ledgerAPI); BatchGetItem on the
// idempotency table for the canary gate (dynamo's completionsAPI) and the
// archive's failure records; the archive's (grantArchive). No send to the
// invalid queue, no write on the consumer's records. On a
// queue with a KMS key, the key actions its SQS actions need
// (grantQueue).
func (l *lane) grantReplay() {
	replay := l.replay.fn
	grantQueue(l.deadLetter, replay, "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
	// GetQueueAttributes: the source's MaximumMessageSize, so a message
	// too large to go back is parked rather than failing every run.
	grantQueue(l.source, replay, "sqs:SendMessage", "sqs:GetQueueAttributes")
	grantQueue(l.parking, replay, "sqs:SendMessage")
	l.ledger.Grant(replay, jsii.String("dynamodb:GetItem"), jsii.String("dynamodb:PutItem"),
		jsii.String("dynamodb:UpdateItem"), jsii.String("dynamodb:Query"))
	l.idempotency.Grant(replay, jsii.String("dynamodb:BatchGetItem"))
	l.grantArchive()
}

// suppress records a cdk-nag suppression with its reason on c (its L1
// resource when c is an L2 construct).
func suppress(c constructs.IConstruct, rule, reason string) {
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String(rule), Reason: jsii.String(reason)},
	}, jsii.Bool(false))
}
