package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/internal/wait"
	"github.com/homingdlq/homing/settings"
)

// HoldAPI is the part of the DynamoDB client [HoldStore] uses.
type HoldAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Limits of the hold store.
const (
	// holdsPartition and heldPartition name a scope's partitions:
	// "<scope>#holds" holds its holds, "<scope>#hold#<group>" the
	// records held in a group.
	holdsPartition = "holds"
	heldPartition  = "hold" + settings.KeySeparator
	// maxItemBytes is DynamoDB's largest item (400 KB, names and values
	// counted); a held record's item must fit it.
	maxItemBytes = 400 << 10
	// listPage bounds each read of List, so that a lane with many holds
	// reads them in pages of this many.
	listPage = 100
	// writeAttempts bounds the tries of an Append whose transaction is
	// cancelled by contention, and of a Begin whose standing hold
	// vanishes between the failed write and the read.
	writeAttempts = 5
	// maxFirstVersion bounds the random first version of a hold, so
	// that its increments never overflow an int64.
	maxFirstVersion = 1 << 62
)

// HoldStore is a hold.Store in one DynamoDB table with the String
// partition key [KeyAttribute] and the String sort key [SortKeyAttribute]
// (package settings declares both): the lane's hold table, HOLD_TABLE,
// which the construct creates on a FIFO lane that holds its groups. It writes no
// [TTLAttribute]: a hold lasts until its group is drained, however long
// that takes. It is safe for concurrent use.
//
// Items, for the scope of one lane (its consumer's name, which never
// contains settings.KeySeparator, so no two scopes share a partition):
//
//	a hold, one per held group:
//	pk       S  "<scope>#holds"
//	sk       S  the group (its MessageGroupId)
//	head     S  the original id of the head
//	headBody S  the head's body as the consumer received it, at most
//	            hold.MaxHeadBody ("" for a longer one)
//	state    S  held | draining
//	parked   S  why the head will not come back by itself ("" when it will)
//	since    S  RFC 3339, UTC, nanoseconds: when the group was held
//	updated  S  RFC 3339, UTC, nanoseconds: when the hold last changed
//	version  N  changes with every write of the hold; a new hold starts
//	            at a random version, so no copy of an ended hold matches
//	            a hold begun later in its group
//
//	a record held in a group:
//	pk       S  "<scope>#hold#<group>"
//	sk       S  its hold.Seq (the source's SequenceNumber, zero-padded)
//	record   S  the events.SQSMessage as JSON, its receipt handle dropped
//
// Errors: hold.ErrNotHeld and hold.ErrConflict as the port says (found
// with errors.Is); a record whose item would exceed DynamoDB's 400 KB is
// refused before any write; any other failure is the SDK's error wrapped
// with the operation, the group and the table.
type HoldStore struct {
	api   HoldAPI
	table string
	scope string
	sleep func(context.Context, time.Duration) error
	// firstVersion is the version of a new hold.
	firstVersion func() int64
}

// NewHoldStore returns the store of scope's holds in table.
func NewHoldStore(db HoldAPI, table, scope string) *HoldStore {
	return &HoldStore{api: db, table: table, scope: scope, sleep: wait.Sleep, firstVersion: randomVersion}
}

var _ hold.Store = (*HoldStore)(nil)

// randomVersion is a version in [1, maxFirstVersion): a hold begun
// after another of its group ended starts among the ended one's versions
// with a chance of its writes in 2^62.
func randomVersion() int64 { return 1 + rand.Int64N(maxFirstVersion-1) }

type holdItem struct {
	PK       string `dynamodbav:"pk"`
	SK       string `dynamodbav:"sk"`
	Head     string `dynamodbav:"head"`
	HeadBody string `dynamodbav:"headBody"`
	State    string `dynamodbav:"state"`
	Parked   string `dynamodbav:"parked"`
	Since    string `dynamodbav:"since"`
	Updated  string `dynamodbav:"updated"`
	Version  int64  `dynamodbav:"version"`
}

type heldItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	Record string `dynamodbav:"record"`
}

// holdTime is the stored form of a hold's times.
func holdTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *HoldStore) holdsPK() string { return settings.ScopedKey(s.scope, holdsPartition) }

func (s *HoldStore) heldPK(group string) string {
	return settings.ScopedKey(s.scope, heldPartition+group)
}

func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		KeyAttribute:     &types.AttributeValueMemberS{Value: pk},
		SortKeyAttribute: &types.AttributeValueMemberS{Value: sk},
	}
}

func (s *HoldStore) holdKey(group string) map[string]types.AttributeValue {
	return itemKey(s.holdsPK(), group)
}

func (s *HoldStore) toItem(h hold.Hold) holdItem {
	return holdItem{PK: s.holdsPK(), SK: h.Group, Head: h.Head, HeadBody: h.HeadBody, State: string(h.State), Parked: h.Parked,
		Since: holdTime(h.Since), Updated: holdTime(h.Updated), Version: h.Version}
}

// decodeHold is the hold of a hold item.
func (s *HoldStore) decodeHold(item map[string]types.AttributeValue) (hold.Hold, error) {
	var it holdItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return hold.Hold{}, fmt.Errorf("decode a hold of %s: %w", s.table, err)
	}
	since, err := time.Parse(time.RFC3339Nano, it.Since)
	if err != nil {
		return hold.Hold{}, fmt.Errorf("decode the hold of %q in %s: since: %w", it.SK, s.table, err)
	}
	updated, err := time.Parse(time.RFC3339Nano, it.Updated)
	if err != nil {
		return hold.Hold{}, fmt.Errorf("decode the hold of %q in %s: updated: %w", it.SK, s.table, err)
	}
	return hold.Hold{Group: it.SK, Head: it.Head, HeadBody: it.HeadBody, State: hold.State(it.State), Parked: it.Parked,
		Since: since, Updated: updated, Version: it.Version}, nil
}

// read is the stored hold of group, read consistently; found is false when
// there is none.
func (s *HoldStore) read(ctx context.Context, group string) (h hold.Hold, found bool, err error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: s.holdKey(group), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return hold.Hold{}, false, fmt.Errorf("read the hold of %q from %s: %w", group, s.table, err)
	}
	if len(out.Item) == 0 {
		return hold.Hold{}, false, nil
	}
	h, err = s.decodeHold(out.Item)
	return h, err == nil, err
}

// standing is the hold a failed condition found: the item the failure
// returned, or, from an implementation that returns none, the one read.
func (s *HoldStore) standing(ctx context.Context, group string, failed *types.ConditionalCheckFailedException) (hold.Hold, bool, error) {
	if len(failed.Item) > 0 {
		h, err := s.decodeHold(failed.Item)
		return h, err == nil, err
	}
	return s.read(ctx, group)
}

// Begin implements hold.Store.
func (s *HoldStore) Begin(ctx context.Context, h hold.Hold, now time.Time) (hold.Hold, error) {
	group := h.Group
	h = hold.Hold{Group: group, Head: h.Head, HeadBody: h.HeadBody, State: hold.Held, Parked: h.Parked, Since: now, Updated: now, Version: s.firstVersion()}
	item, err := attributevalue.MarshalMap(s.toItem(h))
	if err != nil {
		return hold.Hold{}, fmt.Errorf("encode the hold of %q: %w", group, err)
	}
	expr, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(KeyAttribute))).Build()
	if err != nil {
		return hold.Hold{}, fmt.Errorf("build the condition of a begin: %w", err)
	}
	// A hold ended between our failed put and our read frees the group
	// again: try a few times.
	for range writeAttempts {
		_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.table), Item: item,
			ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return h, nil
		}
		var failed *types.ConditionalCheckFailedException
		if !errors.As(err, &failed) {
			return hold.Hold{}, fmt.Errorf("begin the hold of %q in %s: %w", group, s.table, err)
		}
		cur, found, err := s.standing(ctx, group, failed)
		if err != nil || found {
			return cur, err
		}
	}
	return hold.Hold{}, fmt.Errorf("begin the hold of %q in %s: its hold keeps changing", group, s.table)
}

// Holds implements hold.Store with consistent BatchGetItem reads of up to
// 100 groups, retrying unprocessed keys a few times.
func (s *HoldStore) Holds(ctx context.Context, groups []string) (map[string]hold.Hold, error) {
	unique := slices.Compact(slices.Sorted(slices.Values(groups)))
	out := make(map[string]hold.Hold, len(unique))
	for start := 0; start < len(unique); start += batchGetLimit {
		keys := make([]map[string]types.AttributeValue, 0, batchGetLimit)
		for _, g := range unique[start:min(start+batchGetLimit, len(unique))] {
			keys = append(keys, s.holdKey(g))
		}
		if err := s.batchGet(ctx, keys, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// batchGet reads the holds of keys (at most 100) into out.
func (s *HoldStore) batchGet(ctx context.Context, keys []map[string]types.AttributeValue, out map[string]hold.Hold) error {
	for attempt := 0; len(keys) > 0; attempt++ {
		if attempt > 0 {
			if attempt == 6 {
				return fmt.Errorf("read holds from %s: %d keys still unprocessed", s.table, len(keys))
			}
			if err := s.sleep(ctx, time.Duration(25<<attempt)*time.Millisecond); err != nil {
				return fmt.Errorf("read holds from %s: %w", s.table, err)
			}
		}
		res, err := s.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			s.table: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			return fmt.Errorf("read holds from %s: %w", s.table, err)
		}
		for _, item := range res.Responses[s.table] {
			h, err := s.decodeHold(item)
			if err != nil {
				return err
			}
			out[h.Group] = h
		}
		keys = res.UnprocessedKeys[s.table].Keys
	}
	return nil
}

// Next implements hold.Store: a consistent query of the group's records,
// ascending, page by page until it has n.
func (s *HoldStore) Next(ctx context.Context, group string, n int) ([]hold.Message, error) {
	out := []hold.Message{}
	if n <= 0 {
		return out, nil
	}
	in, err := s.heldQuery(group)
	if err != nil {
		return nil, err
	}
	var decodeErr error
	err = s.query(ctx, in, int32(min(n, math.MaxInt32)), func(page *dynamodb.QueryOutput) bool {
		for _, item := range page.Items {
			var m hold.Message
			if m, decodeErr = s.decodeHeld(item); decodeErr != nil {
				return false
			}
			out = append(out, m)
		}
		return len(out) < n
	})
	if err = cmp.Or(err, decodeErr); err != nil {
		return nil, fmt.Errorf("read the records held in %q: %w", group, err)
	}
	return out[:min(n, len(out))], nil
}

// Count implements hold.Store: a consistent query that counts, page by
// page.
func (s *HoldStore) Count(ctx context.Context, group string) (int, error) {
	in, err := s.heldQuery(group)
	if err != nil {
		return 0, err
	}
	in.Select = types.SelectCount
	total := 0
	err = s.query(ctx, in, 0, func(page *dynamodb.QueryOutput) bool {
		total += int(page.Count)
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("count the records held in %q: %w", group, err)
	}
	return total, nil
}

// heldQuery is the query of the records held in group, in Seq order.
func (s *HoldStore) heldQuery(group string) (*dynamodb.QueryInput, error) {
	return s.partitionQuery(s.heldPK(group))
}

// partitionQuery is a consistent, ascending query of one partition.
func (s *HoldStore) partitionQuery(pk string) (*dynamodb.QueryInput, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key(KeyAttribute).Equal(expression.Value(pk))).Build()
	if err != nil {
		return nil, fmt.Errorf("build the query of %s: %w", pk, err)
	}
	return &dynamodb.QueryInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(true),
		KeyConditionExpression: expr.KeyCondition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, nil
}

// query runs in page by page (each of at most limit items; 0 sets none)
// until each returns false or the pages end.
func (s *HoldStore) query(ctx context.Context, in *dynamodb.QueryInput, limit int32, each func(*dynamodb.QueryOutput) bool) error {
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	for {
		out, err := s.api.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("query %s: %w", s.table, err)
		}
		if !each(out) || len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// decodeHeld is the held record of a record item.
func (s *HoldStore) decodeHeld(item map[string]types.AttributeValue) (hold.Message, error) {
	var it heldItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return hold.Message{}, fmt.Errorf("decode a held record of %s: %w", s.table, err)
	}
	if !json.Valid([]byte(it.Record)) {
		return hold.Message{}, fmt.Errorf("decode held record %s of %s in %s: not JSON", it.SK, it.PK, s.table)
	}
	return hold.Message{Seq: it.SK, Record: json.RawMessage(it.Record)}, nil
}

// Remove implements hold.Store.
func (s *HoldStore) Remove(ctx context.Context, group, seq string) error {
	_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: itemKey(s.heldPK(group), seq)})
	if err != nil {
		return fmt.Errorf("remove held record %s of %q from %s: %w", seq, group, s.table, err)
	}
	return nil
}

// List implements hold.Store: the scope's holds partition, page by page,
// without the heads' bodies; the sort key orders them by group.
func (s *HoldStore) List(ctx context.Context) ([]hold.Hold, error) {
	// Every attribute of a hold but its head's body.
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(KeyAttribute).Equal(expression.Value(s.holdsPK()))).
		WithProjection(expression.NamesList(expression.Name(KeyAttribute), expression.Name(SortKeyAttribute), expression.Name("head"),
			expression.Name("state"), expression.Name("parked"), expression.Name("since"), expression.Name("updated"), expression.Name("version"))).
		Build()
	if err != nil {
		return nil, fmt.Errorf("build the listing of %s: %w", s.scope, err)
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(true),
		KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}
	out := []hold.Hold{}
	var decodeErr error
	err = s.query(ctx, in, listPage, func(page *dynamodb.QueryOutput) bool {
		for _, item := range page.Items {
			var h hold.Hold
			if h, decodeErr = s.decodeHold(item); decodeErr != nil {
				return false
			}
			out = append(out, h)
		}
		return true
	})
	if err = cmp.Or(err, decodeErr); err != nil {
		return nil, fmt.Errorf("list the holds of %s: %w", s.scope, err)
	}
	return out, nil
}

// recordOf is the stored form of a held record: its JSON, without the
// receipt handle (it is void once the record is acknowledged).
func recordOf(r json.RawMessage) (string, error) {
	if !json.Valid(r) {
		return "", errors.New("the held record is not JSON")
	}
	return string(r), nil
}

// Append implements hold.Store: one transaction writes the hold (a new
// version: a consumer that read the hold before cannot end it) and puts
// the record, each on its condition, so neither lands without the other.
func (s *HoldStore) Append(ctx context.Context, group string, m hold.Message, now time.Time) (hold.Hold, error) {
	in, err := s.appendTransaction(group, m, now)
	if err != nil {
		return hold.Hold{}, err
	}
	if err := s.writeAppend(ctx, in); err != nil {
		return hold.Hold{}, fmt.Errorf("append %s to %q in %s: %w", m.Seq, group, s.table, err)
	}
	h, found, err := s.read(ctx, group)
	if err == nil && !found {
		// Ended since: a drain took the record (it ends a hold only at a
		// version after the record's) and ended the hold. The group is
		// free; the caller's copy of the record, applied again, meets the
		// idempotent receiver.
		err = fmt.Errorf("append %s to %q in %s: %w", m.Seq, group, s.table, hold.ErrNotHeld)
	}
	return h, err
}

// writeAppend runs the transaction of an Append, again after a pause
// while contention cancels it (a bounded number of times). A record held
// already changes nothing, not even the version, and is no error; a group
// without a hold is hold.ErrNotHeld.
func (s *HoldStore) writeAppend(ctx context.Context, in *dynamodb.TransactWriteItemsInput) error {
	for attempt := 0; ; attempt++ {
		_, err := s.api.TransactWriteItems(ctx, in)
		switch outcome := appendCancelled(err); {
		case err == nil || outcome == appendStored:
			return nil
		case outcome == appendNotHeld:
			return hold.ErrNotHeld
		case outcome != appendContended || attempt+1 == writeAttempts:
			return err
		}
		if err := s.sleep(ctx, time.Duration(25<<attempt)*time.Millisecond); err != nil {
			return err
		}
	}
}

// appendTransaction is the transaction of an Append: first the hold's
// write, then the record's put.
func (s *HoldStore) appendTransaction(group string, m hold.Message, now time.Time) (*dynamodb.TransactWriteItemsInput, error) {
	record, err := recordOf(m.Record)
	if err != nil {
		return nil, fmt.Errorf("encode record %s of %q: %w", m.Seq, group, err)
	}
	it := heldItem{PK: s.heldPK(group), SK: m.Seq, Record: record}
	if size := heldItemBytes(it); size > maxItemBytes {
		return nil, fmt.Errorf("append %s to %q in %s: its item is %d bytes, over DynamoDB's %d", m.Seq, group, s.table, size, maxItemBytes)
	}
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("encode record %s of %q: %w", m.Seq, group, err)
	}
	write, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(expression.Name(KeyAttribute))).
		WithUpdate(expression.Set(expression.Name("version"), expression.Plus(expression.Name("version"), expression.Value(1))).
			Set(expression.Name("updated"), expression.Value(holdTime(now)))).Build()
	if err != nil {
		return nil, fmt.Errorf("build the hold's write of an append: %w", err)
	}
	put, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(KeyAttribute))).Build()
	if err != nil {
		return nil, fmt.Errorf("build the record's put of an append: %w", err)
	}
	return &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: s.holdKey(group),
			ConditionExpression: write.Condition(), UpdateExpression: write.Update(),
			ExpressionAttributeNames: write.Names(), ExpressionAttributeValues: write.Values(),
		}},
		{Put: &types.Put{
			TableName: aws.String(s.table), Item: item,
			ConditionExpression: put.Condition(), ExpressionAttributeNames: put.Names(),
		}},
	}}, nil
}

// heldItemBytes is the size DynamoDB counts for it: the UTF-8 bytes of
// every attribute's name and value.
func heldItemBytes(it heldItem) int {
	return len(KeyAttribute) + len(it.PK) + len(SortKeyAttribute) + len(it.SK) + len("record") + len(it.Record)
}

// appendOutcome is what a failed Append transaction says.
type appendOutcome int

const (
	appendFailed    appendOutcome = iota // not a cancellation the store answers
	appendNotHeld                        // the hold's condition failed: there is none
	appendStored                         // the record's condition failed: it is held already
	appendContended                      // cancelled by contention: try again
)

// appendCancelled sorts out the failure of an Append transaction by its
// cancellation reasons (the hold's write first, then the record's put).
func appendCancelled(err error) appendOutcome {
	var cancelled *types.TransactionCanceledException
	if !errors.As(err, &cancelled) || len(cancelled.CancellationReasons) != 2 {
		return appendFailed
	}
	code := func(i int) string { return aws.ToString(cancelled.CancellationReasons[i].Code) }
	switch {
	case code(0) == "ConditionalCheckFailed":
		return appendNotHeld
	case code(1) == "ConditionalCheckFailed":
		return appendStored
	case contended(code(0)) || contended(code(1)):
		return appendContended
	}
	return appendFailed
}

// contended tells whether a cancellation reason is contention, which
// passes.
func contended(code string) bool {
	switch code {
	case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
		return true
	}
	return false
}

// Update implements hold.Store.
func (s *HoldStore) Update(ctx context.Context, h hold.Hold, now time.Time) (hold.Hold, error) {
	update := expression.Set(expression.Name("head"), expression.Value(h.Head)).
		Set(expression.Name("headBody"), expression.Value(h.HeadBody)).
		Set(expression.Name("state"), expression.Value(string(h.State))).
		Set(expression.Name("parked"), expression.Value(h.Parked)).
		Set(expression.Name("updated"), expression.Value(holdTime(now))).
		Set(expression.Name("version"), expression.Plus(expression.Name("version"), expression.Value(1)))
	expr, err := expression.NewBuilder().WithCondition(atVersion(h.Version)).WithUpdate(update).Build()
	if err != nil {
		return hold.Hold{}, fmt.Errorf("build the update of %q: %w", h.Group, err)
	}
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: s.holdKey(h.Group),
		ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		_, found, rerr := s.standing(ctx, h.Group, failed)
		switch {
		case rerr != nil:
			return hold.Hold{}, rerr
		case !found:
			return hold.Hold{}, fmt.Errorf("update the hold of %q in %s: %w", h.Group, s.table, hold.ErrNotHeld)
		}
		return hold.Hold{}, fmt.Errorf("update the hold of %q at version %d in %s: %w", h.Group, h.Version, s.table, hold.ErrConflict)
	case err != nil:
		return hold.Hold{}, fmt.Errorf("update the hold of %q in %s: %w", h.Group, s.table, err)
	}
	return s.decodeHold(out.Attributes)
}

// atVersion is the condition of Update and End: the stored hold is at
// version v (false when there is none).
func atVersion(v int64) expression.ConditionBuilder {
	return expression.Name("version").Equal(expression.Value(v))
}

// End implements hold.Store.
func (s *HoldStore) End(ctx context.Context, h hold.Hold) error {
	cond := atVersion(h.Version).Or(expression.AttributeNotExists(expression.Name(KeyAttribute)))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build the end of %q: %w", h.Group, err)
	}
	_, err = s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: s.holdKey(h.Group),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		return fmt.Errorf("end the hold of %q at version %d in %s: %w", h.Group, h.Version, s.table, hold.ErrConflict)
	case err != nil:
		return fmt.Errorf("end the hold of %q in %s: %w", h.Group, s.table, err)
	}
	return nil
}
