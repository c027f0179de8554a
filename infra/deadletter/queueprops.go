package deadletter

import (
	"math"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"

	"github.com/homingdlq/homing/internal/settings"
)

// Defaults of [QueuesProps]: the production-grade values; a local emulator
// profile overrides some of them with faster ones.
const (
	// defaultMaxReceiveCount is how many receives SQS allows before it moves
	// a message from the source queue to the DLQ.
	defaultMaxReceiveCount = 10
	// defaultSourceRetentionDays is the source queue's retention (the SQS default).
	defaultSourceRetentionDays = 4
	// defaultDeadLetterRetentionDays is the retention of the DLQ, the invalid
	// queue and the parking queue (the SQS maximum).
	defaultDeadLetterRetentionDays = 14
	// visibilityFactor is the minimum ratio of the source queue's visibility
	// timeout to the consumer timeout, as AWS recommends for SQS event sources.
	visibilityFactor = 6
)

// Ranges of [QueuesProps] enforced by [LaneProps.Validate], from the SQS quotas.
const (
	// minMaxReceiveCount and maxMaxReceiveCount bound MaxReceiveCount.
	minMaxReceiveCount = 1
	maxMaxReceiveCount = 1000
	// minRetentionSeconds and maxRetentionSeconds bound SQS message retention.
	minRetentionSeconds = 60
	maxRetentionSeconds = 14 * 24 * 3600
	// maxVisibilitySeconds is the SQS maximum visibility timeout (12 hours).
	maxVisibilitySeconds = 12 * 3600
)

// Message sizes of the lane's queues, in the bytes SQS counts (body plus
// attribute names, types and values), as package settings declares them.
const (
	// maxMessageBytes is SQS's largest message and the size of a queue
	// that does not set MaximumMessageSize; the size of the DLQ, the
	// invalid and the parking queues.
	maxMessageBytes = settings.MaxMessageBytes
	// metadataReserveBytes is what the consumer and the replay function may
	// add to a message when they forward it with their metadata attribute.
	metadataReserveBytes = settings.MetadataReserveBytes
	// SourceMaxMessageBytes is the source queue's MaximumMessageSize: any
	// message it accepts still fits the invalid and parking queues with our
	// metadata. The lane sets it on its own source queue and on an adopted
	// one that leaves it unset.
	SourceMaxMessageBytes = settings.MaxSourceMessageBytes
)

// QueuesProps configures the lane's four queues: the source queue, the DLQ,
// the invalid and the parking queue; or adopts the team's source queue and
// its DLQ. Every field is optional.
type QueuesProps struct {
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
	// if the queue leaves it unset: SQS's default, maxMessageBytes, would
	// accept messages that the invalid and parking queues cannot take with
	// the lane's metadata, so the lane sets SourceMaxMessageBytes (an update
	// without interruption) and warns at synth; set MaxMessageSizeBytes on
	// the queue, at most SourceMaxMessageBytes, to silence the warning. What
	// it cannot set it checks instead: the queue's visibility timeout is at
	// least 6x Consumer.Timeout (plus Consumer.MaxBatchingWindow), its
	// retention is shorter than DeadLetterRetention, a MaximumMessageSize
	// of its own leaves room for the lane's metadata (at most
	// SourceMaxMessageBytes), and its type is the lane's (LaneProps.Fifo).
	// SourceRetention, VisibilityTimeout and QueueProps are the lane's own
	// queue's props and must be unset; the queue's encryption, policy and
	// redrive allow-policy stay the team's (cdk-nag checks them as any
	// other queue of the stack). Default nil: the lane creates the queue.
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
	// than the source queue's. DeadLetterRetention and DeadLetterQueueProps
	// are the lane's own DLQ's props and must be unset. Only with a
	// SourceQueue. Default nil: the lane creates the DLQ.
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
	// message from the source queue to the DLQ. Default 10, or the count of
	// an adopted SourceQueue's own redrive policy; on a FIFO lane that
	// keeps group order defaultGroupMaxReceiveCount (a backstop: see
	// ConsumerProps.GroupOrder), at least ParkMargin+2; 1..1000.
	MaxReceiveCount *float64
	// VisibilityTimeout is the source queue's visibility timeout.
	// Default 6x Consumer.Timeout plus Consumer.MaxBatchingWindow; at least
	// 6x Consumer.Timeout, at most 12 hours.
	VisibilityTimeout awscdk.Duration
	// EncryptionKey encrypts the lane's own queues (the DLQ, the invalid
	// and the parking queue, and the source queue when the lane creates it)
	// with this KMS key (SSE-KMS) instead of SQS-managed keys. Every grant
	// the lane makes on a queue with a key (its own or an adopted
	// SourceQueue's EncryptionMasterKey) also grants the key actions SQS
	// needs: kms:GenerateDataKey and kms:Decrypt to send, kms:Decrypt to
	// receive. Default nil: SQS-managed keys.
	EncryptionKey awskms.IKey

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

	// QueueProps overrides the props of the source queue the lane creates
	// (not with a SourceQueue): DeliveryDelay, ReceiveMessageWaitTime,
	// DataKeyReuse, DeduplicationScope, FifoThroughputLimit pass through.
	// The lane owns QueueName, Fifo, ContentBasedDeduplication, Encryption,
	// EncryptionMasterKey, EnforceSSL, RemovalPolicy, RetentionPeriod,
	// VisibilityTimeout, RedriveAllowPolicy, DeadLetterQueue and
	// MaxMessageSizeBytes: setting one is refused (see [LaneProps]).
	// Default none.
	QueueProps *awssqs.QueueProps
	// DeadLetterQueueProps overrides the props of the DLQ the lane creates
	// (not with a DeadLetterQueue), as QueueProps does the source queue's;
	// QueueName and VisibilityTimeout pass through too. Default none.
	DeadLetterQueueProps *awssqs.QueueProps
	// InvalidQueueProps overrides the props of the invalid queue, as
	// DeadLetterQueueProps does the DLQ's. Default none.
	InvalidQueueProps *awssqs.QueueProps
	// ParkingQueueProps overrides the props of the parking queue, as
	// DeadLetterQueueProps does the DLQ's. Default none.
	ParkingQueueProps *awssqs.QueueProps
}

// queuesResolved is QueuesProps with the defaults applied and the
// adopted queues read, durations in seconds.
type queuesResolved struct {
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
	// deadLetterQueue is the team's DLQ (QueuesProps.DeadLetterQueue), nil
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
	key                 awskms.IKey
	sourceRetention     float64
	deadLetterRetention float64
	maxReceiveCount     float64
	// receivesUnknown: an adopted source redrives after a count that is a
	// token, so maxReceiveCount is not the redrive's.
	receivesUnknown bool
	visibility      float64
	// sourceMaxBytes is an adopted SourceQueue's MaximumMessageSize, NaN
	// when it is a token, nil when the queue leaves it unset (SQS's default,
	// maxMessageBytes) and the lane sets it to SourceMaxMessageBytes.
	sourceMaxBytes     *float64
	allowNativeRedrive bool
	operatorArns       []string
	// The overrides of the queues the lane creates.
	sourceProps, deadLetterProps, invalidProps, parkingProps *awssqs.QueueProps
}

// resolve applies the defaults and reads the adopted queues; fifo is
// LaneProps.Fifo, consumer the resolved consumer, whose timeout and
// batching window make the default visibility timeout.
func (p *QueuesProps) resolve(fifo *bool, consumer consumerResolved) queuesResolved {
	r := queuesResolved{
		fifo:                fifo != nil && *fifo,
		sourceRetention:     seconds(p.SourceRetention, defaultSourceRetentionDays*24*3600),
		deadLetterRetention: seconds(p.DeadLetterRetention, defaultDeadLetterRetentionDays*24*3600),
		maxReceiveCount:     number(p.MaxReceiveCount, defaultMaxReceiveCount),
		visibility:          seconds(p.VisibilityTimeout, visibilityFactor*consumer.timeout+consumer.batchingWindow),
		allowReplacement:    p.AllowQueueReplacement != nil && *p.AllowQueueReplacement,
		key:                 p.EncryptionKey,
		allowNativeRedrive:  p.AllowNativeRedrive != nil && *p.AllowNativeRedrive,
		operatorArns:        p.OperatorArns,
		sourceProps:         p.QueueProps,
		deadLetterProps:     p.DeadLetterQueueProps,
		invalidProps:        p.InvalidQueueProps,
		parkingProps:        p.ParkingQueueProps,
	}
	if p.SourceQueue != nil {
		r.adoptSource(p, fifo != nil)
	} else {
		r.withoutSource = setProps(
			namedSet{"Queues.SourceQueueName", p.SourceQueueName != nil},
			namedSet{"Queues.DeadLetterQueue", p.DeadLetterQueue != nil})
	}
	return r
}

// adoptSource reads what the lane needs of p.SourceQueue and notes why it
// cannot use it, if so; fifoSet says LaneProps.Fifo is set, or else the
// queue's type is the lane's.
func (r *queuesResolved) adoptSource(p *QueuesProps, fifoSet bool) {
	r.sourceQueue = p.SourceQueue
	r.ownSourceProps = setProps(
		namedSet{"Queues.SourceRetention", p.SourceRetention != nil},
		namedSet{"Queues.VisibilityTimeout", p.VisibilityTimeout != nil},
		namedSet{"Queues.QueueProps", p.QueueProps != nil})
	if f := p.SourceQueue.Fifo(); !fifoSet && f != nil {
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
	r.sourceRetention = known(cfn.MessageRetentionPeriod(), defaultSourceRetentionDays*24*3600)
	r.visibility = known(cfn.VisibilityTimeout(), 30)
	if v := cfn.MaximumMessageSize(); v != nil {
		b := known(v, maxMessageBytes)
		r.sourceMaxBytes = &b
	}
}

// validate reports the invalid queue props; consumerTimeout is the
// consumer's, in seconds, which the visibility timeout must allow for.
func (r queuesResolved) validate(consumerTimeout float64) []error {
	c := checker{prefix: "Queues."}
	c.whole("MaxReceiveCount", r.maxReceiveCount, minMaxReceiveCount, maxMaxReceiveCount)

	// An adopted queue's settings are named as the queue's; NaN is a token,
	// which CloudFormation checks.
	sourceRetention, visibility := "SourceRetention", "VisibilityTimeout"
	if r.sourceQueue != nil {
		sourceRetention, visibility = "SourceQueue's MessageRetentionPeriod", "SourceQueue's VisibilityTimeout"
		for _, problem := range r.sourceProblems {
			c.bad("SourceQueue %s", problem)
		}
		for _, problem := range r.deadLetterProblems {
			c.bad("DeadLetterQueue %s", problem)
		}
		if len(r.ownSourceProps) > 0 {
			c.bad("SourceQueue is the team's: %s configure the queue the lane creates; set them on that queue", strings.Join(r.ownSourceProps, ", "))
		}
		if f := r.sourceQueue.Fifo(); f != nil && *f != r.fifo {
			c.bad("SourceQueue is FIFO: %v, but LaneProps.Fifo is %v: all four queues are of one type", *f, r.fifo)
		}
		if b := r.sourceMaxBytes; b != nil && *b > SourceMaxMessageBytes {
			c.bad("SourceQueue's MaximumMessageSize is %v, want at most %d: the invalid and parking queues need room for the lane's metadata", *b, SourceMaxMessageBytes)
		}
	}
	if len(r.withoutSource) > 0 {
		c.bad("SourceQueue is unset: %s adopt a part of the team's existing lane and need its SourceQueue", strings.Join(r.withoutSource, ", "))
	}
	for _, f := range [...]struct {
		name string
		v    float64
	}{{sourceRetention, r.sourceRetention}, {"DeadLetterRetention", r.deadLetterRetention}} {
		if f.v < minRetentionSeconds || f.v > maxRetentionSeconds {
			c.bad("%s is %s, want %s..%s", f.name, human(f.v), human(minRetentionSeconds), human(maxRetentionSeconds))
		}
	}
	if r.deadLetterRetention <= r.sourceRetention {
		c.bad("DeadLetterRetention (%s) must be longer than %s (%s): SQS keeps a message's original enqueue time when it moves it to the DLQ",
			human(r.deadLetterRetention), sourceRetention, human(r.sourceRetention))
	}
	if r.visibility < visibilityFactor*consumerTimeout {
		c.bad("%s is %s, want at least %dx Consumer.Timeout (%s)", visibility, human(r.visibility), visibilityFactor, human(visibilityFactor*consumerTimeout))
	}
	if r.visibility > maxVisibilitySeconds {
		c.bad("%s is %s, want at most %s", visibility, human(r.visibility), human(maxVisibilitySeconds))
	}
	for _, arn := range r.operatorArns {
		if !strings.HasPrefix(arn, "arn:") {
			c.bad("OperatorArns has %q, want an IAM principal ARN (arn:...)", arn)
		}
	}
	errs := c.errs
	errs = append(errs, queueRule(queueSource).refused("Queues.QueueProps", r.sourceProps)...)
	errs = append(errs, queueRule(queueDeadLetter).refused("Queues.DeadLetterQueueProps", r.deadLetterProps)...)
	errs = append(errs, queueRule(queueLastResort).refused("Queues.InvalidQueueProps", r.invalidProps)...)
	errs = append(errs, queueRule(queueLastResort).refused("Queues.ParkingQueueProps", r.parkingProps)...)
	return errs
}

// queueKind tells the lane's queues apart in their override rules.
type queueKind int

const (
	queueSource queueKind = iota
	queueDeadLetter
	queueLastResort // the invalid and the parking queue
)

// queueRule is the override rule of a queue of kind k: what the lane sets
// on every queue of its own (see overrides.go).
func queueRule(k queueKind) overrideRule {
	retention, redrive, allow, size := "set Queues.DeadLetterRetention",
		"a queue of last resort redrives nowhere: a DLQ behind it would only hide messages further",
		"it denies every queue: no other queue may make it its DLQ",
		"it takes 1 MiB, SQS's largest message: a message forwarded with the lane's metadata must fit"
	switch k {
	case queueSource:
		retention = "set Queues.SourceRetention"
		redrive = "the lane's DLQ, after Queues.MaxReceiveCount receives"
		allow = "it denies every queue: no other queue may push its failures into the lane"
		size = "SourceMaxMessageBytes leaves room for the lane's metadata"
	case queueDeadLetter:
		redrive = "a DLQ behind the DLQ would hide dead letters from the replay"
		allow = "it names only the source queue (byQueue)"
	}
	rule := overrideRule{owns: []ownedField{
		{"Fifo", "set LaneProps.Fifo: all four queues are of one type"},
		{"ContentBasedDeduplication", "it is off on every FIFO queue of the lane: producers set MessageDeduplicationId, and the replay sends a deterministic one"},
		{"Encryption", "set Queues.EncryptionKey for SSE-KMS; unset, SQS-managed keys"},
		{"EncryptionMasterKey", "set Queues.EncryptionKey"},
		{"EnforceSSL", "every queue of the lane is TLS-only"},
		{"RemovalPolicy", "set LaneProps.RemovalPolicy"},
		{"RetentionPeriod", retention},
		{"RedriveAllowPolicy", allow},
		{"DeadLetterQueue", redrive},
		{"MaxMessageSizeBytes", size},
	}}
	if k == queueSource {
		rule.owns = append(rule.owns,
			ownedField{"QueueName", "the lane names the queue it creates (the DLQ's redrive allow-policy names it); for a name of your own, bring the queue as Queues.SourceQueue"},
			ownedField{"VisibilityTimeout", "set Queues.VisibilityTimeout"})
	}
	return rule
}
