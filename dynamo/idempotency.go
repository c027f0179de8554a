package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/settings"
)

// Attribute names of both tables, as the infrastructure creates them:
// package settings declares the key schema once.
const (
	// keyAttribute is the String partition key of both tables.
	keyAttribute = settings.PartitionKeyAttribute
	// ttlAttribute holds a record's expiry in epoch seconds on both tables.
	ttlAttribute = settings.TTLAttribute
)

// idempotencyAPI is the part of API the store calls (the lane grants
// these actions on the idempotency table).
type idempotencyAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// IdempotencyStore is an idempotency.Store on one DynamoDB table. It is safe
// for concurrent use.
type IdempotencyStore struct {
	api   idempotencyAPI
	table string
}

// NewIdempotencyStore returns a store on table.
func NewIdempotencyStore(api API, table string) *IdempotencyStore {
	return &IdempotencyStore{api: api, table: table}
}

var _ idempotency.Store = (*IdempotencyStore)(nil)

type idempotencyItem struct {
	Key           string `dynamodbav:"pk"`
	Status        string `dynamodbav:"status"`
	PayloadHash   string `dynamodbav:"payloadHash"`
	Result        string `dynamodbav:"result,omitempty"`
	Token         string `dynamodbav:"lockToken"`
	LockExpiresAt int64  `dynamodbav:"lockExpiresAt,omitempty"`
	ExpiresAt     int64  `dynamodbav:"expiresAt"`
}

func (it idempotencyItem) record() idempotency.Record {
	r := idempotency.Record{
		Key:         it.Key,
		Status:      idempotency.Status(it.Status),
		PayloadHash: it.PayloadHash,
		Result:      it.Result,
		Token:       it.Token,
		ExpiresAt:   time.Unix(it.ExpiresAt, 0).UTC(),
	}
	if it.LockExpiresAt != 0 {
		r.LockExpiresAt = time.UnixMilli(it.LockExpiresAt).UTC()
	}
	return r
}

func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{keyAttribute: &types.AttributeValueMemberS{Value: k}}
}

// Get reads the record of a full key (idempotency.Key(scope, key)) with a
// consistent read. found is false when there is none. It does not judge
// expiry: compare ExpiresAt with the clock.
func (s *IdempotencyStore) Get(ctx context.Context, fullKey string) (rec idempotency.Record, found bool, err error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(fullKey), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("get %s from %s: %w", fullKey, s.table, err)
	}
	if len(out.Item) == 0 {
		return idempotency.Record{}, false, nil
	}
	rec, err = decodeIdempotency(out.Item, s.table)
	return rec, err == nil, err
}

func decodeIdempotency(item map[string]types.AttributeValue, table string) (idempotency.Record, error) {
	var it idempotencyItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return idempotency.Record{}, fmt.Errorf("decode an item of %s: %w", table, err)
	}
	return it.record(), nil
}

// Claim implements idempotency.Store.
func (s *IdempotencyStore) Claim(ctx context.Context, l idempotency.Lease) (idempotency.Record, bool, error) {
	item, err := attributevalue.MarshalMap(idempotencyItem{
		Key:           l.Key,
		Status:        string(idempotency.InProgress),
		PayloadHash:   l.PayloadHash,
		Token:         l.Token,
		LockExpiresAt: l.Until.UnixMilli(),
		ExpiresAt:     l.ExpiresAt.Unix(),
	})
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("encode %s: %w", l.Key, err)
	}
	expr, err := expression.NewBuilder().WithCondition(claimable(l)).Build()
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("build claim condition: %w", err)
	}
	// A record released between our failed put and our read makes the key
	// claimable again: try a few times before calling it contention.
	for range 3 {
		out, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(s.table),
			Item:                                item,
			ConditionExpression:                 expr.Condition(),
			ExpressionAttributeNames:            expr.Names(),
			ExpressionAttributeValues:           expr.Values(),
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return s.replaced(out.Attributes, l)
		}
		var failed *types.ConditionalCheckFailedException
		if !errors.As(err, &failed) {
			return idempotency.Record{}, false, fmt.Errorf("put %s in %s: %w", l.Key, s.table, err)
		}
		var rec idempotency.Record
		found := len(failed.Item) > 0
		if found {
			rec, err = decodeIdempotency(failed.Item, s.table)
		} else {
			// Not every implementation returns the item: read it.
			rec, found, err = s.Get(ctx, l.Key)
		}
		switch {
		case err != nil:
			return rec, false, err
		case found && rec.Status == idempotency.InProgress && rec.Token == l.Token:
			// Our own claim: an earlier attempt of this call was applied
			// and its answer lost (the SDK retried it). What it replaced
			// is lost with the answer: in doubt, the safe side.
			return idempotency.Record{Key: l.Key, Status: idempotency.InProgress, PayloadHash: l.PayloadHash}, true, nil
		case found:
			return rec, false, nil
		}
	}
	return idempotency.Record{}, false, fmt.Errorf("claim %s in %s: %w", l.Key, s.table, idempotency.ErrInProgress)
}

// claimable is the condition of Claim: absent, expired, or an IN_PROGRESS
// lock past its expiry of the same payload (a takeover compares the payload
// like any claim) or, when l supersedes a void claim, with that claim's
// token.
func claimable(l idempotency.Lease) expression.ConditionBuilder {
	takeover := expression.Name("payloadHash").Equal(expression.Value(l.PayloadHash))
	if l.Supersedes != "" {
		takeover = takeover.Or(expression.Name("lockToken").Equal(expression.Value(l.Supersedes)))
	}
	return expression.AttributeNotExists(expression.Name(keyAttribute)).
		Or(expression.Name(ttlAttribute).LessThanEqual(expression.Value(l.Now.Unix())),
			expression.Name("status").Equal(expression.Value(string(idempotency.InProgress))).
				And(expression.Name("lockExpiresAt").LessThanEqual(expression.Value(l.Now.UnixMilli())),
					takeover))
}

// replaced is the result of a successful claim: the IN_PROGRESS record it
// took over when that record had not expired (in doubt), else the zero Record.
func (s *IdempotencyStore) replaced(old map[string]types.AttributeValue, l idempotency.Lease) (idempotency.Record, bool, error) {
	if len(old) == 0 {
		return idempotency.Record{}, true, nil
	}
	rec, err := decodeIdempotency(old, s.table)
	if err != nil {
		// The claim is ours; only the report of what it replaced is lost.
		// Treat it as in doubt, the safe side.
		return idempotency.Record{Key: l.Key, Status: idempotency.InProgress}, true, nil
	}
	if rec.Status != idempotency.InProgress || !l.Now.Before(rec.ExpiresAt) {
		return idempotency.Record{}, true, nil
	}
	return rec, true, nil
}

// heldBy is the condition of Complete and Release: the caller's claim still
// holds the key.
func heldBy(l idempotency.Lease) expression.ConditionBuilder {
	return expression.Name("lockToken").Equal(expression.Value(l.Token)).
		And(expression.Name("status").Equal(expression.Value(string(idempotency.InProgress))))
}

// Complete implements idempotency.Store.
func (s *IdempotencyStore) Complete(ctx context.Context, l idempotency.Lease, result string) error {
	update := expression.Set(expression.Name("status"), expression.Value(string(idempotency.Completed))).
		Set(expression.Name("result"), expression.Value(result)).
		Set(expression.Name(ttlAttribute), expression.Value(l.ExpiresAt.Unix())).
		Remove(expression.Name("lockExpiresAt"))
	expr, err := expression.NewBuilder().WithCondition(heldBy(l)).WithUpdate(update).Build()
	if err != nil {
		return fmt.Errorf("build complete expression: %w", err)
	}
	_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(l.Key),
		ConditionExpression:                 expr.Condition(),
		UpdateExpression:                    expr.Update(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) && len(failed.Item) > 0 {
		// Completed by an earlier attempt of this call whose answer was
		// lost (the SDK retried it): done.
		if rec, derr := decodeIdempotency(failed.Item, s.table); derr == nil && rec.Status == idempotency.Completed && rec.Token == l.Token {
			return nil
		}
	}
	return s.conditional(err, "complete", l.Key)
}

// Release implements idempotency.Store.
func (s *IdempotencyStore) Release(ctx context.Context, l idempotency.Lease) error {
	expr, err := expression.NewBuilder().WithCondition(heldBy(l)).Build()
	if err != nil {
		return fmt.Errorf("build release condition: %w", err)
	}
	_, err = s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(l.Key),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	return s.conditional(err, "release", l.Key)
}

func (s *IdempotencyStore) conditional(err error, op, key string) error {
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &failed):
		return fmt.Errorf("%s %s in %s: %w", op, key, s.table, idempotency.ErrLeaseLost)
	default:
		return fmt.Errorf("%s %s in %s: %w", op, key, s.table, err)
	}
}
