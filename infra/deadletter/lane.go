package deadletter

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Key schema of the lane's tables; internal/dynamo reads and writes the same
// attribute names.
const (
	// PartitionKey is the String partition key of both tables.
	PartitionKey = "pk"
	// SortKey is the String sort key of the replay ledger table.
	SortKey = "sk"
	// TTLAttribute holds a record's expiry in epoch seconds on both tables.
	// DynamoDB's TTL deletion is housekeeping only: readers check the expiry
	// themselves.
	TTLAttribute = "expiresAt"
)

// Lane is one dead-letter lane for one source queue: the queues, the tables,
// the consumer function with its event source mapping, the alarms and the
// dashboard. Every resource is reachable through a getter so that a stack can
// output it and a later construct can grant on it. A Lane is built once by
// [NewLane] and is not safe for concurrent use (no construct is).
type Lane interface {
	constructs.Construct
	// SourceQueue receives the producers' messages; its redrive policy moves
	// a message to the DLQ after MaxReceiveCount receives.
	SourceQueue() awssqs.Queue
	// DeadLetterQueue holds the messages that failed MaxReceiveCount times.
	// Its redrive allow-policy names only the source queue.
	DeadLetterQueue() awssqs.Queue
	// InvalidQueue holds the messages the consumer rejected as never valid,
	// with their reason. They are fixed at the source, never replayed as is.
	InvalidQueue() awssqs.Queue
	// ParkingQueue holds the dead letters whose replays are exhausted.
	ParkingQueue() awssqs.Queue
	// IdempotencyTable is the idempotent receiver's table (pk; TTL expiresAt).
	IdempotencyTable() awsdynamodb.Table
	// LedgerTable is the replay ledger (pk, sk; TTL expiresAt).
	LedgerTable() awsdynamodb.Table
	// Consumer is the consumer function.
	Consumer() awslambda.Function
	// ConsumerRole is the consumer's execution role: no managed policies,
	// only the grants the lane makes.
	ConsumerRole() awsiam.Role
	// ConsumerLogGroup receives the consumer's JSON logs.
	ConsumerLogGroup() awslogs.LogGroup
	// ConsumerEventSource is the SQS event source mapping of the consumer.
	ConsumerEventSource() awslambdaeventsources.SqsEventSource
	// AlarmTopic receives every alarm and OK transition.
	AlarmTopic() awssns.Topic
	// AlarmTopicKey encrypts AlarmTopic.
	AlarmTopicKey() awskms.Key
	// Alarms are the lane's alarms.
	Alarms() Alarms
	// Dashboard shows the queue depths and ages and the consumer's health.
	Dashboard() awscloudwatch.Dashboard
}

type lane struct {
	constructs.Construct
	props resolved

	source, deadLetter, invalid, parking awssqs.Queue
	idempotency, ledger                  awsdynamodb.Table
	consumer                             awslambda.Function
	consumerRole                         awsiam.Role
	consumerLogs                         awslogs.LogGroup
	eventSource                          awslambdaeventsources.SqsEventSource
	topic                                awssns.Topic
	topicKey                             awskms.Key
	alarms                               Alarms
	dashboard                            awscloudwatch.Dashboard
}

// NewLane adds a lane under scope. Following the CDK convention for invalid
// construct props, it panics when props are invalid (the value is an error
// wrapping [ErrInvalidProps], listing every problem; see [LaneProps.Validate])
// or when CodeDir/consumer/bootstrap does not exist.
func NewLane(scope constructs.Construct, id string, props *LaneProps) Lane {
	if err := props.Validate(); err != nil {
		panic(fmt.Errorf("deadletter.NewLane %q: %w", id, err))
	}
	r := props.resolve()
	consumerCode, err := r.codePath("consumer")
	if err == nil {
		_, err = os.Stat(filepath.Join(consumerCode, "bootstrap"))
	}
	if err != nil {
		panic(fmt.Errorf("deadletter.NewLane %q: consumer code: %w (build it with `make build`, ARCH=arm64 for AWS)", id, err))
	}

	// The lane is a Go "subclass" of Construct (registered with jsii by the
	// _Override constructor), so that it can itself be the scope of further
	// constructs.
	l := &lane{props: r}
	constructs.NewConstruct_Override(l, scope, jsii.String(id))
	l.addQueues()
	l.addTables()
	l.addConsumer(consumerCode)

	// Replay function and schedule: the replay issue adds them here, as
	// l.addReplay(props.Replay), before the alarms so that they can watch it.
	// The replay function needs:
	//   - code CodeDir/replay (bootstrap), the same runtime, architecture and
	//     logging set-up as the consumer, with its own role and log group;
	//   - l.deadLetter.GrantConsumeMessages (receive, change visibility, delete);
	//   - l.source.GrantSendMessages and l.parking.GrantSendMessages;
	//   - l.ledger.GrantReadWriteData (or the narrower item actions);
	//   - l.idempotency.Grant(fn, "dynamodb:GetItem") for the canary gate;
	//   - an EventBridge rule (awsevents.Schedule_Rate, every 15 minutes on
	//     AWS, a minute locally) targeting it, and an alarm on its errors.
	// The consumer must keep having no permission on the DLQ.

	l.addAlarms()
	l.addDashboard()
	return l
}

func (l *lane) SourceQueue() awssqs.Queue                                 { return l.source }
func (l *lane) DeadLetterQueue() awssqs.Queue                             { return l.deadLetter }
func (l *lane) InvalidQueue() awssqs.Queue                                { return l.invalid }
func (l *lane) ParkingQueue() awssqs.Queue                                { return l.parking }
func (l *lane) IdempotencyTable() awsdynamodb.Table                       { return l.idempotency }
func (l *lane) LedgerTable() awsdynamodb.Table                            { return l.ledger }
func (l *lane) Consumer() awslambda.Function                              { return l.consumer }
func (l *lane) ConsumerRole() awsiam.Role                                 { return l.consumerRole }
func (l *lane) ConsumerLogGroup() awslogs.LogGroup                        { return l.consumerLogs }
func (l *lane) ConsumerEventSource() awslambdaeventsources.SqsEventSource { return l.eventSource }
func (l *lane) AlarmTopic() awssns.Topic                                  { return l.topic }
func (l *lane) AlarmTopicKey() awskms.Key                                 { return l.topicKey }
func (l *lane) Alarms() Alarms                                            { return l.alarms }
func (l *lane) Dashboard() awscloudwatch.Dashboard                        { return l.dashboard }

// scope is the lane's own construct, the parent of everything it creates.
func (l *lane) scope() constructs.Construct { return l }

func seconds2duration(s float64) awscdk.Duration { return awscdk.Duration_Seconds(jsii.Number(s)) }

// queue creates a queue with the settings every lane queue shares: SSE with
// SQS-managed keys, a TLS-only queue policy, the lane's FIFO choice and
// removal policy.
func (l *lane) queue(id string, props *awssqs.QueueProps) awssqs.Queue {
	props.Encryption = awssqs.QueueEncryption_SQS_MANAGED
	props.EnforceSSL = jsii.Bool(true)
	props.RemovalPolicy = l.props.removalPolicy
	if l.props.fifo {
		props.Fifo = jsii.Bool(true)
		props.ContentBasedDeduplication = jsii.Bool(false)
	}
	return awssqs.NewQueue(l.scope(), jsii.String(id), props)
}

func (l *lane) addQueues() {
	r := l.props
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
		suffix += ".fifo"
	}
	sourceName := *awscdk.Names_UniqueResourceName(l.scope(), &awscdk.UniqueResourceNameOptions{
		MaxLength: jsii.Number(float64(80 - len(suffix))),
		Separator: jsii.String("-"),
	}) + suffix
	sourceRef := awssqs.Queue_FromQueueAttributes(l.scope(), jsii.String("SourceQueueRef"), &awssqs.QueueAttributes{
		QueueArn:  stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("sqs"), Resource: jsii.String(sourceName)}),
		QueueName: jsii.String(sourceName),
		Fifo:      jsii.Bool(r.fifo),
	})

	l.deadLetter = l.queue("DeadLetterQueue", &awssqs.QueueProps{
		RetentionPeriod: seconds2duration(r.deadLetterRetention),
		RedriveAllowPolicy: &awssqs.RedriveAllowPolicy{
			RedrivePermission: awssqs.RedrivePermission_BY_QUEUE,
			SourceQueues:      &[]awssqs.IQueue{sourceRef},
		},
	})
	l.source = l.queue("SourceQueue", &awssqs.QueueProps{
		QueueName:         jsii.String(sourceName),
		RetentionPeriod:   seconds2duration(r.sourceRetention),
		VisibilityTimeout: seconds2duration(r.visibility),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           l.deadLetter,
			MaxReceiveCount: jsii.Number(r.maxReceiveCount),
		},
	})
	// Neither lane of last resort may become another queue's DLQ.
	l.invalid = l.queue("InvalidQueue", &awssqs.QueueProps{
		RetentionPeriod:    seconds2duration(r.deadLetterRetention),
		RedriveAllowPolicy: &awssqs.RedriveAllowPolicy{RedrivePermission: awssqs.RedrivePermission_DENY_ALL},
	})
	l.parking = l.queue("ParkingQueue", &awssqs.QueueProps{
		RetentionPeriod:    seconds2duration(r.deadLetterRetention),
		RedriveAllowPolicy: &awssqs.RedriveAllowPolicy{RedrivePermission: awssqs.RedrivePermission_DENY_ALL},
	})
	for _, q := range []awssqs.Queue{l.invalid, l.parking} {
		suppress(q, "AwsSolutions-SQS3",
			"This queue is itself a lane of last resort (invalid messages, or dead letters whose replays are exhausted): "+
				"it is watched by a depth alarm and drained by operators, and a DLQ behind it would only hide messages further.")
	}
}

func (l *lane) table(id string, sortKey bool) awsdynamodb.Table {
	props := &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:   awsdynamodb.TableEncryption_AWS_MANAGED,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(TTLAttribute),
		RemovalPolicy:       l.props.removalPolicy,
	}
	if sortKey {
		props.SortKey = &awsdynamodb.Attribute{Name: jsii.String(SortKey), Type: awsdynamodb.AttributeType_STRING}
	}
	return awsdynamodb.NewTable(l.scope(), jsii.String(id), props)
}

func (l *lane) addTables() {
	l.idempotency = l.table("IdempotencyTable", false)
	l.ledger = l.table("LedgerTable", true)
}

func (l *lane) addConsumer(code string) {
	r := l.props
	l.consumerLogs = awslogs.NewLogGroup(l.scope(), jsii.String("ConsumerLogs"), &awslogs.LogGroupProps{
		Retention:     r.logRetention,
		RemovalPolicy: r.removalPolicy,
	})
	// An explicit role keeps the AWSLambdaBasicExecutionRole managed policy
	// (logs on every log group) off the function: it may write to its own log
	// group only.
	l.consumerRole = awsiam.NewRole(l.scope(), jsii.String("ConsumerRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Consumer of the source queue: its own logs, send to the invalid queue, items of the idempotency table."),
	})
	l.consumerLogs.GrantWrite(l.consumerRole)

	env := map[string]*string{
		"INVALID_QUEUE_URL": l.invalid.QueueUrl(),
		"IDEMPOTENCY_TABLE": l.idempotency.TableName(),
		"TAX_SERVICE_URL":   r.taxServiceURL,
		"CONSUMER_NAME":     jsii.String(r.consumerName),
	}
	for k, v := range r.environment {
		env[k] = jsii.String(v)
	}
	l.consumer = awslambda.NewFunction(l.scope(), jsii.String("Consumer"), &awslambda.FunctionProps{
		Description:                  jsii.String("Invoice consumer of the source queue; reports failures per record, sends invalid orders to the invalid queue."),
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         awslambda.Code_FromAsset(jsii.String(code), nil),
		Architecture:                 r.architecture,
		Timeout:                      seconds2duration(r.timeout),
		MemorySize:                   jsii.Number(r.memory),
		ReservedConcurrentExecutions: r.reservedConcurrency,
		Role:                         l.consumerRole,
		LogGroup:                     l.consumerLogs,
		LoggingFormat:                awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2:        awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:             awslambda.SystemLogLevel_WARN,
		Environment:                  &env,
	})

	// Least privilege: send on the invalid queue, four item actions on the
	// idempotency table, consume on the source queue (the event source
	// mapping's grant). Nothing on the DLQ, the parking queue or the ledger.
	l.invalid.GrantSendMessages(l.consumer)
	l.idempotency.Grant(l.consumer, jsii.String("dynamodb:GetItem"), jsii.String("dynamodb:PutItem"),
		jsii.String("dynamodb:UpdateItem"), jsii.String("dynamodb:DeleteItem"))

	esProps := &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(r.batchSize),
		MaxConcurrency:          jsii.Number(r.maxConcurrency),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	if r.batchingWindow > 0 {
		esProps.MaxBatchingWindow = seconds2duration(r.batchingWindow)
	}
	l.eventSource = awslambdaeventsources.NewSqsEventSource(l.source, esProps)
	l.consumer.AddEventSource(l.eventSource)
}

// suppress records a cdk-nag suppression with its reason on c (its L1
// resource when c is an L2 construct).
func suppress(c constructs.IConstruct, rule, reason string) {
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String(rule), Reason: jsii.String(reason)},
	}, jsii.Bool(false))
}
