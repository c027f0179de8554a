package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/wait"
)

// groupAPI is the part of API [GroupStore] calls.
type groupAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// GroupStore is a fifo.Store in the lane's ledger table, partition
// settings.GroupsPartition, one item per parked group (sort key: the
// group), with no TTL. It is safe for concurrent use.
type GroupStore struct {
	api   groupAPI
	table string
}

var _ fifo.Store = (*GroupStore)(nil)

// NewGroupStore returns the parks of the lane whose ledger is table.
func NewGroupStore(api API, table string) *GroupStore {
	return &GroupStore{api: api, table: table}
}

type parkItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Reason    string    `dynamodbav:"reason"`
	Head      string    `dynamodbav:"head"`
	Queue     string    `dynamodbav:"queue"`
	Since     time.Time `dynamodbav:"since"`
	Parked    int       `dynamodbav:"parked"`
	Moved     int       `dynamodbav:"moved"`
	Releasing string    `dynamodbav:"releasing"`
	Batch     []string  `dynamodbav:"batch"`
	Keys      []string  `dynamodbav:"keys"`
	Recent    []string  `dynamodbav:"recent"`
	Rounds    []string  `dynamodbav:"rounds"`
	Sent      int       `dynamodbav:"sent"`
	Settled   int       `dynamodbav:"settled"`
	Stop      int       `dynamodbav:"stop"`
	Seq       string    `dynamodbav:"seq"`
}

func (it parkItem) park() fifo.Park {
	return fifo.Park{Group: it.SK, Reason: it.Reason, Head: it.Head, Queue: it.Queue, Since: it.Since,
		Parked: it.Parked, Moved: it.Moved, Releasing: it.Releasing, Batch: it.Batch, Keys: it.Keys, Recent: it.Recent, Rounds: it.Rounds, Sent: it.Sent,
		Settled: it.Settled, Stop: it.Stop, Seq: it.Seq}
}

func (s *GroupStore) key(group string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		keyAttribute:     &types.AttributeValueMemberS{Value: settings.GroupsPartition},
		sortKeyAttribute: &types.AttributeValueMemberS{Value: group},
	}
}

var (
	parkExists = expression.AttributeExists(expression.Name(keyAttribute))
	parkAbsent = expression.AttributeNotExists(expression.Name(keyAttribute))
)

// Parked implements [fifo.Store]: one consistent BatchGetItem per 100 groups.
func (s *GroupStore) Parked(ctx context.Context, groups []string) (map[string]fifo.Park, error) {
	groups = slices.Compact(slices.Sorted(slices.Values(groups))) // BatchGetItem refuses a key named twice
	out := map[string]fifo.Park{}
	keys := make([]map[string]types.AttributeValue, 0, len(groups))
	for _, g := range groups {
		keys = append(keys, s.key(g))
	}
	err := batchGet(ctx, s.api, wait.Sleep, s.table, "the parks", keys, types.KeysAndAttributes{}, func(item map[string]types.AttributeValue) error {
		var it parkItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return fmt.Errorf("decode a park: %w", err)
		}
		out[it.SK] = it.park()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Park implements [fifo.Store].
func (s *GroupStore) Park(ctx context.Context, p fifo.Park) (fifo.Park, error) {
	it := parkItem{PK: settings.GroupsPartition, SK: p.Group, Reason: p.Reason, Head: p.Head, Queue: p.Queue, Since: p.Since.UTC()}
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return fifo.Park{}, fmt.Errorf("encode the park of %q: %w", p.Group, err)
	}
	cond, _ := expression.NewBuilder().WithCondition(parkAbsent).Build()
	_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item,
		ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed) && failed.Item != nil:
		var cur parkItem
		if err := attributevalue.UnmarshalMap(failed.Item, &cur); err != nil {
			return fifo.Park{}, fmt.Errorf("decode the park of %q: %w", p.Group, err)
		}
		return cur.park(), nil
	case errors.As(err, &failed):
		parks, err := s.Parked(ctx, []string{p.Group})
		if err != nil {
			return fifo.Park{}, err
		}
		if cur, ok := parks[p.Group]; ok {
			return cur, nil
		}
		return fifo.Park{}, fmt.Errorf("park %q: %w", p.Group, fifo.ErrChanged)
	case err != nil:
		return fifo.Park{}, fmt.Errorf("park %q: %w", p.Group, err)
	}
	return it.park(), nil
}

// Count implements [fifo.Store]: one conditional update.
func (s *GroupStore) Count(ctx context.Context, group string, c fifo.Count) error {
	u := expression.Add(expression.Name("parked"), expression.Value(c.Parked))
	cond := parkExists
	if c.Seq != "" {
		u = u.Set(expression.Name("seq"), expression.Value(c.Seq))
		cond = cond.And(expression.Or(expression.AttributeNotExists(expression.Name("seq")),
			expression.Name("seq").LessThan(expression.Value(c.Seq))))
	}
	if c.Index > 0 {
		u = u.Set(expression.Name("settled"), expression.Value(c.Index))
		cond = cond.And(expression.Name("releasing").Equal(expression.Value(c.Round)),
			expression.Name("settled").LessThan(expression.Value(c.Index)))
	}
	if c.Stop > 0 {
		u = u.Set(expression.Name("stop"), expression.Value(c.Stop)).
			Set(expression.Name("head"), expression.Value(c.Head)).
			Set(expression.Name("reason"), expression.Value(c.Reason)).
			Set(expression.Name("queue"), expression.Value(c.Queue))
	}
	old, err := s.update(ctx, group, u, cond)
	switch {
	case !errors.Is(err, fifo.ErrChanged):
		return err
	case old == nil:
		return fifo.ErrNotParked
	case c.Seq != "" && old.Seq >= c.Seq, c.Index > 0 && old.Releasing == c.Round && old.Settled >= c.Index:
		return nil // counted already
	}
	return err
}

// Begin implements [fifo.Store].
func (s *GroupStore) Begin(ctx context.Context, group, round string, batch, keys []string) error {
	u := expression.Set(expression.Name("releasing"), expression.Value(round)).
		Set(expression.Name("batch"), expression.Value(list(batch))).
		Set(expression.Name("keys"), expression.Value(list(keys))).
		Set(expression.Name("sent"), expression.Value(0)).
		Set(expression.Name("settled"), expression.Value(0)).
		Set(expression.Name("stop"), expression.Value(0))
	return s.roundUpdate(ctx, group, u, expression.Name("releasing").Equal(expression.Value("")))
}

// Sent implements [fifo.Store].
func (s *GroupStore) Sent(ctx context.Context, group, round string, n int) error {
	u := expression.Set(expression.Name("sent"), expression.Value(n))
	err := s.roundUpdate(ctx, group, u, expression.Name("releasing").Equal(expression.Value(round)).
		And(expression.Name("sent").LessThan(expression.Value(n))))
	if errors.Is(err, fifo.ErrChanged) {
		if parks, rerr := s.Parked(ctx, []string{group}); rerr == nil && parks[group].Releasing == round {
			return nil // sent already
		}
	}
	return err
}

// End implements [fifo.Store]: it reads the round, then ends it as read.
func (s *GroupStore) End(ctx context.Context, group, round string) error {
	parks, err := s.Parked(ctx, []string{group})
	if err != nil {
		return err
	}
	p, ok := parks[group]
	switch {
	case !ok:
		return fifo.ErrNotParked
	case p.Releasing != round || p.Settled < p.Sent:
		return fmt.Errorf("end the round of %q: %w", group, fifo.ErrChanged)
	}
	e := p.Ended()
	u := expression.Set(expression.Name("moved"), expression.Value(e.Moved)).
		Set(expression.Name("recent"), expression.Value(list(e.Recent))).
		Set(expression.Name("rounds"), expression.Value(list(e.Rounds))).
		Set(expression.Name("releasing"), expression.Value("")).
		Set(expression.Name("batch"), expression.Value([]string{})).
		Set(expression.Name("keys"), expression.Value([]string{})).
		Set(expression.Name("sent"), expression.Value(0)).
		Set(expression.Name("settled"), expression.Value(0)).
		Set(expression.Name("stop"), expression.Value(0))
	return s.roundUpdate(ctx, group, u, expression.Name("releasing").Equal(expression.Value(round)).
		And(expression.Name("sent").Equal(expression.Value(p.Sent)), expression.Name("settled").Equal(expression.Value(p.Settled)),
			expression.Name("stop").Equal(expression.Value(p.Stop)), expression.Name("moved").Equal(expression.Value(p.Moved))))
}

// list is l as a DynamoDB list, empty when nil (attributevalue writes a nil
// slice as NULL).
func list(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// roundUpdate applies u under cond to a parked group's round.
func (s *GroupStore) roundUpdate(ctx context.Context, group string, u expression.UpdateBuilder, cond expression.ConditionBuilder) error {
	old, err := s.update(ctx, group, u, parkExists.And(cond))
	if errors.Is(err, fifo.ErrChanged) && old == nil {
		return fifo.ErrNotParked
	}
	return err
}

// update applies u to the park of group under cond. It returns the park
// as the update left it, or, with fifo.ErrChanged when cond failed, as
// it was (nil when there is none).
func (s *GroupStore) update(ctx context.Context, group string, u expression.UpdateBuilder, cond expression.ConditionBuilder) (*parkItem, error) {
	expr, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("build the update of the park of %q: %w", group, err)
	}
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table, Key: s.key(group),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues: types.ReturnValueAllNew, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	var failed *types.ConditionalCheckFailedException
	item := map[string]types.AttributeValue(nil)
	switch {
	case errors.As(err, &failed):
		item, err = failed.Item, fmt.Errorf("update the park of %q: %w", group, fifo.ErrChanged)
	case err != nil:
		return nil, fmt.Errorf("update the park of %q: %w", group, err)
	default:
		item = out.Attributes
	}
	if len(item) == 0 {
		return nil, err
	}
	var it parkItem
	if uerr := attributevalue.UnmarshalMap(item, &it); uerr != nil {
		return nil, fmt.Errorf("decode the park of %q: %w", group, uerr)
	}
	return &it, err
}

// Release implements [fifo.Store].
func (s *GroupStore) Release(ctx context.Context, p fifo.Park) error {
	cond := expression.Name("parked").Equal(expression.Value(p.Parked)).
		And(expression.Name("moved").Equal(expression.Value(p.Moved))).
		And(expression.Name("releasing").Equal(expression.Value("")))
	expr, err := expression.NewBuilder().WithCondition(parkAbsent.Or(cond)).Build()
	if err != nil {
		return fmt.Errorf("build the release of %q: %w", p.Group, err)
	}
	_, err = s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: s.key(p.Group),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return fmt.Errorf("release %q: %w", p.Group, fifo.ErrChanged)
	}
	if err != nil {
		return fmt.Errorf("release %q: %w", p.Group, err)
	}
	return nil
}

// List implements [fifo.Store]: a Query of the partition, in pages.
func (s *GroupStore) List(ctx context.Context) ([]fifo.Park, error) {
	kc := expression.Key(keyAttribute).Equal(expression.Value(settings.GroupsPartition))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, fmt.Errorf("build the listing of parks: %w", err)
	}
	in := &dynamodb.QueryInput{TableName: &s.table, KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ConsistentRead: aws.Bool(true)}
	var out []fifo.Park
	p := dynamodb.NewQueryPaginator(s.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the parks: %w", err)
		}
		for _, item := range page.Items {
			var it parkItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return nil, fmt.Errorf("decode a park: %w", err)
			}
			out = append(out, it.park())
		}
	}
	return out, nil
}
