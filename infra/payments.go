package main

import (
	"maps"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/settings"
)

// The example lane (examples/ in this repository, its own Go module): a
// FIFO lane of payments captured -> ledger entries, built with the same
// construct an outside team would use.
const (
	// PaymentsLaneID is its construct id; its name, and so the prefix of
	// its outputs, is "payments".
	PaymentsLaneID = "Payments"
	// PaymentsFunction is the directory of its consumer's bootstrap in the
	// code directory: `make build` writes bin/payments/bootstrap from the
	// examples module.
	PaymentsFunction = "payments"
	// PaymentsKey is the payments lane's business key, the JMESPath
	// expression of the example's payment id (examples/payment).
	PaymentsKey = "paymentId"
	// PaymentsPayloadHash is the part of the body its consumer's payload
	// hash covers: examples/payment.HashPart (another module, which this
	// one does not require; TestPaymentsContractIsTheExamples in
	// examples/payment pins the two together).
	PaymentsPayloadHash = "{paymentId: paymentId, accountId: accountId, capturedAt: capturedAt, amount: amount, currency: currency}"
	// PaymentsParkReceives is the local profile's MAX_RECEIVES on the
	// example lane: its consumer parks an account whose head failed on
	// this many deliveries (the e2e tests of examples/ rely on it).
	PaymentsParkReceives = 5
	// OutputEntriesTableName is the key of the ledger table's output,
	// settings.OutputID("payments", OutputEntriesTableName).
	OutputEntriesTableName = "EntriesTableName"
)

// newPaymentsLane adds the example lane to stack: the ledger's entries
// table, and a FIFO lane whose consumer is the examples module's bootstrap
// (props.Consumer.CodeDir, by default CodeDir/payments), told the table in
// ENTRIES_TABLE and granted exactly the calls package ledger makes on it.
func newPaymentsLane(stack constructs.Construct, props deadletter.LaneProps) deadletter.Lane {
	// The lane's defaults (deadletter.LaneProps.RemovalPolicy and
	// DeletionProtection) for its table too.
	removal := props.RemovalPolicy
	if removal == "" {
		removal = awscdk.RemovalPolicy_RETAIN_ON_UPDATE_OR_DELETE
	}
	entries := awsdynamodb.NewTable(stack, jsii.String("PaymentsEntries"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String("sk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:   awsdynamodb.TableEncryption_AWS_MANAGED,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy:      removal,
		DeletionProtection: jsii.Bool(removal == awscdk.RemovalPolicy_RETAIN),
	})
	props.Fifo = jsii.Bool(true)
	// The example's consumer keys its records by the payment id and writes
	// them with the idempotency package.
	if props.Consumer.Key == nil {
		props.Consumer.Key = jsii.String(PaymentsKey)
	}
	if props.Consumer.PayloadHash == nil {
		props.Consumer.PayloadHash = jsii.String(PaymentsPayloadHash)
	}
	if props.Consumer.Records == "" {
		props.Consumer.Records = deadletter.ConsumerWritesRecords
	}
	if props.Consumer.CodeDir == nil {
		codeDir := deadletter.DefaultCodeDir
		if props.CodeDir != nil {
			codeDir = *props.CodeDir
		}
		props.Consumer.CodeDir = jsii.String(filepath.Join(codeDir, PaymentsFunction))
	}
	props.Consumer.Environment = maps.Clone(props.Consumer.Environment)
	if props.Consumer.Environment == nil {
		props.Consumer.Environment = map[string]string{}
	}
	props.Consumer.Environment["ENTRIES_TABLE"] = *entries.TableName()
	lane := deadletter.NewLane(stack, PaymentsLaneID, &props)
	// What the consumer calls: an append is a transaction of a Put, an
	// Update and a Put; the head and a lookup are GetItem.
	entries.Grant(lane.Consumer(), jsii.String("dynamodb:GetItem"), jsii.String("dynamodb:PutItem"), jsii.String("dynamodb:UpdateItem"))
	awscdk.NewCfnOutput(stack, jsii.String(settings.OutputID(lane.Name(), OutputEntriesTableName)), &awscdk.CfnOutputProps{
		Value:       entries.TableName(),
		Description: jsii.String("Lane " + lane.Name() + ": the ledger entries the example's consumer appends."),
	})
	return lane
}
