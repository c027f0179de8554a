package deadletter

import (
	"strings"

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

// Item actions on the hold items, those of package dynamo's hold store
// (hold.Store) each function calls (TestHoldStoreGrants pins them to the
// store):
//   - the consumer calls every method of the store; it has GetItem,
//     PutItem, UpdateItem and DeleteItem on the whole table already (its
//     completion records), and BatchGetItem (Holds) and Query (Next,
//     Count) on the hold items;
//   - the replay function (hold.Keeper's Parked and Sweep) and the
//     operator (dlq groups, dlq groups release) read, list, count and
//     update holds: BatchGetItem (Holds), Query (List, Count), UpdateItem
//     (Update) and GetItem (Update's read of a hold whose condition
//     failed). Neither begins, appends to or ends a hold.
var (
	holdConsumerActions = []string{"dynamodb:BatchGetItem", "dynamodb:Query"}
	holdKeeperActions   = []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}
)

// holdKeyPatterns are the dynamodb:LeadingKeys patterns (StringLike) of
// the hold items of a lane whose consumer is scope: package dynamo's hold
// store keys the lane's holds "<scope>#holds" and the records held in a
// group "<scope>#hold#<group>" (TestHoldStoreGrants pins them to the
// store). scope is spelled literally ("*", "?" and "$" as IAM's ${*},
// ${?} and ${$}).
func holdKeyPatterns(scope string) []string {
	s := strings.NewReplacer("$", "${$}", "*", "${*}", "?", "${?}").Replace(scope)
	return []string{
		settings.ScopedKey(s, "holds"),
		settings.ScopedKey(s, "hold"+settings.KeySeparator+"*"),
	}
}

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
// groups: GROUP_ORDER and SOURCE_QUEUE_URL, where a held record that fails
// goes back as its group's head; none when the lane does not.
func (l *lane) groupEnvironment() map[string]*string {
	order := l.props.consumer.groupOrder
	if order == "" {
		return map[string]*string{}
	}
	return map[string]*string{
		settings.GroupOrder.Env:     jsii.String(order),
		settings.SourceQueueURL.Env: l.source.QueueUrl(),
	}
}

// grantHoldItems grants grantee actions on the idempotency table's hold
// items only: every key of the request must match holdKeyPatterns. Each of
// the actions names its keys (none is a Scan), so the condition is never
// vacuous.
func (l *lane) grantHoldItems(grantee awsiam.IGrantable, actions []string) {
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings(actions...),
		ResourceArns: &[]*string{l.idempotency.TableArn()},
		Conditions: &map[string]*map[string]any{
			"ForAllValues:StringLike": {"dynamodb:LeadingKeys": holdKeyPatterns(l.props.consumer.name)},
		},
	})
}
