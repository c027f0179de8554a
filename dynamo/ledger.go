package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/wait"
	"github.com/homingdlq/homing/replay"
)

// Key attributes and key values of the ledger table.
const (
	sortKeyAttribute = settings.SortKeyAttribute         // the String sort key of the ledger
	messagePrefix    = "message" + settings.KeySeparator // sort key of a message record: "message#<record.Message.ID>"
	runPartition     = "run"                             // partition of the run records
	runTimeLayout    = "2006-01-02T15:04:05.000000000Z"
)

// ledgerAPI is the part of API the ledger calls (the lane grants these
// actions on the ledger table).
type ledgerAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Ledger is a replay.Ledger on one DynamoDB table with the String partition
// key "pk", the String sort key "sk" and the TTL attribute "expiresAt"
// (epoch seconds). Every state change is one conditional write; expiry is
// checked in the conditions and query filters, never left to TTL deletion.
// It is safe for concurrent use. Its items: docs/PACKAGES.md#dynamo.
type Ledger struct {
	api   ledgerAPI
	table string
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// NewLedger returns a ledger on table whose clock (for expiry) is now; nil
// means time.Now.
func NewLedger(api API, table string, now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{api: api, table: table, now: now, sleep: wait.Sleep}
}

var _ replay.Ledger = (*Ledger)(nil)

type messageItem struct {
	PK                string `dynamodbav:"pk"`
	SK                string `dynamodbav:"sk"`
	State             string `dynamodbav:"state"`
	MessageID         string `dynamodbav:"messageId"`
	Step              string `dynamodbav:"step,omitempty"`
	Route             string `dynamodbav:"route"`
	Key               string `dynamodbav:"orderId,omitempty"` // the stored name of the business key: records in flight carry it
	OriginalMessageID string `dynamodbav:"originalMessageId"`
	RunID             string `dynamodbav:"runId"`
	Reason            string `dynamodbav:"reason,omitempty"`
	ReplayCount       int    `dynamodbav:"replayCount"`
	FirstSeenAt       int64  `dynamodbav:"firstSeenAt"`
	At                int64  `dynamodbav:"at"`
	LeaseUntil        int64  `dynamodbav:"leaseUntil,omitempty"`
	ExpiresAt         int64  `dynamodbav:"expiresAt"`
}

func toItem(r record.Message) messageItem {
	it := messageItem{
		PK: r.HistoryKey, SK: messagePrefix + r.ID(), State: string(r.State), MessageID: r.MessageID, Step: r.Step,
		Route: r.Route, Key: r.Key, OriginalMessageID: r.OriginalMessageID, RunID: r.RunID,
		Reason: r.Reason, ReplayCount: r.ReplayCount, FirstSeenAt: r.FirstSeenAt.UnixMilli(), At: r.At.UnixMilli(),
		ExpiresAt: r.ExpiresAt.Unix(),
	}
	if !r.LeaseUntil.IsZero() {
		it.LeaseUntil = r.LeaseUntil.UnixMilli()
	}
	return it
}

func (it messageItem) record() record.Message {
	r := record.Message{
		HistoryKey: it.PK, MessageID: it.MessageID, Step: it.Step, State: record.State(it.State), Route: it.Route, Key: it.Key,
		OriginalMessageID: it.OriginalMessageID, RunID: it.RunID, Reason: it.Reason, ReplayCount: it.ReplayCount,
		FirstSeenAt: time.UnixMilli(it.FirstSeenAt).UTC(), At: time.UnixMilli(it.At).UTC(), ExpiresAt: time.Unix(it.ExpiresAt, 0).UTC(),
	}
	if it.LeaseUntil != 0 {
		r.LeaseUntil = time.UnixMilli(it.LeaseUntil).UTC()
	}
	return r
}

func (l *Ledger) key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		keyAttribute:     &types.AttributeValueMemberS{Value: pk},
		sortKeyAttribute: &types.AttributeValueMemberS{Value: sk},
	}
}

// absentOrExpired is the condition under which a record counts as absent.
func absentOrExpired(now time.Time) expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(keyAttribute)).
		Or(expression.Name(ttlAttribute).LessThanEqual(expression.Value(now.Unix())))
}

func stateIs(s record.State) expression.ConditionBuilder {
	return expression.Name("state").Equal(expression.Value(string(s)))
}

// change is the conditional write of one transition: a put (from absent)
// or an update.
type change struct {
	it     messageItem
	put    bool
	cond   expression.ConditionBuilder
	update expression.UpdateBuilder
}

// change returns the write of r at now under Mark's rule; fresh narrows an
// INTENT's condition to "absent" (MarkBatch's first try, which tells a
// first sighting without reading).
func (l *Ledger) change(r record.Message, now time.Time, fresh bool) (change, error) {
	c := change{it: toItem(r)}
	switch r.State {
	case record.Seen:
		c.put = true
		c.cond = absentOrExpired(now)
	case record.Intent:
		c.cond = absentOrExpired(now).Or(stateIs(record.Seen)).Or(stateIs(record.Intent).And(
			expression.Name("leaseUntil").LessThanEqual(expression.Value(c.it.At)).Or(expression.Name("runId").Equal(expression.Value(r.RunID)).And(expression.Name("messageId").Equal(expression.Value(r.MessageID))))))
		if fresh {
			// Absent (or expired): the whole item is written, which costs
			// DynamoDB less than an update expression.
			c.put = true
			c.cond = absentOrExpired(now)
			return c, nil
		}
		c.update = l.fields(c.it).
			Set(expression.Name("firstSeenAt"), expression.IfNotExists(expression.Name("firstSeenAt"), expression.Value(c.it.FirstSeenAt))).
			Set(expression.Name("leaseUntil"), expression.Value(c.it.LeaseUntil)).
			Remove(expression.Name("reason"))
	case record.Sent, record.Parked, record.Resolved:
		c.cond = stateIs(record.Intent).And(expression.Name("runId").Equal(expression.Value(r.RunID))).
			And(expression.Name("messageId").Equal(expression.Value(r.MessageID))).
			And(expression.Name(ttlAttribute).GreaterThan(expression.Value(now.Unix())))
		c.update = l.fields(c.it).Remove(expression.Name("leaseUntil"))
		if r.Reason != "" {
			c.update = c.update.Set(expression.Name("reason"), expression.Value(r.Reason))
		} else {
			c.update = c.update.Remove(expression.Name("reason"))
		}
	default:
		return change{}, fmt.Errorf("mark %s in %s: unknown state %q", r.MessageID, l.table, r.State)
	}
	return c, nil
}

// Mark implements replay.Ledger.
func (l *Ledger) Mark(ctx context.Context, r record.Message) (record.Message, bool, error) {
	now := l.now()
	c, err := l.change(r, now, false)
	if err != nil {
		return record.Message{}, false, err
	}
	it := c.it
	var old map[string]types.AttributeValue // the item replaced
	if c.put {
		old, err = l.put(ctx, it, c.cond)
	} else {
		old, err = l.update(ctx, it, c.cond, c.update)
	}
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		prev, derr := l.live(old, now)
		if derr != nil {
			return record.Message{}, true, fmt.Errorf("decode the record %s replaced in %s: %w", r.MessageID, l.table, derr)
		}
		return prev, true, nil
	case !errors.As(err, &failed):
		return record.Message{}, false, fmt.Errorf("mark %s %s in %s: %w", r.MessageID, r.State, l.table, err)
	}
	current := failed.Item
	if len(current) == 0 { // not every implementation returns the item
		out, gerr := l.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.table), Key: l.key(it.PK, it.SK), ConsistentRead: aws.Bool(true)})
		if gerr != nil {
			return record.Message{}, false, fmt.Errorf("get %s from %s: %w", r.MessageID, l.table, gerr)
		}
		current = out.Item
	}
	cur, err := l.live(current, now)
	if err != nil {
		return record.Message{}, false, fmt.Errorf("decode %s from %s: %w", r.MessageID, l.table, err)
	}
	return cur, false, nil
}

// transactLimit is DynamoDB's limit of items per TransactWriteItems call.
const transactLimit = 100

// MarkBatch implements replay.Ledger's MarkBatch with TransactWriteItems calls
// of up to 100 records, conditional as Mark's writes. It returns one result
// per record, in order: a failed condition is OK false with the stored item,
// not an error; any other failure is the record's Err. How a transaction
// that fails in part is retried: docs/PACKAGES.md#dynamo.
func (l *Ledger) MarkBatch(ctx context.Context, records []record.Message) []record.Marked {
	out := make([]record.Marked, len(records))
	for start := 0; start < len(records); start += transactLimit {
		end := min(start+transactLimit, len(records))
		l.markBatch(ctx, records[start:end], out[start:end])
	}
	return out
}

// markBatch marks records (at most transactLimit) into out.
func (l *Ledger) markBatch(ctx context.Context, records []record.Message, out []record.Marked) {
	now := l.now()
	pending := make([]int, 0, len(records))
	fresh := make([]bool, len(records))              // tried as a first sighting
	replaced := make([]record.Message, len(records)) // what a full-rule write replaces
	for i, r := range records {
		pending = append(pending, i)
		fresh[i] = r.State == record.Intent
		if r.State.Final() {
			replaced[i] = record.Message{HistoryKey: r.HistoryKey, MessageID: r.MessageID, Step: r.Step, State: record.Intent, RunID: r.RunID}
		}
	}
	const attempts = 6
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == attempts {
			for _, i := range pending {
				out[i].Err = fmt.Errorf("mark %s %s in %s: transaction still cancelled after %d attempts", records[i].MessageID, records[i].State, l.table, attempts)
			}
			return
		}
		items := make([]types.TransactWriteItem, 0, len(pending))
		for _, i := range pending {
			c, err := l.change(records[i], now, fresh[i])
			if err == nil {
				var item types.TransactWriteItem
				item, err = l.transactItem(c)
				items = append(items, item)
			}
			if err != nil {
				out[i].Err = err
				return
			}
		}
		_, err := l.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		var cancelled *types.TransactionCanceledException
		switch {
		case err == nil:
			for _, i := range pending {
				out[i].OK = true
				out[i].Record = replaced[i] // zero for a first sighting
			}
			return
		case !errors.As(err, &cancelled) || len(cancelled.CancellationReasons) != len(pending):
			for _, i := range pending {
				out[i].Err = fmt.Errorf("mark %s %s in %s: %w", records[i].MessageID, records[i].State, l.table, err)
			}
			return
		}
		var again []int
		for k, reason := range cancelled.CancellationReasons {
			i := pending[k]
			switch code := aws.ToString(reason.Code); code {
			case "", "None":
				again = append(again, i) // cancelled for another item
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
				again = append(again, i)
			case "ConditionalCheckFailed":
				cur, err := l.standing(ctx, records[i], reason.Item, now)
				switch {
				case err != nil:
					out[i].Err = err
				case fresh[i] && cur.State != "" && record.Transition(&cur, records[i]):
					// A record the INTENT may replace: try again under the
					// full rule, which checks it again atomically.
					fresh[i] = false
					replaced[i] = cur
					again = append(again, i)
				default:
					out[i].Record = cur
				}
			default:
				out[i].Err = fmt.Errorf("mark %s %s in %s: %s: %s", records[i].MessageID, records[i].State, l.table, code, aws.ToString(reason.Message))
			}
		}
		pending = again
		if len(pending) > 0 && attempt > 0 {
			if err := l.sleep(ctx, time.Duration(25<<attempt)*time.Millisecond); err != nil {
				for _, i := range pending {
					out[i].Err = fmt.Errorf("mark %s %s in %s: %w", records[i].MessageID, records[i].State, l.table, err)
				}
				return
			}
		}
	}
}

// transactItem is c as a member of a transaction.
func (l *Ledger) transactItem(c change) (types.TransactWriteItem, error) {
	if c.put {
		item, err := attributevalue.MarshalMap(c.it)
		if err != nil {
			return types.TransactWriteItem{}, fmt.Errorf("encode %s: %w", c.it.MessageID, err)
		}
		expr, err := expression.NewBuilder().WithCondition(c.cond).Build()
		if err != nil {
			return types.TransactWriteItem{}, fmt.Errorf("build condition: %w", err)
		}
		return types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(l.table), Item: item,
			ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}, nil
	}
	expr, err := expression.NewBuilder().WithCondition(c.cond).WithUpdate(c.update).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build update: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(l.table), Key: l.key(c.it.PK, c.it.SK),
		ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// standing is the live record a failed condition met: item, as the answer
// gave it, or read when the answer had none.
func (l *Ledger) standing(ctx context.Context, r record.Message, item map[string]types.AttributeValue, now time.Time) (record.Message, error) {
	if len(item) == 0 { // not every implementation returns the item
		out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.table), Key: l.key(r.HistoryKey, messagePrefix+r.ID()), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return record.Message{}, fmt.Errorf("get %s from %s: %w", r.MessageID, l.table, err)
		}
		item = out.Item
	}
	cur, err := l.live(item, now)
	if err != nil {
		return record.Message{}, fmt.Errorf("decode %s from %s: %w", r.MessageID, l.table, err)
	}
	return cur, nil
}

// live decodes a message item; zero when there is none or it has expired.
func (l *Ledger) live(item map[string]types.AttributeValue, now time.Time) (record.Message, error) {
	if len(item) == 0 {
		return record.Message{}, nil
	}
	var it messageItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return record.Message{}, err
	}
	if it.ExpiresAt <= now.Unix() {
		return record.Message{}, nil
	}
	return it.record(), nil
}

// fields sets what every transition writes.
func (l *Ledger) fields(it messageItem) expression.UpdateBuilder {
	u := expression.Set(expression.Name("state"), expression.Value(it.State))
	if it.Step != "" {
		u = u.Set(expression.Name("step"), expression.Value(it.Step))
	}
	return u.
		Set(expression.Name("messageId"), expression.Value(it.MessageID)).
		Set(expression.Name("route"), expression.Value(it.Route)).
		Set(expression.Name("orderId"), expression.Value(it.Key)).
		Set(expression.Name("originalMessageId"), expression.Value(it.OriginalMessageID)).
		Set(expression.Name("runId"), expression.Value(it.RunID)).
		Set(expression.Name("replayCount"), expression.Value(it.ReplayCount)).
		Set(expression.Name("at"), expression.Value(it.At)).
		Set(expression.Name(ttlAttribute), expression.Value(it.ExpiresAt))
}

// put writes it when cond holds and returns the item it replaced.
func (l *Ledger) put(ctx context.Context, it messageItem, cond expression.ConditionBuilder) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", it.MessageID, err)
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("build condition: %w", err)
	}
	out, err := l.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(l.table), Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

// update applies update when cond holds and returns the item as it was
// before (empty when there was none).
func (l *Ledger) update(ctx context.Context, it messageItem, cond expression.ConditionBuilder, update expression.UpdateBuilder) (map[string]types.AttributeValue, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(update).Build()
	if err != nil {
		return nil, fmt.Errorf("build update: %w", err)
	}
	out, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.table), Key: l.key(it.PK, it.SK),
		ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

// query runs a consistent query of one partition for the live items whose
// sort key begins with prefix, page by page, until each returns false or the
// pages end.
func (l *Ledger) query(ctx context.Context, pk, prefix string, newestFirst bool, limit int32, each func(map[string]types.AttributeValue) bool) error {
	key := expression.Key(keyAttribute).Equal(expression.Value(pk))
	if prefix != "" {
		key = key.And(expression.Key(sortKeyAttribute).BeginsWith(prefix))
	}
	expr, err := expression.NewBuilder().WithKeyCondition(key).
		WithFilter(expression.Name(ttlAttribute).GreaterThan(expression.Value(l.now().Unix()))).Build()
	if err != nil {
		return fmt.Errorf("build query: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(l.table), ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(!newestFirst),
		KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	for {
		out, err := l.api.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("query %s in %s: %w", pk, l.table, err)
		}
		for _, item := range out.Items {
			if !each(item) {
				return nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// History implements replay.Ledger; the records come sorted by DLQ
// message id.
func (l *Ledger) History(ctx context.Context, historyKey string) ([]record.Message, error) {
	var out []record.Message
	var decodeErr error
	err := l.query(ctx, historyKey, messagePrefix, false, 0, func(item map[string]types.AttributeValue) bool {
		var it messageItem
		if decodeErr = attributevalue.UnmarshalMap(item, &it); decodeErr != nil {
			return false
		}
		out = append(out, it.record())
		return true
	})
	if err == nil && decodeErr != nil {
		err = fmt.Errorf("decode history of %s from %s: %w", historyKey, l.table, decodeErr)
	}
	return out, err
}

type runItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	RunID     string `dynamodbav:"runId"`
	StartedAt string `dynamodbav:"startedAt"`
	DryRun    bool   `dynamodbav:"dryRun"`
	Summary   string `dynamodbav:"summary"`
	ExpiresAt int64  `dynamodbav:"expiresAt"`
}

// PutRun implements replay.Ledger.
func (l *Ledger) PutRun(ctx context.Context, s replay.Summary, expiresAt time.Time) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", s.RunID, err)
	}
	startedAt := s.StartedAt.UTC().Format(runTimeLayout)
	item, err := attributevalue.MarshalMap(runItem{
		PK: runPartition, SK: settings.ScopedKey(startedAt, s.RunID), RunID: s.RunID, StartedAt: startedAt,
		DryRun: s.DryRun, Summary: string(b), ExpiresAt: expiresAt.Unix(),
	})
	if err != nil {
		return fmt.Errorf("encode run %s: %w", s.RunID, err)
	}
	if _, err := l.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.table), Item: item}); err != nil {
		return fmt.Errorf("put run %s in %s: %w", s.RunID, l.table, err)
	}
	return nil
}

// LastRun implements replay.Ledger.
func (l *Ledger) LastRun(ctx context.Context) (replay.Summary, bool, error) {
	runs, err := l.Runs(ctx, 1)
	if err != nil || len(runs) == 0 {
		return replay.Summary{}, false, err
	}
	return runs[0], true, nil
}

// Runs implements replay.Ledger.
func (l *Ledger) Runs(ctx context.Context, n int) ([]replay.Summary, error) {
	if n <= 0 {
		return nil, nil
	}
	out := make([]replay.Summary, 0, min(n, 100))
	var decodeErr error
	err := l.query(ctx, runPartition, "", true, int32(min(n, 100)), func(item map[string]types.AttributeValue) bool {
		var it runItem
		if decodeErr = attributevalue.UnmarshalMap(item, &it); decodeErr != nil {
			return false
		}
		var s replay.Summary
		if decodeErr = json.Unmarshal([]byte(it.Summary), &s); decodeErr != nil {
			decodeErr = fmt.Errorf("run %s: %w", it.RunID, decodeErr)
			return false
		}
		out = append(out, s)
		return len(out) < n
	})
	if err == nil && decodeErr != nil {
		err = fmt.Errorf("decode runs from %s: %w", l.table, decodeErr)
	}
	return out, err
}

// completionsAPI is the part of API [Completions] calls (the lane grants
// it on the idempotency table).
type completionsAPI interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Completions implements replay.Completions on the idempotency table: a
// business key is completed when its item (idempotency.Key(scope, key), as
// idempotency.Receiver writes it) has status COMPLETED and has not expired.
// It is safe for concurrent use.
type Completions struct {
	api   completionsAPI
	table string
	scope string
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// NewCompletions reads the idempotency table of the consumer scope (its
// CONSUMER_NAME, the receiver's Scope); now is the clock for expiry (nil:
// time.Now).
func NewCompletions(api API, table, scope string, now func() time.Time) *Completions {
	if now == nil {
		now = time.Now
	}
	return &Completions{api: api, table: table, scope: scope, now: now, sleep: wait.Sleep}
}

var _ replay.Completions = (*Completions)(nil)

// Completed implements replay.Completions with consistent BatchGetItem
// reads of up to 100 keys, retrying unprocessed keys a few times.
func (c *Completions) Completed(ctx context.Context, keys []string) (map[string]string, error) {
	ids := slices.Compact(slices.Sorted(slices.Values(keys)))
	out := make(map[string]string, len(ids))
	proj, err := expression.NewBuilder().WithProjection(expression.NamesList(
		expression.Name(keyAttribute), expression.Name("status"), expression.Name("payloadHash"), expression.Name(ttlAttribute))).Build()
	if err != nil {
		return nil, fmt.Errorf("build projection: %w", err)
	}
	now := c.now().Unix()
	byKey := make(map[string]string, len(ids))
	items := make([]map[string]types.AttributeValue, 0, len(ids))
	for _, id := range ids {
		k := idempotency.Key(c.scope, id)
		byKey[k] = id
		items = append(items, map[string]types.AttributeValue{keyAttribute: &types.AttributeValueMemberS{Value: k}})
	}
	in := types.KeysAndAttributes{ProjectionExpression: proj.Projection(), ExpressionAttributeNames: proj.Names()}
	err = batchGet(ctx, c.api, c.sleep, c.table, "completions", items, in, func(item map[string]types.AttributeValue) error {
		var it idempotencyItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return fmt.Errorf("decode completion from %s: %w", c.table, err)
		}
		if id, ok := byKey[it.Key]; ok && it.Status == string(idempotency.Completed) && it.ExpiresAt > now {
			out[id] = it.PayloadHash
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
