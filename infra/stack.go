package main

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/settings"
)

// StackName is the CloudFormation stack name of every profile.
const StackName = "Homing"

// OrdersLaneID is the construct id of the order lane; its name, and so the
// prefix of its outputs (settings.OutputID), is "orders".
const OrdersLaneID = "Orders"

// The orders lane's contract is the sample consumer's own: its business
// key (the order id) and the part of the body its payload hash covers, so
// that the replay's already-applied removal compares the hash the consumer
// recorded.
const (
	OrdersKey         = invoicing.KeyExpr
	OrdersPayloadHash = invoicing.HashPart
)

// ErrInvalidStackProps is wrapped by the value NewHomingStack panics with
// when HomingStackProps itself (not a lane's props) is invalid.
var ErrInvalidStackProps = errors.New("invalid HomingStackProps")

// HomingStackProps configures [NewHomingStack].
type HomingStackProps struct {
	awscdk.StackProps
	// TaxServiceURL is the base URL of the tax and invoice service: the
	// order consumer's TAX_SERVICE_URL, and the replay's health gate (its
	// /health). When nil the stack declares a TaxServiceUrl CloudFormation
	// parameter and uses it, so that the URL can be given at deploy time.
	TaxServiceURL *string
	// AllowPlainHTTP lets TaxServiceURL be an http:// URL. Default false:
	// https:// only, since order bodies carry tax ids; the parameter's
	// pattern checks a URL given at deploy time. The local profile sets it
	// for its stand-in on 127.0.0.1.
	AllowPlainHTTP *bool
	// Orders configures the order lane. The stack wires the tax service into
	// it (Consumer.Environment TAX_SERVICE_URL, Replay.HealthURL) and names
	// its consumer settings.ConsumerName.Default ("invoice", the function's
	// own default) unless Orders.Consumer.Name is set.
	Orders deadletter.LaneProps
	// TableDeletionProtectionParameter declares the deploy parameter
	// TableDeletionProtection ("true" or "false", default "false") that
	// sets the deletion protection of the order lane's tables, in place of
	// Orders.DeletionProtection. A rollback cannot delete a protected table,
	// so a first deploy that fails with protection on cannot be rolled back
	// and retried: deploy an environment first without it, then set it to
	// true (the deploy workflow passes the environment's variable
	// TABLE_DELETION_PROTECTION). The aws profile sets it. Default false.
	TableDeletionProtectionParameter *bool
	// Payments, when set, adds the example lane (examples/: payments
	// captured -> ledger entries, FIFO) beside the order lane; see
	// newPaymentsLane. Default nil: no example lane (the local profile sets
	// it).
	Payments *deadletter.LaneProps
}

// NewHomingStack composes the order lane, whose construct declares the
// outputs of every queue, table, function, schedule and topic it holds
// (settings.OutputID("orders", key)), and the example lane when
// props.Payments is set ("payments"). It panics, as CDK constructs do, when
// the lane props are invalid (see deadletter.LaneProps.Validate) or the
// tax service's URL is (ErrInvalidStackProps).
func NewHomingStack(scope constructs.Construct, id string, props *HomingStackProps) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)

	taxURL := props.TaxServiceURL
	if taxURL == nil {
		taxURL = awscdk.NewCfnParameter(stack, jsii.String("TaxServiceUrl"), &awscdk.CfnParameterProps{
			Type:                  jsii.String("String"),
			Description:           jsii.String("Base URL of the tax and invoice service the consumer calls (and whose /health gates replay)."),
			AllowedPattern:        jsii.String(taxURLPattern(props.AllowPlainHTTP)),
			ConstraintDescription: jsii.String("an https:// URL (an http:// one only where the lane allows plain HTTP)"),
		}).ValueAsString()
	} else if err := validateTaxURL(*taxURL, props.AllowPlainHTTP != nil && *props.AllowPlainHTTP); err != nil {
		panic(err)
	}

	orders := props.Orders
	orders.Consumer.Environment = maps.Clone(orders.Consumer.Environment)
	if orders.Consumer.Environment == nil {
		orders.Consumer.Environment = map[string]string{}
	}
	orders.Consumer.Environment[settings.TaxServiceURL.Env] = *taxURL
	orders.Replay.HealthURL = taxURL
	if orders.Consumer.Name == nil {
		orders.Consumer.Name = jsii.String(settings.ConsumerName.Default)
	}
	ordersContract(&orders)
	lane := deadletter.NewLane(stack, OrdersLaneID, &orders)
	if p := props.TableDeletionProtectionParameter; p != nil && *p {
		protectTablesByParameter(stack, lane)
	}
	if props.Payments != nil {
		newPaymentsLane(stack, *props.Payments)
	}
	return stack
}

// validateTaxURL checks a TaxServiceURL given at synthesis as the
// parameter's pattern checks one given at deploy time; a token (a
// parameter of the caller's) is left to its own pattern.
func validateTaxURL(url string, allowPlainHTTP bool) error {
	if *awscdk.Token_IsUnresolved(jsii.String(url)) {
		return nil
	}
	switch {
	case strings.HasPrefix(url, "https://") && len(url) > len("https://"):
		return nil
	case strings.HasPrefix(url, "http://") && len(url) > len("http://") && allowPlainHTTP:
		return nil
	case allowPlainHTTP:
		return fmt.Errorf("%w: TaxServiceURL is %q, want an http:// or https:// URL", ErrInvalidStackProps, url)
	default:
		return fmt.Errorf("%w: TaxServiceURL is %q, want an https:// URL (order bodies carry tax ids; AllowPlainHTTP permits http://)", ErrInvalidStackProps, url)
	}
}

// taxURLPattern is the TaxServiceUrl parameter's pattern: https:// only,
// unless the stack allows plain HTTP, as validateTaxURL checks a URL given
// at synthesis.
func taxURLPattern(allowPlainHTTP *bool) string {
	if allowPlainHTTP != nil && *allowPlainHTTP {
		return `^https?://\S+$`
	}
	return `^https://\S+$`
}

// TableDeletionProtectionParameterName is the deploy parameter of
// HomingStackProps.TableDeletionProtectionParameter.
const TableDeletionProtectionParameterName = "TableDeletionProtection"

// protectTablesByParameter declares the TableDeletionProtection parameter
// and makes it the deletion protection of lane's tables (true or false by a
// condition, so the template holds booleans only).
func protectTablesByParameter(stack awscdk.Stack, lane deadletter.Lane) {
	param := awscdk.NewCfnParameter(stack, jsii.String(TableDeletionProtectionParameterName), &awscdk.CfnParameterProps{
		Type:          jsii.String("String"),
		AllowedValues: jsii.Strings("true", "false"),
		Default:       jsii.String("false"),
		Description: jsii.String("Deletion protection of the lane's tables. Leave it false for an environment's first deploy " +
			"(its rollback must be able to delete them), then set it to true."),
	})
	on := awscdk.NewCfnCondition(stack, jsii.String("TableDeletionProtectionOn"), &awscdk.CfnConditionProps{
		Expression: awscdk.Fn_ConditionEquals(param.ValueAsString(), jsii.String("true")),
	})
	for _, table := range []awsdynamodb.Table{lane.IdempotencyTable(), lane.LedgerTable()} {
		cfn := table.Node().DefaultChild().(awsdynamodb.CfnTable)
		cfn.SetDeletionProtectionEnabled(awscdk.Fn_ConditionIf(on.LogicalId(), jsii.Bool(true), jsii.Bool(false)))
	}
}

// ordersContract sets the contract of the sample's consumer where p leaves
// it unset: it keys its idempotency records by the order id and writes them
// (internal/sample's wiring of the idempotency package).
func ordersContract(p *deadletter.LaneProps) {
	if p.Consumer.Key == nil {
		p.Consumer.Key = jsii.String(OrdersKey)
	}
	if p.Consumer.PayloadHash == nil {
		p.Consumer.PayloadHash = jsii.String(OrdersPayloadHash)
	}
	if p.Consumer.Records == "" {
		p.Consumer.Records = deadletter.ConsumerWritesRecords
	}
}
