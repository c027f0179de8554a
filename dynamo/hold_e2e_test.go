//go:build e2e

package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/holdtest"
	holdrecord "github.com/homingdlq/homing/hold/record"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

// The hold contract runs on every DynamoDB implementation, all its tests on
// one table of the key schema (pk, sk), each in a scope of its own. The
// race tests are skipped on moto, whose server does not serialise
// conditional writes (serialisesConditionalWrites).
func TestHoldStoreContract(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.DynamoDB, func(t *testing.T, e emulatortest.Endpoint) {
		db := dynamodb.NewFromConfig(e.Config)
		table := emulatortest.LedgerTable(t, db)
		holdtest.Run(t, holdtest.Harness{
			NewStore: func(t *testing.T) hold.Store {
				return dynamo.NewHoldStore(db, table, emulatortest.Name(t, "lane"))
			},
			Features: holdtest.Features{ConcurrentWrites: serialisesConditionalWrites(e.Name)},
		})
	})
}

// A hold and a held record are stored under the documented keys and carry
// no TTL attribute: DynamoDB never deletes them, however long the group
// stays held.
func TestHoldStoreWritesNoTTLAttribute(t *testing.T) {
	db := dynamodb.NewFromConfig(emulatortest.Config(t))
	table := emulatortest.LedgerTable(t, db)
	s := dynamo.NewHoldStore(db, table, "lane")
	ctx := context.Background()
	if _, err := s.Begin(ctx, hold.Hold{Group: "g", Head: "m-1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	r := events.SQSMessage{MessageId: "m-2", ReceiptHandle: "rh", Body: "b", Attributes: map[string]string{"SequenceNumber": "2"}}
	m, err := holdrecord.Held(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "g", m, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, key := range [][2]string{{"lane#holds", "g"}, {"lane#hold#g", m.Seq}} {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
			dynamo.KeyAttribute: &types.AttributeValueMemberS{Value: key[0]}, dynamo.SortKeyAttribute: &types.AttributeValueMemberS{Value: key[1]},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Item) == 0 {
			t.Fatalf("no item at %s / %s", key[0], key[1])
		}
		if _, ok := out.Item[dynamo.TTLAttribute]; ok {
			t.Errorf("the item at %s / %s carries %s", key[0], key[1], dynamo.TTLAttribute)
		}
	}
}
