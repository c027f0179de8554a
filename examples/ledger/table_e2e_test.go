//go:build e2e

package ledger_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/examples/ledger"
)

// TestTableContract holds the DynamoDB ledger to the contract the in-memory
// one passes, on a table of its own, on the emulator (AWS_ENDPOINT_URL) and,
// when `make e2e` gives one, on the second emulator (HOMING_SECOND_ENDPOINT,
// moto's server), so that one emulator's quirk cannot make it pass.
func TestTableContract(t *testing.T) {
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL is not set: run e2e tests with `make e2e`")
	}
	endpoints := map[string]string{os.Getenv("HOMING_EMULATOR"): os.Getenv("AWS_ENDPOINT_URL")}
	if second := os.Getenv("HOMING_SECOND_ENDPOINT"); second != "" {
		endpoints[os.Getenv("HOMING_SECOND_EMULATOR")] = second
	}
	for name, endpoint := range endpoints {
		t.Run(name, func(t *testing.T) {
			client := db(t, endpoint)
			runContract(t, ledger.NewTable(client, table(t, client)), fmt.Sprintf("e2e%d", time.Now().UnixNano()%1e6))
		})
	}
}

func db(t *testing.T, endpoint string) *dynamodb.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// table creates a table with the ledger's schema, deleted when the test ends.
func table(t *testing.T, db *dynamodb.Client) string {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("ledger-contract-%d", time.Now().UnixNano()%1e9)
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(ledger.PartitionKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(ledger.SortKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(ledger.PartitionKey), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(ledger.SortKey), KeyType: types.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}
