package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// batchGetLimit is DynamoDB's limit of keys per BatchGetItem call.
const batchGetLimit = 100

// batchGetter is what batchGet calls.
type batchGetter interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// batchGet reads the items of keys (distinct) from table with consistent
// BatchGetItem calls of up to 100 keys, in's projection, retrying the
// unprocessed keys five times with a growing pause (sleep), and calls each
// with every item read, stopping at its first error. what names the items
// in errors.
func batchGet(ctx context.Context, api batchGetter, sleep func(context.Context, time.Duration) error, table, what string,
	keys []map[string]types.AttributeValue, in types.KeysAndAttributes, each func(map[string]types.AttributeValue) error) error {
	for start := 0; start < len(keys); start += batchGetLimit {
		pending := keys[start:min(start+batchGetLimit, len(keys))]
		for attempt := 0; len(pending) > 0; attempt++ {
			if attempt > 0 {
				if attempt == 6 {
					return fmt.Errorf("read %s from %s: %d keys still unprocessed", what, table, len(pending))
				}
				if err := sleep(ctx, time.Duration(25<<attempt)*time.Millisecond); err != nil {
					return fmt.Errorf("read %s from %s: %w", what, table, err)
				}
			}
			in.Keys, in.ConsistentRead = pending, aws.Bool(true)
			res, err := api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: in}})
			if err != nil {
				return fmt.Errorf("read %s from %s: %w", what, table, err)
			}
			for _, item := range res.Responses[table] {
				if err := each(item); err != nil {
					return err
				}
			}
			pending = res.UnprocessedKeys[table].Keys
		}
	}
	return nil
}
