//go:build e2e

package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/idempotency/idempotencytest"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

func TestIdempotencyStoreContract(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.DynamoDB, func(t *testing.T, e emulatortest.Endpoint) {
		db := dynamodb.NewFromConfig(e.Config)
		table := emulatortest.IdempotencyTable(t, db)
		idempotencytest.Run(t, idempotencytest.Harness{
			NewStore: func(*testing.T) idempotency.Store { return dynamo.NewIdempotencyStore(db, table) },
			Features: idempotencytest.Features{ConcurrentClaims: serialisesConditionalWrites(e.Name)},
		})
	})
}

// The item carries the TTL attribute in epoch seconds, so DynamoDB can clean
// it up, while the store itself never relies on the deletion.
func TestIdempotencyStoreWritesTheTTLAttribute(t *testing.T) {
	db := dynamodb.NewFromConfig(emulatortest.Config(t))
	table := emulatortest.IdempotencyTable(t, db)
	r := &idempotency.Receiver{Store: dynamo.NewIdempotencyStore(db, table), Scope: "invoice"}
	before := time.Now()
	if _, err := r.Do(context.Background(), "ORD-TTL", "h", func(context.Context) (string, error) { return "INV-1", nil }); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{settings.PartitionKeyAttribute: &types.AttributeValueMemberS{Value: idempotency.Key("invoice", "ORD-TTL")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := out.Item[settings.TTLAttribute].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item has no numeric %s: %v", settings.TTLAttribute, out.Item)
	}
	secs, _ := strconv.ParseInt(n.Value, 10, 64)
	want := before.Add(settings.DefaultRecordLifetime).Unix()
	if secs < want || secs > want+60 {
		t.Fatalf("%s = %d, want about %d (now + %v)", settings.TTLAttribute, secs, want, settings.DefaultRecordLifetime)
	}
	if s, _ := out.Item["status"].(*types.AttributeValueMemberS); s == nil || s.Value != "COMPLETED" {
		t.Fatalf("status = %v", out.Item["status"])
	}
}
