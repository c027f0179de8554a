//go:build e2e

package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

// Emulator gap: its CloudFormation creates AWS::DynamoDB::Table without
// applying TimeToLiveSpecification, so `make deploy-local` repairs it with
// the emulator-only step of cmd/localcheck. This test deploys a one-table
// template and looks: when the emulator applies TTL by itself it fails,
// telling us to delete the repair and this test.
func TestEmulatorGapTableTTLFromCloudFormation(t *testing.T) {
	cfg := emulatortest.Config(t)
	cf := cloudformation.NewFromConfig(cfg)
	db := dynamodb.NewFromConfig(cfg)
	ctx := context.Background()
	name := emulatortest.Name(t, "gap")
	const body = `{"Resources":{"T":{"Type":"AWS::DynamoDB::Table","Properties":{
	  "BillingMode":"PAY_PER_REQUEST",
	  "AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],
	  "KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],
	  "TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":true}}}}}`
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body)}); err != nil {
		t.Fatalf("create stack: %v", err)
	}
	t.Cleanup(func() {
		_, _ = cf.DeleteStack(context.Background(), &cloudformation.DeleteStackInput{StackName: aws.String(name)})
	})
	w := cloudformation.NewStackCreateCompleteWaiter(cf, func(o *cloudformation.StackCreateCompleteWaiterOptions) { o.MinDelay = time.Second })
	if err := w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}, time.Minute); err != nil {
		t.Fatalf("wait for stack: %v", err)
	}
	res, err := cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String(name), LogicalResourceId: aws.String("T")})
	if err != nil {
		t.Fatal(err)
	}
	table := aws.ToString(res.StackResourceDetail.PhysicalResourceId)
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && d.TimeToLiveStatus == dbtypes.TimeToLiveStatusEnabled {
		t.Fatalf("the emulator now applies TimeToLiveSpecification (%s on %s): the gap is closed; remove the emulator-only TTL repair and this test",
			d.TimeToLiveStatus, aws.ToString(d.AttributeName))
	}
	t.Logf("emulator gap still present: table %s created by CloudFormation has TTL %v", table, ttl.TimeToLiveDescription)
}
