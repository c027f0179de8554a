// Package deadletter provides [Lane], a CDK construct that bundles the
// dead-letter handling of one SQS source queue consumed by a Lambda function:
//
//	producer -> [source queue] --ESM (ReportBatchItemFailures)--> consumer --> downstream
//	                 |  ^                                               |
//	  SQS redrive    |  | replay                                        v receiver decides
//	                 v  |                                          [invalid queue]
//	              [DLQ] -- replay function (EventBridge schedule) --> [parking] when exhausted
//
// A lane holds:
//   - four queues (source, DLQ, invalid, parking), all standard or all FIFO,
//     encrypted with SQS-managed keys (or [QueuesProps].EncryptionKey),
//     with TLS-only queue policies; the
//     source's redrive policy moves a message to the DLQ after
//     MaxReceiveCount receives, the DLQ keeps messages longer than the source
//     and its redrive allow-policy (byQueue) names only the source queue,
//     whose own allow-policy, like the invalid and parking queues', denies
//     every queue. Their queue policies deny SendMessage to every IAM
//     principal but the lane's senders (the DLQ: none, only SQS's redrive;
//     the invalid queue: the consumer; the parking queue: the replay
//     function, [QueuesProps].OperatorArns, and the consumer of a lane
//     that keeps group order), and the DLQ's denies
//     StartMessageMoveTask unless [QueuesProps].AllowNativeRedrive;
//   - two DynamoDB tables, on-demand, with point-in-time recovery, SSE and a
//     TTL attribute: the idempotency table ([PartitionKey]) and the replay
//     ledger ([PartitionKey], [SortKey]), which on a FIFO lane that keeps
//     group order also keeps the parks of its groups;
//     deletion protection only with the removal policy RETAIN (the
//     default, RETAIN_ON_UPDATE_OR_DELETE, lets the rollback of a failed
//     first deploy delete them);
//   - the consumer: any function the team brings ([ConsumerProps].Function,
//     any runtime), or a provided.al2023 function the lane builds from a Go
//     bootstrap ([ConsumerProps].CodeDir; handler bootstrap, JSON logs to
//     its own log group, a role without managed policies). Either way an SQS
//     event source mapping reports batch item failures, with the lane's
//     batch size and maximum concurrency, and the consumer is granted only:
//     consume the source queue, SendMessage on the invalid queue, four item
//     actions on the idempotency table (and, when the lane built it, write
//     its log group). It has no permission on the DLQ;
//   - on a FIFO lane, each message group's order through failure
//     ([ConsumerProps].GroupOrder, package fifo): by default ("hold") a
//     failed head stays in the source under a backoff of its visibility,
//     SQS holding its group behind it, and a head that can never succeed
//     (invalid, delivered too often, about to expire) parks its group,
//     its later records following it to the parking queue in order until
//     `dlq groups release`; "skip" routes such a head alone and lets its
//     group go on; "off" keeps SQS's order only, which a failure that
//     reaches the DLQ breaks. With hold or skip the redrive is a backstop
//     (MaxReceiveCount [DefaultGroupMaxReceiveCount]), and the consumer
//     also gets GROUP_ORDER, SOURCE_QUEUE_URL, PARKING_QUEUE_URL,
//     SOURCE_RETENTION, MAX_RECEIVES (MaxReceiveCount - [ParkMargin]) and
//     SendMessage on the parking queue; with hold LEDGER_TABLE and the
//     parks' item actions on the ledger's partition of parks only, which
//     GrantOperator may read and end. A standard lane keeps no order and
//     has no such option;
//   - the replay function (functions/replay; same runtime, architecture and
//     logging set-up as the consumer, built by the same code) configured
//     entirely by its environment (REPLAY_ROUTES names the lane's DLQ,
//     source and parking queues), with no event source mapping, invoked by
//     an EventBridge rule on [ReplayProps].Schedule without asynchronous
//     retries; reserved concurrency only if [ReplayProps].ReservedConcurrency
//     is set. Its role has no managed policy and only: write its log group;
//     receive, change visibility, delete and read attributes on the DLQ;
//     send to the source queue and read its attributes; send to the parking
//     queue; GetItem, PutItem, UpdateItem and Query on the ledger;
//     BatchGetItem on the idempotency table. Nothing on the invalid
//     queue;
//   - alarms (DLQ depth, invalid and parking depth, consumer errors and
//     throttles, replay errors, the consumer's failed records and the
//     source queue's age, which page a downstream outage within
//     [PageWithinSeconds], and the replay's report of each run: the oldest
//     dead letter against the DLQ retention, dead letters in the rescue
//     window, a heartbeat; see [Alarms]) to an SNS topic, the team's own
//     ([AlarmProps].Topic) or one the lane creates, encrypted with its
//     own KMS key (CloudWatch may use it for this account's alarms only) and
//     TLS-only, and a dashboard.
//
// The team's own resources: a consumer function in any runtime
// ([ConsumerProps].Function), a source queue of the lane's stack and its
// DLQ ([QueuesProps].SourceQueue and DeadLetterQueue: the lane sets the
// queue's redrive policy, and its MaximumMessageSize to
// [SourceMaxMessageBytes] with a warning if it is unset, and checks what it
// cannot set) and an alarm topic. The downstream's health gate is an
// optional URL ([ReplayProps].HealthURL). [Lane].GrantOperator gives the
// on-call role what the runbook (docs/OPERATIONS.md) has it do, and nothing
// more.
//
// No resource gets a hand-written physical name. The one exception to
// "let CloudFormation name it" is the source queue: its name is generated by
// the CDK from the construct path (or is the team's queue's own), because
// the DLQ's allow-policy must name it without a reference cycle.
//
// Every grant on a queue encrypted with a KMS key (an adopted SSE-KMS
// SourceQueue, or QueuesProps.EncryptionKey) also grants the key actions SQS needs
// for it: kms:GenerateDataKey and kms:Decrypt to send, kms:Decrypt to
// receive.
//
// Every lane resource satisfies the AwsSolutions checks of cdk-nag; the two
// findings that do not apply (AwsSolutions-SQS3 on the invalid and parking
// queues, which are queues of last resort) are suppressed with a reason.
//
// A lane declares a stack output per key of the settings package, named
// settings.OutputID(name, key) (the orders lane's DLQ: OrdersDeadLetterQueueUrl),
// and tags every resource settings.TagLane=<name>, its queues, tables and
// functions settings.TagRole=<role>: `dlq --lane <name>` finds it by either.
// Two lanes of one stack need different names ([LaneProps].Name, by default
// the construct id in kebab case).
//
// Operators stop scheduled replay during an incident without a deploy:
// `aws events disable-rule --name <rule>` (the lane's ReplayScheduleName
// output), and enable-rule to resume. ReplayProps.Enabled
// is the state a deploy that creates or changes the rule gives it. A
// schedule that starts runs more often than ReplayProps.Timeout lets them
// end draws a warning at synth: overlapping runs are safe (the ledger
// leases every dead letter to one run), but each applies its own rate.
//
// Another team's CDK app uses it as any construct library:
//
//	go get github.com/homingdlq/homing/infra@<version>
//
// The package imports the CDK, cdk-nag and homing's dependency-free settings
// package, nothing internal. The lane deploys homing's replay function
// (github.com/homingdlq/homing/functions/replay) from CodeDir/replay/bootstrap
// when CodeDir is set, else as it builds it at synth from the version the
// app requires (see the examples).
//
// Props follow the CDK's Go conventions (pointers, awscdk.Duration) and are
// checked at synth time by [LaneProps.Validate]; [NewLane] panics with that
// error, as CDK constructs do. [LaneProps] holds the lane-wide fields and
// one group per part of the lane: [QueuesProps], [ConsumerProps],
// [AlarmProps] and [ReplayProps]. Each group also takes pass-through
// overrides of the CDK props the lane builds from, in the style of
// aws-solutions-constructs (QueuesProps.QueueProps, DeadLetterQueueProps,
// InvalidQueueProps, ParkingQueueProps; ConsumerProps.FunctionProps and
// EventSourceProps; ReplayProps.FunctionProps): the lane's own settings win,
// and an override that sets one of them is refused at synth, naming what
// sets it instead; an override wins over the lane's defaults; every other
// field passes through.
package deadletter
