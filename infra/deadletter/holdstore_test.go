package deadletter_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/settings"
)

// dbCall is one request of the hold store, as IAM authorises it: an action
// on a table, with the key of each item it names (a Query: its partition).
type dbCall struct {
	action string // "dynamodb:GetItem"...
	table  string
	keys   []map[string]dbtypes.AttributeValue
}

// recordingDB is a DynamoDB client of dynamo.HoldStore that answers as an
// empty table whose conditional updates fail (so that Update reads the
// hold, as it does after a conflict), and records every request.
type recordingDB struct{ calls []dbCall }

func (db *recordingDB) record(action string, table *string, keys ...map[string]dbtypes.AttributeValue) {
	db.calls = append(db.calls, dbCall{action: action, table: *table, keys: keys})
}

func (db *recordingDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	db.record("dynamodb:PutItem", in.TableName, in.Item)
	return &dynamodb.PutItemOutput{}, nil
}

func (db *recordingDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	db.record("dynamodb:GetItem", in.TableName, in.Key)
	return &dynamodb.GetItemOutput{}, nil
}

func (db *recordingDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	db.record("dynamodb:UpdateItem", in.TableName, in.Key)
	return nil, &dbtypes.ConditionalCheckFailedException{}
}

func (db *recordingDB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	db.record("dynamodb:DeleteItem", in.TableName, in.Key)
	return &dynamodb.DeleteItemOutput{}, nil
}

func (db *recordingDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	// The key condition is pk = its one value.
	partition := map[string]dbtypes.AttributeValue{}
	for _, v := range in.ExpressionAttributeValues {
		partition[settings.PartitionKeyAttribute] = v
	}
	db.record("dynamodb:Query", in.TableName, partition)
	return &dynamodb.QueryOutput{}, nil
}

func (db *recordingDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for table, ka := range in.RequestItems {
		db.record("dynamodb:BatchGetItem", &table, ka.Keys...)
	}
	return &dynamodb.BatchGetItemOutput{}, nil
}

// TransactWriteItems is authorised item by item, each by its own action.
func (db *recordingDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			db.record("dynamodb:PutItem", it.Put.TableName, it.Put.Item)
		case it.Update != nil:
			db.record("dynamodb:UpdateItem", it.Update.TableName, it.Update.Key)
		case it.Delete != nil:
			db.record("dynamodb:DeleteItem", it.Delete.TableName, it.Delete.Key)
		case it.ConditionCheck != nil:
			db.record("dynamodb:ConditionCheckItem", it.ConditionCheck.TableName, it.ConditionCheck.Key)
		}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// storeCalls runs uses on a hold store of table and scope and returns its
// requests.
func storeCalls(table, scope string, uses func(context.Context, hold.Store)) []dbCall {
	db := &recordingDB{}
	uses(context.Background(), dynamo.NewHoldStore(db, table, scope))
	return db.calls
}

// Each function's uses of its lane's holds (see grouporder.go).
var (
	// every method: the consumer holds, appends, drains and ends.
	consumerUses = func(ctx context.Context, s hold.Store) {
		now := time.Now()
		m := hold.Message{Seq: "0001", Record: json.RawMessage(`{"messageId":"m-2","body":"{}"}`)}
		h, _ := s.Begin(ctx, hold.Hold{Group: "g-1", Head: "m-1"}, now)
		_, _ = s.Holds(ctx, []string{"g-1"})
		_, _ = s.Append(ctx, "g-1", m, now)
		_, _ = s.Next(ctx, "g-1", 10)
		_, _ = s.Count(ctx, "g-1")
		_ = s.Remove(ctx, "g-1", m.Seq)
		_, _ = s.Update(ctx, h, now)
		_ = s.End(ctx, h)
		_, _ = s.List(ctx)
	}
	// the replay function's Keeper.Parked, Applied and Sweep, and dlq
	// groups and groups release: read, list, count, update.
	keeperUses = func(ctx context.Context, s hold.Store) {
		_, _ = s.Holds(ctx, []string{"g-1"})
		_, _ = s.List(ctx)
		_, _ = s.Count(ctx, "g-1")
		_, _ = s.Update(ctx, hold.Hold{Group: "g-1", Head: "m-1", State: hold.Draining, Version: 7}, time.Now())
	}
)

// keySchema is the key attributes of the table tableID, sorted.
func (s *synthesized) keySchema(tableID string) []string {
	var schema []string
	for _, k := range props(s.resources[tableID])["KeySchema"].([]any) {
		schema = append(schema, k.(map[string]any)["AttributeName"].(string))
	}
	slices.Sort(schema)
	return schema
}

// keyAttributes is the key attributes of an item (pk, and sk when it has
// one), sorted.
func keyAttributes(item map[string]dbtypes.AttributeValue) []string {
	var attrs []string
	for _, a := range []string{settings.PartitionKeyAttribute, settings.SortKeyAttribute} {
		if _, ok := item[a]; ok {
			attrs = append(attrs, a)
		}
	}
	slices.Sort(attrs)
	return attrs
}

func partitionOf(key map[string]dbtypes.AttributeValue) string {
	pk, _ := key[settings.PartitionKeyAttribute].(*dbtypes.AttributeValueMemberS)
	if pk == nil {
		return ""
	}
	return pk.Value
}

// keyTypes is the type of each key attribute of the table tableID.
func (s *synthesized) keyTypes(tableID string) map[string]string {
	types := map[string]string{}
	for _, d := range props(s.resources[tableID])["AttributeDefinitions"].([]any) {
		d := d.(map[string]any)
		types[d["AttributeName"].(string)] = d["AttributeType"].(string)
	}
	return types
}

// holdTableName stands for the hold table's name in the store's requests.
const holdTableName = "holds"

// TestHoldStoreFitsItsTable: package dynamo's hold store keys its items as
// the lane's hold table (whose name the consumer and the replay function
// get as HOLD_TABLE) is keyed, by String attributes: DynamoDB refuses a
// key of another schema or type. Every request names that one table.
func TestHoldStoreFitsItsTable(t *testing.T) {
	s := fifo.get(t)
	schema, types := s.keySchema(s.ids().holds), s.keyTypes(s.ids().holds)
	if !slices.Equal(schema, []string{settings.PartitionKeyAttribute, settings.SortKeyAttribute}) {
		t.Fatalf("the hold table is keyed by %v", schema)
	}
	calls := storeCalls(holdTableName, "orders", consumerUses)
	if len(calls) == 0 {
		t.Fatal("the store made no request")
	}
	for _, c := range calls {
		if c.table != holdTableName {
			t.Errorf("the hold store's %s names table %q, want the hold table", c.action, c.table)
		}
		for _, key := range c.keys {
			attrs := keyAttributes(key)
			if c.action != "dynamodb:Query" && !slices.Equal(attrs, schema) {
				t.Errorf("the hold store's %s keys the item %s by %v, but the hold table is keyed by %v", c.action, partitionOf(key), attrs, schema)
			}
			for _, a := range attrs {
				if _, isString := key[a].(*dbtypes.AttributeValueMemberS); !isString || types[a] != "S" {
					t.Errorf("the hold store's %s gives %s as %T, the hold table's %s is of type %s", c.action, a, key[a], a, types[a])
				}
			}
		}
	}
}

// TestHoldStoreGrants runs package dynamo's hold store, as each principal
// of a lane that holds its groups uses it, against the synthesized lane's
// grants: every request is granted to it on the hold table, and no action
// on the hold table is granted that its store never calls.
func TestHoldStoreGrants(t *testing.T) {
	s := fifo.get(t)
	id := s.ids()
	operator, operatorRole := operatorOn(nil)
	for _, tc := range []struct {
		name string
		s    *synthesized
		role string
		uses func(context.Context, hold.Store)
	}{
		{"consumer", s, id.role, consumerUses},
		{"replay", s, id.replayRole, keeperUses},
		{"operator", operator, operatorRole, keeperUses},
	} {
		t.Run(tc.name, func(t *testing.T) {
			granted := tc.s.granted(t, tc.role)[tc.s.ids().holds]
			called := map[string]bool{}
			for _, c := range storeCalls(holdTableName, "orders", tc.uses) {
				called[c.action] = true
				if !slices.Contains(granted, c.action) {
					t.Errorf("%s %s on %s: not granted (on the hold table %v)", tc.name, c.action, partitionsOf(c.keys), granted)
				}
			}
			for _, a := range granted {
				if !called[a] {
					t.Errorf("%s may %s on the hold table, which its store never calls", tc.name, a)
				}
			}
		})
	}
}

// partitionsOf are the partition keys of keys.
func partitionsOf(keys []map[string]dbtypes.AttributeValue) []string {
	var pks []string
	for _, k := range keys {
		pks = append(pks, partitionOf(k))
	}
	return pks
}
