//go:build e2e

package ledger_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/ledger/ledgertest"
)

// TestTableContract holds the DynamoDB ledger to the contract the in-memory
// one passes, on every DynamoDB implementation that `make e2e` lists in
// HOMING_DYNAMODB_ENDPOINTS (comma-separated name=URL pairs: ministack and
// moto's server), so that one emulator's quirk cannot make it pass. Each
// implementation gets a table of its own, which the contract's tests share
// (each uses accounts and payments of its own).
func TestTableContract(t *testing.T) {
	list := os.Getenv("HOMING_DYNAMODB_ENDPOINTS")
	if os.Getenv("AWS_ENDPOINT_URL") == "" || list == "" {
		t.Fatal("AWS_ENDPOINT_URL or HOMING_DYNAMODB_ENDPOINTS is not set: run e2e tests with `make e2e`")
	}
	for entry := range strings.SplitSeq(list, ",") {
		name, endpoint, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || name == "" || endpoint == "" {
			t.Fatalf("HOMING_DYNAMODB_ENDPOINTS: entry %q is not name=URL", entry)
		}
		t.Run(name, func(t *testing.T) {
			client := db(t, endpoint)
			shared := ledger.NewTable(client, table(t, client))
			ledgertest.Run(t, ledgertest.Harness{
				NewLedger: func(*testing.T) ledger.Ledger { return shared },
				Features:  ledgertest.Features{ConcurrentTransactions: isolatesTransactions(name)},
			})
		})
	}
}

// isolatesTransactions tells whether the DynamoDB implementation of that
// name, as `make e2e` names it, isolates concurrent TransactWriteItems as
// DynamoDB does (serializable; a conflicting one is canceled with
// TransactionConflict): every one but moto's server. moto's
// TransactWriteItems (moto/dynamodb/models/__init__.py, 5.x) applies a
// transaction's items one by one, and a canceled one restores a deep copy
// of every table it touched, taken when it began; its server handles
// requests on threads without a lock around it. Two concurrent appends can
// then both pass their conditions, or a canceled one can erase the entry
// another committed meanwhile (7 of 8 entries, seen under a CPU hog).
func isolatesTransactions(name string) bool { return name != "moto" }

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
