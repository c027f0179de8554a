package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key attributes of the table: a String partition key and a String sort key.
const (
	PartitionKey = "pk"
	SortKey      = "sk"
)

// TableAPI is the part of the DynamoDB client a [Table] uses.
type TableAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Table is a Ledger on one DynamoDB table (see the package doc for its
// items). It is safe for concurrent use.
type Table struct {
	api   TableAPI
	table string
}

var _ Ledger = (*Table)(nil)

// NewTable returns the ledger kept in table.
func NewTable(api TableAPI, table string) *Table { return &Table{api: api, table: table} }

type head struct {
	Seq    int64 `dynamodbav:"seq"`
	Frozen bool  `dynamodbav:"frozen"`
}

type entryItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	PaymentID   string `dynamodbav:"paymentId"`
	AccountID   string `dynamodbav:"accountId"`
	AmountMinor int64  `dynamodbav:"amountMinor"`
	Currency    string `dynamodbav:"currency"`
	CapturedAt  string `dynamodbav:"capturedAt"`
	Seq         int64  `dynamodbav:"seq"`
}

func (it entryItem) entry() (Entry, error) {
	at, err := time.Parse(time.RFC3339Nano, it.CapturedAt)
	if err != nil {
		return Entry{}, fmt.Errorf("entry %s/%d: capturedAt %q: %w", it.AccountID, it.Seq, it.CapturedAt, err)
	}
	return Entry{Seq: it.Seq, Posting: Posting{PaymentID: it.PaymentID, AccountID: it.AccountID, AmountMinor: it.AmountMinor, Currency: it.Currency, CapturedAt: at}}, nil
}

func accountPK(id string) string { return "account#" + id }
func paymentPK(id string) string { return "payment#" + id }
func entrySK(seq int64) string   { return fmt.Sprintf("entry#%012d", seq) }

const (
	headSK    = "head"
	paymentSK = "payment"
)

func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		PartitionKey: &types.AttributeValueMemberS{Value: pk},
		SortKey:      &types.AttributeValueMemberS{Value: sk},
	}
}

// Append implements Ledger: it reads the account's head, then writes the
// head's next sequence, the entry and the payment's marker in one
// transaction conditional on the head it read and the marker's absence.
func (t *Table) Append(ctx context.Context, p Posting) (Entry, error) {
	h, err := t.head(ctx, p.AccountID)
	if err != nil {
		return Entry{}, fmt.Errorf("append %s: %w", p.PaymentID, err)
	}
	if h.Frozen {
		// An applied payment stays applied, frozen or not.
		if e, found, err := t.Lookup(ctx, p.PaymentID); err == nil && found {
			return e, nil
		}
		return Entry{}, notApplied("append %s to %s: %w", p.PaymentID, p.AccountID, ErrFrozen)
	}
	e := Entry{Posting: p, Seq: h.Seq + 1}
	it := entryItem{PK: accountPK(p.AccountID), SK: entrySK(e.Seq), PaymentID: p.PaymentID, AccountID: p.AccountID,
		AmountMinor: p.AmountMinor, Currency: p.Currency, CapturedAt: p.CapturedAt.UTC().Format(time.RFC3339Nano), Seq: e.Seq}
	entry, err := attributevalue.MarshalMap(it)
	if err != nil {
		return Entry{}, fmt.Errorf("append %s: encode: %w", p.PaymentID, err)
	}
	marker := itemKey(paymentPK(p.PaymentID), paymentSK)
	marker["accountId"] = &types.AttributeValueMemberS{Value: p.AccountID}
	marker["seq"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(e.Seq, 10)}

	absent := expression.AttributeNotExists(expression.Name(PartitionKey))
	headCond := expression.Name("seq").Equal(expression.Value(h.Seq))
	if h.Seq == 0 {
		headCond = expression.Name("seq").AttributeNotExists().Or(headCond)
	}
	headCond = headCond.And(expression.Name("frozen").AttributeNotExists().Or(expression.Name("frozen").Equal(expression.Value(false))))
	headExpr, err := expression.NewBuilder().WithCondition(headCond).WithUpdate(expression.Set(expression.Name("seq"), expression.Value(e.Seq))).Build()
	if err != nil {
		return Entry{}, fmt.Errorf("append %s: head expression: %w", p.PaymentID, err)
	}
	absentExpr, err := expression.NewBuilder().WithCondition(absent).Build()
	if err != nil {
		return Entry{}, fmt.Errorf("append %s: condition: %w", p.PaymentID, err)
	}
	_, err = t.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(t.table), Item: marker,
			ConditionExpression: absentExpr.Condition(), ExpressionAttributeNames: absentExpr.Names()}},
		{Update: &types.Update{TableName: aws.String(t.table), Key: itemKey(accountPK(p.AccountID), headSK),
			ConditionExpression: headExpr.Condition(), UpdateExpression: headExpr.Update(),
			ExpressionAttributeNames: headExpr.Names(), ExpressionAttributeValues: headExpr.Values()}},
		{Put: &types.Put{TableName: aws.String(t.table), Item: entry,
			ConditionExpression: absentExpr.Condition(), ExpressionAttributeNames: absentExpr.Names()}},
	}})
	var canceled *types.TransactionCanceledException
	switch {
	case err == nil:
		return e, nil
	case !errors.As(err, &canceled):
		return Entry{}, fmt.Errorf("append %s to %s: %w", p.PaymentID, p.AccountID, err)
	}
	// Canceled: nothing was written. Either the payment is in already, or
	// the head moved (another append, a freeze) since it was read.
	if got, found, lerr := t.Lookup(ctx, p.PaymentID); lerr == nil && found {
		return got, nil
	}
	if h, herr := t.head(ctx, p.AccountID); herr == nil && h.Frozen {
		return Entry{}, notApplied("append %s to %s: %w", p.PaymentID, p.AccountID, ErrFrozen)
	}
	return Entry{}, notApplied("append %s to %s: %w (%v)", p.PaymentID, p.AccountID, ErrContended, err)
}

func (t *Table) head(ctx context.Context, accountID string) (head, error) {
	out, err := t.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: itemKey(accountPK(accountID), headSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return head{}, fmt.Errorf("read the head of %s in %s: %w", accountID, t.table, err)
	}
	var h head
	if err := attributevalue.UnmarshalMap(out.Item, &h); err != nil {
		return head{}, fmt.Errorf("decode the head of %s in %s: %w", accountID, t.table, err)
	}
	return h, nil
}

// Lookup implements Ledger: the marker names the entry, which is read.
func (t *Table) Lookup(ctx context.Context, paymentID string) (Entry, bool, error) {
	out, err := t.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: itemKey(paymentPK(paymentID), paymentSK), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Entry{}, false, fmt.Errorf("look up payment %s in %s: %w", paymentID, t.table, err)
	}
	if out.Item == nil {
		return Entry{}, false, nil
	}
	var m struct {
		AccountID string `dynamodbav:"accountId"`
		Seq       int64  `dynamodbav:"seq"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &m); err != nil {
		return Entry{}, false, fmt.Errorf("decode the marker of payment %s in %s: %w", paymentID, t.table, err)
	}
	got, err := t.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: itemKey(accountPK(m.AccountID), entrySK(m.Seq)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Entry{}, false, fmt.Errorf("read the entry of payment %s in %s: %w", paymentID, t.table, err)
	}
	var it entryItem
	if err := attributevalue.UnmarshalMap(got.Item, &it); err != nil || got.Item == nil {
		return Entry{}, false, fmt.Errorf("decode the entry %s/%d of payment %s in %s: %w", m.AccountID, m.Seq, paymentID, t.table, errors.Join(err, errMissingEntry))
	}
	e, err := it.entry()
	return e, err == nil, err
}

var errMissingEntry = errors.New("no such entry")

// Entries implements Ledger.
func (t *Table) Entries(ctx context.Context, accountID string) ([]Entry, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(
		expression.Key(PartitionKey).Equal(expression.Value(accountPK(accountID))).And(expression.Key(SortKey).BeginsWith("entry#"))).Build()
	if err != nil {
		return nil, fmt.Errorf("entries of %s: expression: %w", accountID, err)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(t.table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ConsistentRead: aws.Bool(true)}
	var entries []Entry
	for p := dynamodb.NewQueryPaginator(t.api, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("entries of %s in %s: %w", accountID, t.table, err)
		}
		var items []entryItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("entries of %s in %s: decode: %w", accountID, t.table, err)
		}
		for _, it := range items {
			e, err := it.entry()
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
	}
	return entries, nil
}

// Freeze implements Ledger.
func (t *Table) Freeze(ctx context.Context, accountID string, frozen bool) error {
	expr, err := expression.NewBuilder().WithUpdate(expression.Set(expression.Name("frozen"), expression.Value(frozen)).
		Set(expression.Name("seq"), expression.IfNotExists(expression.Name("seq"), expression.Value(0)))).Build()
	if err != nil {
		return fmt.Errorf("freeze %s: expression: %w", accountID, err)
	}
	_, err = t.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(t.table), Key: itemKey(accountPK(accountID), headSK),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if err != nil {
		return fmt.Errorf("freeze %s (%t) in %s: %w", accountID, frozen, t.table, err)
	}
	return nil
}
