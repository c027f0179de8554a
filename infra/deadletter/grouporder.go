package deadletter

import (
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/internal/settings"
)

// The values of [ConsumerProps].GroupOrder: the consumer's GROUP_ORDER
// (package fifo's Hold and Skip); GroupOrderOff sets none.
const (
	GroupOrderHold = "hold"
	GroupOrderSkip = "skip"
	GroupOrderOff  = "off"
)

// On a FIFO lane that keeps group order, the source's redrive is a
// backstop the consumer stays ahead of.
const (
	// defaultGroupMaxReceiveCount is [QueuesProps].MaxReceiveCount's
	// default on such a lane.
	defaultGroupMaxReceiveCount = 100
	// ParkMargin is how many deliveries before MaxReceiveCount the
	// consumer parks a head (its MAX_RECEIVES): deliveries that never
	// reach the consumer's code (a failed start) count too.
	ParkMargin = 10
)

// The item actions package dynamo's group store (fifo.Store) calls on the
// ledger's partition settings.GroupsPartition, by principal
// (TestGroupStoreGrants runs the store against them):
//   - parksConsumerActions: the consumer reads the batch's parks
//     (BatchGetItem), parks (PutItem) and counts records and copies
//     (UpdateItem);
//   - parksOperatorActions: an operator's `dlq groups release` reads parks
//     (BatchGetItem), begins and ends rounds (UpdateItem, which it has on
//     the whole ledger with Query: operatorActions) and ends parks
//     (DeleteItem).
var (
	parksConsumerActions = []string{"dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	parksOperatorActions = []string{"dynamodb:BatchGetItem", "dynamodb:DeleteItem"}
)

// groupOrder is the group order in effect on a lane: GroupOrderHold (the
// default of a FIFO lane) or GroupOrderSkip, or "" when the lane keeps
// SQS's order only (a standard lane, or GroupOrderOff). A value Validate
// refuses is returned as is.
func groupOrder(prop *string, fifo bool) string {
	switch {
	case !fifo:
		return ""
	case prop == nil:
		return GroupOrderHold
	case *prop == GroupOrderOff:
		return ""
	}
	return *prop
}

// validateGroupOrder reports an invalid Consumer.GroupOrder; fifo is the
// lane's queue type.
func (r consumerResolved) validateGroupOrder(fifo bool) []error {
	p := r.groupOrderProp
	if p == nil {
		return nil
	}
	c := checker{prefix: "Consumer."}
	switch v := *p; {
	case v != GroupOrderHold && v != GroupOrderSkip && v != GroupOrderOff:
		c.bad("GroupOrder is %q, want %q, %q or %q", v, GroupOrderHold, GroupOrderSkip, GroupOrderOff)
	case !fifo && v != GroupOrderOff:
		c.bad("GroupOrder is %q, but the lane is standard: only FIFO queues have message groups (set LaneProps.Fifo, or leave GroupOrder unset)", v)
	}
	return c.errs
}

// maxReceives is the consumer's MAX_RECEIVES on a lane that keeps group
// order: ParkMargin deliveries before the redrive's.
func (r resolved) maxReceives() float64 { return r.queues.maxReceiveCount - ParkMargin }

// validateGroups reports what keeps a lane from keeping group order: a
// backstop too close for the consumer to park first, a source retention
// the consumer cannot be told, a consumer whose role the parking queue's
// policy cannot name.
func (r resolved) validateGroups() []error {
	if r.consumer.groupOrder == "" {
		return nil
	}
	c := checker{prefix: "Queues."}
	if r.maxReceives() < float64(settings.MaxReceives.Min) {
		c.bad("MaxReceiveCount is %v, want at least %d on a FIFO lane that keeps group order: the consumer parks a head %d deliveries before the redrive (its %s), which is only the backstop",
			r.queues.maxReceiveCount, ParkMargin+settings.MaxReceives.Min, ParkMargin, settings.MaxReceives.Env)
	}
	if math.IsNaN(r.queues.sourceRetention) {
		c.bad("SourceQueue's MessageRetentionPeriod is a token: a FIFO lane that keeps group order tells its consumer the retention (%s), which parks a head before it expires; set a number, or GroupOrder off",
			settings.SourceRetention.Env)
	}
	if fn := r.consumer.function; fn != nil && fn.Role() == nil {
		c.prefix = "Consumer."
		c.bad("Function has no role the lane knows: on a FIFO lane that keeps group order the consumer sends to the parking queue, whose policy names its senders; import it with its role, or set GroupOrder off")
	}
	return c.errs
}

// groupEnvironment are the consumer variables of a lane that keeps group
// order (none otherwise): GROUP_ORDER, SOURCE_QUEUE_URL (where a failed
// head's visibility is set), PARKING_QUEUE_URL, SOURCE_RETENTION and
// MAX_RECEIVES, and with hold LEDGER_TABLE (its parks).
func (l *lane) groupEnvironment() map[string]*string {
	order := l.props.consumer.groupOrder
	if order == "" {
		return map[string]*string{}
	}
	retention := time.Duration(l.props.queues.sourceRetention) * time.Second
	env := map[string]*string{
		settings.GroupOrder.Env:      jsii.String(order),
		settings.SourceQueueURL.Env:  l.source.QueueUrl(),
		settings.ParkingQueueURL.Env: l.parking.QueueUrl(),
		settings.SourceRetention.Env: jsii.String(settings.FormatDuration(retention)),
		settings.MaxReceives.Env:     jsii.String(strconv.Itoa(int(l.props.maxReceives()))),
	}
	if order == GroupOrderHold {
		env[settings.ParksTable.Env] = l.ledger.TableName()
	}
	return env
}

// grantGroups grants the consumer of a lane that keeps group order what
// package fifo's Keeper calls: SendMessage on the parking queue (and its
// key's actions), and with hold the group store's item actions on the
// ledger's partition settings.GroupsPartition only. Its
// ChangeMessageVisibility and DeleteMessage on the source come with the
// event source mapping's grant to consume it.
func (l *lane) grantGroups(consumer awslambda.IFunction) {
	if l.props.consumer.groupOrder == "" {
		return
	}
	grantQueue(l.parking, consumer, "sqs:SendMessage")
	if l.props.consumer.groupOrder == GroupOrderHold {
		l.grantParks(consumer, parksConsumerActions)
	}
}

// grantParks grants grantee actions on the items of the ledger's
// partition settings.GroupsPartition (dynamodb:LeadingKeys), and on no
// other item.
func (l *lane) grantParks(grantee awsiam.IGrantable, actions []string) {
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings(actions...),
		ResourceArns: &[]*string{l.ledger.TableArn()},
		Conditions: &map[string]*map[string]any{
			"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": []string{settings.GroupsPartition}},
		},
	})
}
