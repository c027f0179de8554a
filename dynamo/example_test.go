package dynamo_test

import (
	"context"
	"fmt"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/settings"
)

// table is a one-table stand-in for the DynamoDB client, just enough for
// this example: a put succeeds only on an absent key (returning the standing
// item otherwise, as ReturnValuesOnConditionCheckFailure asks), an update
// applies its SET clauses. It evaluates no other condition; the store is
// held to DynamoDB's real semantics by the contract suite on the emulator.
type table struct {
	dynamo.API // the calls the store does not make
	items      map[string]map[string]types.AttributeValue
}

var setClause = regexp.MustCompile(`(#\w+) = (:\w+)`)

func pk(k map[string]types.AttributeValue) string {
	return k[settings.PartitionKeyAttribute].(*types.AttributeValueMemberS).Value
}

func (t table) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if old, ok := t.items[pk(in.Item)]; ok {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("the conditional request failed"), Item: old}
	}
	t.items[pk(in.Item)] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

func (t table) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: t.items[pk(in.Key)]}, nil
}

func (t table) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	item := t.items[pk(in.Key)]
	for _, m := range setClause.FindAllStringSubmatch(aws.ToString(in.UpdateExpression), -1) {
		item[in.ExpressionAttributeNames[m[1]]] = in.ExpressionAttributeValues[m[2]]
	}
	return &dynamodb.UpdateItemOutput{}, nil
}

func (t table) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	delete(t.items, pk(in.Key))
	return &dynamodb.DeleteItemOutput{}, nil
}

// The idempotent receiver on a DynamoDB table: in production the store gets
// the *dynamodb.Client (var _ dynamo.API = (*dynamodb.Client)(nil))
// and the table the infrastructure created, keyed by "pk".
// A second delivery of the same order finds the completed record and does not
// issue the invoice again.
func ExampleNewIdempotencyStore() {
	api := table{items: map[string]map[string]types.AttributeValue{}} // in production: dynamodb.NewFromConfig(cfg)
	r := &idempotency.Receiver{Store: dynamo.NewIdempotencyStore(api, "idempotency"), Scope: "invoice"}
	issue := func(context.Context) (string, error) {
		fmt.Println("issuing invoice")
		return "INV-000001", nil
	}
	for range 2 {
		out, err := r.Do(context.Background(), "ORD-1", "hash-of-payload", issue)
		fmt.Println(out.Result, out.Duplicate, err)
	}

	rec, found, err := dynamo.NewIdempotencyStore(api, "idempotency").Get(context.Background(), idempotency.Key("invoice", "ORD-1"))
	fmt.Println(found, err, rec.Key, rec.Status, rec.Result)
	// Output:
	// issuing invoice
	// INV-000001 false <nil>
	// INV-000001 true <nil>
	// true <nil> invoice#ORD-1 COMPLETED INV-000001
}
