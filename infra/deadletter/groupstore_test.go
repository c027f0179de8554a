package deadletter_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	homingfifo "github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
)

// dbCall is one request of the group store, as IAM authorises it: an
// action on a table, with the key of each item it names (a Query: its
// partition).
type dbCall struct {
	action string // "dynamodb:GetItem"...
	table  string
	keys   []map[string]dbtypes.AttributeValue
}

// recordingDB is a DynamoDB client of dynamo.GroupStore that records every
// request. It answers as a ledger holding a park of every group it is
// asked for; with conflict, every conditional write fails, so that the
// store takes its paths after a conflict.
type recordingDB struct {
	dynamo.API // nil: a call the fake does not record panics, so none goes unseen
	conflict   bool
	calls      []dbCall
}

func (db *recordingDB) record(action string, table *string, keys ...map[string]dbtypes.AttributeValue) {
	db.calls = append(db.calls, dbCall{action: action, table: *table, keys: keys})
}

func (db *recordingDB) failed() error {
	if db.conflict {
		return &dbtypes.ConditionalCheckFailedException{}
	}
	return nil
}

func (db *recordingDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	db.record("dynamodb:PutItem", in.TableName, in.Item)
	return &dynamodb.PutItemOutput{}, db.failed()
}

func (db *recordingDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	db.record("dynamodb:GetItem", in.TableName, in.Key)
	return &dynamodb.GetItemOutput{}, nil
}

func (db *recordingDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	db.record("dynamodb:UpdateItem", in.TableName, in.Key)
	return &dynamodb.UpdateItemOutput{}, db.failed()
}

func (db *recordingDB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	db.record("dynamodb:DeleteItem", in.TableName, in.Key)
	return &dynamodb.DeleteItemOutput{}, db.failed()
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
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]dbtypes.AttributeValue{}}
	for table, ka := range in.RequestItems {
		db.record("dynamodb:BatchGetItem", &table, ka.Keys...)
		for _, k := range ka.Keys {
			item := map[string]dbtypes.AttributeValue{"head": &dbtypes.AttributeValueMemberS{Value: "m-1"}}
			for a, v := range k {
				item[a] = v
			}
			out.Responses[table] = append(out.Responses[table], item)
		}
	}
	return out, nil
}

// parkingQueue is the parking queue of a release: it holds one record of
// group g-1 until the release takes it.
type parkingQueue struct{ taken bool }

func (q *parkingQueue) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if q.taken {
		return &sqs.ReceiveMessageOutput{}, nil
	}
	q.taken = true
	return &sqs.ReceiveMessageOutput{Messages: []sqstypes.Message{{MessageId: aws.String("m-2"), Body: aws.String("{}"), ReceiptHandle: aws.String("r-2"),
		Attributes: map[string]string{string(sqstypes.MessageSystemAttributeNameMessageGroupId): "g-1"}}}}, nil
}

func (q *parkingQueue) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return &sqs.SendMessageOutput{}, nil
}

func (q *parkingQueue) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return &sqs.DeleteMessageOutput{}, nil
}

func (q *parkingQueue) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// storeCalls runs uses on a group store of table, once as every write
// succeeds and once as every conditional write fails, and returns its
// requests.
func storeCalls(table string, uses func(context.Context, homingfifo.Store)) []dbCall {
	var calls []dbCall
	for _, conflict := range []bool{false, true} {
		db := &recordingDB{conflict: conflict}
		uses(context.Background(), dynamo.NewGroupStore(db, table))
		calls = append(calls, db.calls...)
	}
	return calls
}

// Each principal's uses of its lane's parks (see grouporder.go).
var (
	// the consumer (package batch's groupRun): read the batch's parks,
	// park, count parked records and settled copies, park again.
	consumerUses = func(ctx context.Context, s homingfifo.Store) {
		_, _ = s.Park(ctx, homingfifo.Park{Group: "g-1", Reason: homingfifo.ReasonDeliveredTooOften, Head: "m-1", Queue: "parking", Since: time.Now()})
		_, _ = s.Parked(ctx, []string{"g-1", "g-2"})
		_ = s.Count(ctx, "g-1", homingfifo.Count{Seq: "0000000000000000000000000000000000000018", Parked: 1})
		_ = s.Count(ctx, "g-1", homingfifo.Count{Round: "round-1", Index: 1})
		_ = s.Count(ctx, "g-1", homingfifo.Count{Round: "round-1", Index: 2, Stop: 2, Head: "m-3", Reason: "invalid: not-json", Queue: "invalid"})
	}
	// the operator: `dlq groups` lists, `dlq groups release` takes the
	// steps of a homingfifo.Releaser until the group is released.
	operatorUses = func(ctx context.Context, s homingfifo.Store) {
		_, _ = s.List(ctx)
		r := &homingfifo.Releaser{Store: s, Queue: &parkingQueue{}, ParkingURL: "parking", SourceURL: "source"}
		for range 2 {
			_, _ = r.Release(ctx, "g-1")
		}
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

// ledgerName stands for the ledger's name in the store's requests.
const ledgerName = "ledger"

// TestGroupStoreFitsTheLedger: package dynamo's group store keys its items
// as the lane's ledger (whose name the consumer gets as LEDGER_TABLE) is
// keyed, by String attributes, all in the partition of parks: DynamoDB
// refuses a key of another schema or type. Every request names that one
// table.
func TestGroupStoreFitsTheLedger(t *testing.T) {
	s := fifo.get(t)
	schema, types := s.keySchema(s.ids().ledger), s.keyTypes(s.ids().ledger)
	if !slices.Equal(schema, []string{settings.PartitionKeyAttribute, settings.SortKeyAttribute}) {
		t.Fatalf("the ledger is keyed by %v", schema)
	}
	for name, uses := range map[string]func(context.Context, homingfifo.Store){"consumer": consumerUses, "operator": operatorUses} {
		calls := storeCalls(ledgerName, uses)
		if len(calls) == 0 {
			t.Fatalf("the %s's store made no request", name)
		}
		for _, c := range calls {
			if c.table != ledgerName {
				t.Errorf("the %s's group store's %s names table %q, want the ledger", name, c.action, c.table)
			}
			for _, key := range c.keys {
				attrs := keyAttributes(key)
				if c.action != "dynamodb:Query" && !slices.Equal(attrs, schema) {
					t.Errorf("the group store's %s keys the item %s by %v, but the ledger is keyed by %v", c.action, partitionOf(key), attrs, schema)
				}
				if p := partitionOf(key); p != settings.GroupsPartition {
					t.Errorf("the group store's %s names partition %q, want %q", c.action, p, settings.GroupsPartition)
				}
				for _, a := range attrs {
					if _, isString := key[a].(*dbtypes.AttributeValueMemberS); !isString || types[a] != "S" {
						t.Errorf("the group store's %s gives %s as %T, the ledger's %s is of type %s", c.action, a, key[a], a, types[a])
					}
				}
			}
		}
	}
}

// TestGroupStoreGrants runs package dynamo's group store, as each
// principal of a lane that parks its groups uses it, against the
// synthesized lane's grants: every request is granted to it on the ledger
// or on its partition of parks, and no action on that partition is
// granted that its store never calls.
func TestGroupStoreGrants(t *testing.T) {
	s := fifo.get(t)
	operator, operatorRole := operatorOn(nil)
	for _, tc := range []struct {
		name string
		s    *synthesized
		role string
		uses func(context.Context, homingfifo.Store)
	}{
		{"consumer", s, s.ids().role, consumerUses},
		{"operator", operator, operatorRole, operatorUses},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ledger := tc.s.ids().ledger
			granted := tc.s.granted(t, tc.role)
			onTable, onParks := granted[ledger], granted[onPartition(ledger, settings.GroupsPartition)]
			called := map[string]bool{}
			for _, c := range storeCalls(ledgerName, tc.uses) {
				called[c.action] = true
				if !slices.Contains(onTable, c.action) && !slices.Contains(onParks, c.action) {
					t.Errorf("%s %s on %v: not granted (on the ledger %v, on its parks %v)", tc.name, c.action, partitionsOf(c.keys), onTable, onParks)
				}
			}
			for _, a := range onParks {
				if !called[a] {
					t.Errorf("%s may %s on the parks, which its store never calls", tc.name, a)
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
