package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/settings"
)

// batchGetAPI answers BatchGetItem as DynamoDB does for a table without
// parks, refusing a request that names a key twice (the emulators accept
// it).
type batchGetAPI struct {
	dynamo.API
	calls int
}

func (a *batchGetAPI) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	a.calls++
	for table, ka := range in.RequestItems {
		seen := map[string]bool{}
		for _, k := range ka.Keys {
			key := fmt.Sprint(k[settings.PartitionKeyAttribute].(*types.AttributeValueMemberS).Value, "/", k[settings.SortKeyAttribute].(*types.AttributeValueMemberS).Value)
			if seen[key] {
				return nil, errors.New("ValidationException: Provided list of item keys contains duplicates")
			}
			seen[key] = true
		}
		if len(ka.Keys) > 100 {
			return nil, fmt.Errorf("ValidationException: %d keys for %s", len(ka.Keys), table)
		}
	}
	return &dynamodb.BatchGetItemOutput{}, nil
}

// Parked of a group named twice asks for it once.
func TestGroupStoreParkedAsksForAGroupOnce(t *testing.T) {
	api := &batchGetAPI{}
	s := dynamo.NewGroupStore(api, "ledger")
	parks, err := s.Parked(t.Context(), []string{"acct-1", "acct-2", "acct-1"})
	if err != nil || len(parks) != 0 || api.calls != 1 {
		t.Fatalf("Parked = %v, %v after %d calls; want none in one call", parks, err, api.calls)
	}
}
