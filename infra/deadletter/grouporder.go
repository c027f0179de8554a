package deadletter

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/settings"
)

// The values of [ConsumerProps].GroupOrder. GroupOrderHold and
// GroupOrderSkip are the consumer's GROUP_ORDER and the replay route's
// "groups" (package hold's KeepHeld and Skip); GroupOrderOff sets neither.
const (
	GroupOrderHold = "hold"
	GroupOrderSkip = "skip"
	GroupOrderOff  = "off"
)

// The item actions package dynamo's hold store (hold.Store) calls on the
// lane's hold table, by the principal that uses it (TestHoldStoreGrants
// pins them to the store). IAM authorises a TransactWriteItems item by
// item, each by the action of its kind: Append's update of the hold and
// put of the record are an UpdateItem and a PutItem (it checks no other
// item, so no ConditionCheckItem).
//   - holdConsumerActions: the consumer calls every method of the store
//     (it begins, appends to, drains and ends holds);
//   - holdKeeperActions: the replay function (hold.Keeper's Parked,
//     Applied and Sweep) and the operator (dlq groups, dlq groups
//     release) read, list, count and update holds: BatchGetItem (Holds),
//     Query (List, Count), UpdateItem (Update) and GetItem (Update's read
//     of a hold whose condition failed). Neither begins, appends to or
//     ends a hold.
var (
	holdConsumerActions = []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query",
		"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
	holdKeeperActions = []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}
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

// groupEnvironment are the consumer variables of a lane that holds its
// groups: GROUP_ORDER, SOURCE_QUEUE_URL, where a held record that fails
// goes back as its group's head, and HOLD_TABLE; none when the lane does
// not.
func (l *lane) groupEnvironment() map[string]*string {
	order := l.props.consumer.groupOrder
	if order == "" {
		return map[string]*string{}
	}
	return map[string]*string{
		settings.GroupOrder.Env:     jsii.String(order),
		settings.SourceQueueURL.Env: l.source.QueueUrl(),
		settings.HoldTable.Env:      l.holdTableName(),
	}
}

// addHoldTable creates the hold table of a lane that holds its groups
// (none otherwise): pk and sk strings, as dynamo.HoldStore keys its
// items, and no TTL, since a hold lasts until its group is drained,
// however long that takes.
func (l *lane) addHoldTable() {
	if l.props.consumer.groupOrder == "" {
		return
	}
	l.holds = l.table("HoldTable", tableSpec{sortKey: true})
}

// holdTableName is the hold table's name, nil when the lane has none
// (so that no variable names it).
func (l *lane) holdTableName() *string {
	if l.holds == nil {
		return nil
	}
	return l.holds.TableName()
}

// grantHolds grants grantee actions on the lane's hold table, if the lane
// has one.
func (l *lane) grantHolds(grantee awsiam.IGrantable, actions []string) {
	if l.holds != nil {
		l.holds.Grant(grantee, pointers(actions)...)
	}
}
