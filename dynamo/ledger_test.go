package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/internal/record"
)

// fakeLedgerAPI fails conditional writes without the standing item, as some
// DynamoDB implementations do, and serves that item from GetItem.
type fakeLedgerAPI struct {
	API
	standing  map[string]types.AttributeValue
	queryErr  error
	gets      int
	updates   []*dynamodb.UpdateItemInput
	transacts []*dynamodb.TransactWriteItemsInput
	answers   []error // of the TransactWriteItems calls, in turn; nil succeeds
}

func (f *fakeLedgerAPI) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, &types.ConditionalCheckFailedException{}
}

func (f *fakeLedgerAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.updates = append(f.updates, in)
	return nil, &types.ConditionalCheckFailedException{}
}

func (f *fakeLedgerAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.gets++
	if !aws.ToBool(in.ConsistentRead) {
		return nil, errors.New("want a consistent read")
	}
	return &dynamodb.GetItemOutput{Item: f.standing}, nil
}

func (f *fakeLedgerAPI) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, f.queryErr
}

// TransactWriteItems answers with the next of transacts, recording each call.
func (f *fakeLedgerAPI) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.transacts = append(f.transacts, in)
	if len(f.answers) == 0 {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	err := f.answers[0]
	f.answers = f.answers[1:]
	return &dynamodb.TransactWriteItemsOutput{}, err
}

var ledgerNow = time.Unix(1_800_000_000, 0).UTC()

func sentItem(expiresAt time.Time) map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }
	return map[string]types.AttributeValue{
		"pk": s("order#ORD-1"), "sk": s("message#m-1"), "state": s("SENT"), "messageId": s("m-1"), "route": s("orders"),
		"orderId": s("ORD-1"), "originalMessageId": s("m-0"), "runId": s("run-a"), "replayCount": n(2),
		"firstSeenAt": n(ledgerNow.Add(-time.Hour).UnixMilli()), "at": n(ledgerNow.UnixMilli()), "expiresAt": n(expiresAt.Unix()),
	}
}

func recordIn(s record.State) record.Message {
	return record.Message{
		HistoryKey: "order#ORD-1", MessageID: "m-1", State: s, Route: "orders", Key: "ORD-1", OriginalMessageID: "m-0",
		RunID: "run-b", FirstSeenAt: ledgerNow, At: ledgerNow, LeaseUntil: ledgerNow.Add(time.Minute), ExpiresAt: ledgerNow.Add(time.Hour),
	}
}

func TestMarkReadsTheStandingRecordWhenTheFailureHasNone(t *testing.T) {
	for _, s := range []record.State{record.Seen, record.Intent, record.Sent} {
		t.Run(string(s), func(t *testing.T) {
			api := &fakeLedgerAPI{standing: sentItem(ledgerNow.Add(time.Hour))}
			cur, ok, err := NewLedger(api, "ledger", func() time.Time { return ledgerNow }).Mark(context.Background(), recordIn(s))
			if err != nil || ok || api.gets != 1 {
				t.Fatalf("ok=%v err=%v gets=%d", ok, err, api.gets)
			}
			if cur.State != record.Sent || cur.ReplayCount != 2 || cur.HistoryKey != "order#ORD-1" || cur.MessageID != "m-1" || !cur.At.Equal(ledgerNow) || !cur.LeaseUntil.IsZero() {
				t.Fatalf("current = %+v", cur)
			}
			for _, in := range api.updates {
				if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
					t.Error("an update does not ask for the standing item")
				}
				if pk, sk := in.Key["pk"].(*types.AttributeValueMemberS), in.Key["sk"].(*types.AttributeValueMemberS); pk.Value != "order#ORD-1" || sk.Value != "message#m-1" {
					t.Errorf("key = %v / %v", pk.Value, sk.Value)
				}
			}
		})
	}
}

func TestMarkTreatsAnExpiredStandingRecordAsAbsent(t *testing.T) {
	api := &fakeLedgerAPI{standing: sentItem(ledgerNow)}
	cur, ok, err := NewLedger(api, "ledger", func() time.Time { return ledgerNow }).Mark(context.Background(), recordIn(record.Sent))
	if err != nil || ok || cur.State != "" {
		t.Fatalf("current = %+v ok=%v err=%v", cur, ok, err)
	}
}

func TestMarkRejectsAnUnknownState(t *testing.T) {
	if _, _, err := NewLedger(&fakeLedgerAPI{}, "ledger", nil).Mark(context.Background(), recordIn("DONE")); err == nil {
		t.Fatal("want an error")
	}
}

func TestLedgerErrorsNameTheTableAndKeepTheCause(t *testing.T) {
	cause := errors.New("ProvisionedThroughputExceeded")
	l := NewLedger(&fakeLedgerAPI{queryErr: cause}, "ledger-table", nil)
	if _, err := l.History(context.Background(), "order#ORD-1"); !errors.Is(err, cause) || !strings.Contains(err.Error(), "ledger-table") {
		t.Fatalf("history: %v", err)
	}
	if _, _, err := l.LastRun(context.Background()); !errors.Is(err, cause) {
		t.Fatalf("last run: %v", err)
	}
}

// fakeBatchGet serves COMPLETED items for the ids in done, but leaves half
// of the keys of each call unprocessed the first `stingy` times.
type fakeBatchGet struct {
	API
	done   map[string]bool
	stingy int
	calls  []int
}

func (f *fakeBatchGet) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	req := in.RequestItems["idem"]
	if !aws.ToBool(req.ConsistentRead) || len(req.Keys) > 100 {
		return nil, fmt.Errorf("bad request: consistent=%v keys=%d", aws.ToBool(req.ConsistentRead), len(req.Keys))
	}
	f.calls = append(f.calls, len(req.Keys))
	keys := req.Keys
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	if f.stingy > 0 {
		f.stingy--
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{"idem": {Keys: keys[len(keys)/2:]}}
		keys = keys[:len(keys)/2]
	}
	for _, k := range keys {
		pk := k["pk"].(*types.AttributeValueMemberS).Value
		if f.done[strings.TrimPrefix(pk, "invoice#")] {
			out.Responses["idem"] = append(out.Responses["idem"], map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: pk}, "status": &types.AttributeValueMemberS{Value: "COMPLETED"},
				"payloadHash": &types.AttributeValueMemberS{Value: "h-" + pk},
				"expiresAt":   &types.AttributeValueMemberN{Value: fmt.Sprint(ledgerNow.Add(time.Hour).Unix())},
			})
		}
	}
	return out, nil
}

func TestCompletionsBatchesAndRetriesUnprocessedKeys(t *testing.T) {
	ids := make([]string, 150)
	done := map[string]bool{}
	for i := range ids {
		ids[i] = fmt.Sprintf("ORD-%03d", i)
		done[ids[i]] = i%2 == 0
	}
	api := &fakeBatchGet{done: done, stingy: 1}
	c := NewCompletions(api, "idem", "invoice", func() time.Time { return ledgerNow })
	var slept []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	got, err := c.Completed(context.Background(), append(ids, ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(api.calls) != "[100 50 50]" || len(slept) != 1 {
		t.Fatalf("calls %v, slept %v", api.calls, slept)
	}
	if len(got) != 75 {
		t.Fatalf("%d completed, want 75", len(got))
	}
	for _, id := range ids {
		if h, ok := got[id]; ok != done[id] || ok && h != "h-invoice#"+id {
			t.Fatalf("%s: %q, %v", id, h, ok)
		}
	}
}

func TestCompletionsGiveUpOnKeysLeftUnprocessed(t *testing.T) {
	c := NewCompletions(&fakeBatchGet{stingy: 100}, "idem", "invoice", nil)
	c.sleep = func(context.Context, time.Duration) error { return nil }
	if _, err := c.Completed(context.Background(), []string{"ORD-1", "ORD-2"}); err == nil || !strings.Contains(err.Error(), "unprocessed") {
		t.Fatalf("err = %v", err)
	}
}

// A batch is one transaction; the records whose condition failed are
// answered from the cancellation, an INTENT over a record it may replace is
// tried again under the full rule, and the others are written again
// without them.
func TestMarkBatchIsOneTransactionAndSortsOutItsCancellation(t *testing.T) {
	seen := sentItem(ledgerNow.Add(time.Hour))
	seen["state"] = &types.AttributeValueMemberS{Value: "SEEN"}
	seen["sk"] = &types.AttributeValueMemberS{Value: "message#m-3"}
	seen["messageId"] = &types.AttributeValueMemberS{Value: "m-3"}
	api := &fakeLedgerAPI{answers: []error{&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
		{Code: aws.String("None")},
		{Code: aws.String("ConditionalCheckFailed"), Item: sentItem(ledgerNow.Add(time.Hour))},
		{Code: aws.String("ConditionalCheckFailed"), Item: seen},
	}}}}
	l := NewLedger(api, "ledger", func() time.Time { return ledgerNow })
	recs := []record.Message{recordIn(record.Intent), recordIn(record.Intent), recordIn(record.Intent)}
	recs[0].MessageID = "m-2"
	recs[2].MessageID = "m-3"
	got := l.MarkBatch(context.Background(), recs)
	if len(api.transacts) != 2 || len(api.transacts[0].TransactItems) != 3 || len(api.transacts[1].TransactItems) != 2 {
		t.Fatalf("%d calls", len(api.transacts))
	}
	if !got[0].OK || got[0].Record.State != "" || got[0].Err != nil {
		t.Errorf("m-2: %+v, want marked as a first sighting", got[0])
	}
	if got[1].OK || got[1].Record.State != record.Sent || got[1].Err != nil {
		t.Errorf("m-1: %+v, want refused with the SENT record", got[1])
	}
	if !got[2].OK || got[2].Record.State != record.Seen || got[2].Err != nil {
		t.Errorf("m-3: %+v, want marked over its SEEN record", got[2])
	}
	cause := errors.New("throttled")
	api = &fakeLedgerAPI{answers: []error{cause}}
	for _, m := range NewLedger(api, "ledger", nil).MarkBatch(context.Background(), recs) {
		if !errors.Is(m.Err, cause) || m.OK {
			t.Fatalf("a failed call: %+v", m)
		}
	}
}
