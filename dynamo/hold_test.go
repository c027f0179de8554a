package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/hold"
	holdrecord "github.com/homingdlq/homing/hold/record"
	"github.com/homingdlq/homing/settings"
)

// fakeHoldAPI answers each call with the function set for its method and
// records the calls; a method without one fails the call.
type fakeHoldAPI struct {
	put      func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	get      func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	update   func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	del      func(*dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error)
	query    func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
	batchGet func(*dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error)
	transact func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error)
	calls    []string
}

var errUnexpected = errors.New("fake: unexpected call")

// answer records the call of method and answers it with f, or fails it.
func answer[I, O any](f *fakeHoldAPI, method string, fn func(I) (O, error), in I) (O, error) {
	f.calls = append(f.calls, method)
	if fn == nil {
		var zero O
		return zero, fmt.Errorf("%s: %w", method, errUnexpected)
	}
	return fn(in)
}

func (f *fakeHoldAPI) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return answer(f, "PutItem", f.put, in)
}

func (f *fakeHoldAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if !aws.ToBool(in.ConsistentRead) {
		return nil, errors.New("fake: want a consistent read")
	}
	return answer(f, "GetItem", f.get, in)
}

func (f *fakeHoldAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return answer(f, "UpdateItem", f.update, in)
}

func (f *fakeHoldAPI) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return answer(f, "DeleteItem", f.del, in)
}

func (f *fakeHoldAPI) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if !aws.ToBool(in.ConsistentRead) || !aws.ToBool(in.ScanIndexForward) {
		return nil, errors.New("fake: want a consistent, ascending query")
	}
	return answer(f, "Query", f.query, in)
}

func (f *fakeHoldAPI) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return answer(f, "BatchGetItem", f.batchGet, in)
}

func (f *fakeHoldAPI) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return answer(f, "TransactWriteItems", f.transact, in)
}

var holdNow = time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)

// newTestHoldStore is a store of scope "lane" in table "idem" on api,
// whose holds start at version 7 and which never sleeps (it records the
// pauses in slept).
func newTestHoldStore(api HoldAPI, slept *[]time.Duration) *HoldStore {
	s := NewHoldStore(api, "idem", "lane")
	s.firstVersion = func() int64 { return 7 }
	s.sleep = func(_ context.Context, d time.Duration) error {
		if slept != nil {
			*slept = append(*slept, d)
		}
		return nil
	}
	return s
}

// storedHold is the item of a hold of group at version.
func storedHold(group string, version int64) map[string]types.AttributeValue {
	item, err := attributevalue.MarshalMap(holdItem{PK: "lane#holds", SK: group, Head: "m-1", State: "held",
		Since: holdTime(holdNow), Updated: holdTime(holdNow), Version: version})
	if err != nil {
		panic(err)
	}
	return item
}

func attributeNames(item map[string]types.AttributeValue) []string {
	var names []string
	for n := range item {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func stringOf(v types.AttributeValue) string {
	s, _ := v.(*types.AttributeValueMemberS)
	if s == nil {
		return fmt.Sprintf("<not S: %T>", v)
	}
	return s.Value
}

// The items' attribute tags spell the key schema that settings declares,
// and no item of a hold carries the TTL attribute: DynamoDB must never
// delete a hold or a held record, however long its group stays held.
func TestHoldItemTagsAreTheKeySchemaWithoutTTL(t *testing.T) {
	for _, item := range []any{holdItem{}, heldItem{}} {
		typ := reflect.TypeOf(item)
		for field, want := range map[string]string{"PK": settings.PartitionKeyAttribute, "SK": settings.SortKeyAttribute} {
			f, _ := typ.FieldByName(field)
			if got, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); got != want {
				t.Errorf("%s.%s is stored as %q, want %q (settings)", typ.Name(), field, got, want)
			}
		}
		for i := range typ.NumField() {
			if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("dynamodbav"), ","); name == settings.TTLAttribute {
				t.Errorf("%s.%s is stored as the TTL attribute", typ.Name(), typ.Field(i).Name)
			}
		}
	}
}

// Begin puts the documented item, on the condition that the group has
// none, in the scope's holds partition; times are RFC 3339 in UTC to the
// nanosecond.
func TestBeginPutsTheDocumentedItem(t *testing.T) {
	var put *dynamodb.PutItemInput
	api := &fakeHoldAPI{put: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
		put = in
		return &dynamodb.PutItemOutput{}, nil
	}}
	local := holdNow.In(time.FixedZone("CET", 3600))
	h, err := newTestHoldStore(api, nil).Begin(context.Background(), hold.Hold{Group: "g#1", Head: "m-1", HeadBody: `{"id":1}`, Parked: "invalid: x"}, local)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 7 || h.State != hold.Held || !h.Since.Equal(holdNow) {
		t.Fatalf("Begin = %+v", h)
	}
	if got := attributeNames(put.Item); !slices.Equal(got, []string{"head", "headBody", "parked", "pk", "since", "sk", "state", "updated", "version"}) {
		t.Fatalf("attributes %v", got)
	}
	for name, want := range map[string]string{"pk": "lane#holds", "sk": "g#1", "head": "m-1", "headBody": `{"id":1}`, "state": "held", "parked": "invalid: x",
		"since": "2026-11-29T10:00:00.123456789Z", "updated": "2026-11-29T10:00:00.123456789Z"} {
		if got := stringOf(put.Item[name]); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if n, _ := put.Item["version"].(*types.AttributeValueMemberN); n == nil || n.Value != "7" {
		t.Errorf("version = %v", put.Item["version"])
	}
	if cond := aws.ToString(put.ConditionExpression); !strings.Contains(cond, "attribute_not_exists") {
		t.Errorf("condition %q", cond)
	}
}

// A Begin that loses to a standing hold returns it: from the failure when
// it carries the item, else read consistently; a hold that keeps vanishing
// between the write and the read makes Begin give up.
func TestBeginReturnsTheStandingHold(t *testing.T) {
	failWith := func(item map[string]types.AttributeValue) func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
		return func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
			return nil, &types.ConditionalCheckFailedException{Item: item}
		}
	}
	api := &fakeHoldAPI{put: failWith(storedHold("g", 41))}
	if h, err := newTestHoldStore(api, nil).Begin(context.Background(), hold.Hold{Group: "g", Head: "m-2"}, holdNow); err != nil || h.Version != 41 || h.Head != "m-1" {
		t.Fatalf("from the failure: %+v, %v", h, err)
	}
	api = &fakeHoldAPI{put: failWith(nil), get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
		return &dynamodb.GetItemOutput{Item: storedHold("g", 42)}, nil
	}}
	if h, err := newTestHoldStore(api, nil).Begin(context.Background(), hold.Hold{Group: "g", Head: "m-2"}, holdNow); err != nil || h.Version != 42 {
		t.Fatalf("read: %+v, %v (calls %v)", h, err, api.calls)
	}
	api = &fakeHoldAPI{put: failWith(nil), get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
		return &dynamodb.GetItemOutput{}, nil
	}}
	if _, err := newTestHoldStore(api, nil).Begin(context.Background(), hold.Hold{Group: "g", Head: "m-2"}, holdNow); err == nil || len(api.calls) != 2*writeAttempts {
		t.Fatalf("vanishing: err = %v after calls %v", err, api.calls)
	}
}

// Append writes the hold and puts the record in one transaction, the
// hold's write first, then reads the hold as written.
func TestAppendIsOneTransaction(t *testing.T) {
	var tx *dynamodb.TransactWriteItemsInput
	api := &fakeHoldAPI{
		transact: func(in *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			tx = in
			return &dynamodb.TransactWriteItemsOutput{}, nil
		},
		get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
			return &dynamodb.GetItemOutput{Item: storedHold("g", 8)}, nil
		},
	}
	m := hold.Message{Seq: "0042", Record: heldJSON(events.SQSMessage{MessageId: "m-42", ReceiptHandle: "rh", Body: "b"})}
	h, err := newTestHoldStore(api, nil).Append(context.Background(), "g", m, holdNow)
	if err != nil || h.Version != 8 {
		t.Fatalf("Append = %+v, %v", h, err)
	}
	if len(tx.TransactItems) != 2 || tx.TransactItems[0].Update == nil || tx.TransactItems[1].Put == nil {
		t.Fatalf("transaction %+v", tx.TransactItems)
	}
	u := tx.TransactItems[0].Update
	if pk, sk := stringOf(u.Key["pk"]), stringOf(u.Key["sk"]); pk != "lane#holds" || sk != "g" {
		t.Errorf("the hold's write is of %s/%s", pk, sk)
	}
	if cond := aws.ToString(u.ConditionExpression); !strings.Contains(cond, "attribute_exists") {
		t.Errorf("the hold's write is on %q", cond)
	}
	put := tx.TransactItems[1].Put
	if got := attributeNames(put.Item); !slices.Equal(got, []string{"pk", "record", "sk"}) {
		t.Fatalf("the record's attributes %v", got)
	}
	if pk, sk := stringOf(put.Item["pk"]), stringOf(put.Item["sk"]); pk != "lane#hold#g" || sk != "0042" {
		t.Errorf("the record is put at %s/%s", pk, sk)
	}
	var r events.SQSMessage
	if err := json.Unmarshal([]byte(stringOf(put.Item["record"])), &r); err != nil || r.MessageId != "m-42" || r.ReceiptHandle != "" {
		t.Errorf("record %+v, %v: want m-42 without its receipt handle", r, err)
	}
	if cond := aws.ToString(put.ConditionExpression); !strings.Contains(cond, "attribute_not_exists") {
		t.Errorf("the record's put is on %q", cond)
	}
}

func cancelled(codes ...string) error {
	var reasons []types.CancellationReason
	for _, c := range codes {
		reasons = append(reasons, types.CancellationReason{Code: aws.String(c)})
	}
	return &types.TransactionCanceledException{CancellationReasons: reasons}
}

// An Append's cancellation says what happened by its reasons, the hold's
// write first: no hold, the record held already, or contention.
func TestAppendCancelledSortsOutTheReasons(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want appendOutcome
	}{
		{"no hold", cancelled("ConditionalCheckFailed", "None"), appendNotHeld},
		{"no hold, and the record held", cancelled("ConditionalCheckFailed", "ConditionalCheckFailed"), appendNotHeld},
		{"the record held", cancelled("None", "ConditionalCheckFailed"), appendStored},
		{"a conflict on the hold", cancelled("TransactionConflict", "None"), appendContended},
		{"throttled", cancelled("None", "ThrottlingError"), appendContended},
		{"too large", cancelled("None", "ValidationError"), appendFailed},
		{"reasons missing", &types.TransactionCanceledException{}, appendFailed},
		{"another error", errors.New("connection reset"), appendFailed},
	} {
		if got := appendCancelled(fmt.Errorf("wrapped: %w", tc.err)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Append answers each cancellation: ErrNotHeld, the standing hold for a
// record held already, another try after a pause for contention (a
// bounded number of them), the cause otherwise.
func TestAppendAnswersItsCancellation(t *testing.T) {
	m := hold.Message{Seq: "0001", Record: heldJSON(events.SQSMessage{MessageId: "m-1"})}
	for _, tc := range []struct {
		name    string
		answers []error
		want    error // nil: the hold read after
		tries   int
	}{
		{"no hold", []error{cancelled("ConditionalCheckFailed", "None")}, hold.ErrNotHeld, 1},
		{"held already", []error{cancelled("None", "ConditionalCheckFailed")}, nil, 1},
		{"a conflict, then written", []error{cancelled("TransactionConflict", "None"), nil}, nil, 2},
		{"conflicts that last", slices.Repeat([]error{cancelled("TransactionConflict", "None")}, writeAttempts), errCancelled, writeAttempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			var slept []time.Duration
			api := &fakeHoldAPI{
				transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
					err := tc.answers[tries]
					tries++
					return &dynamodb.TransactWriteItemsOutput{}, err
				},
				get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
					return &dynamodb.GetItemOutput{Item: storedHold("g", 9)}, nil
				},
			}
			h, err := newTestHoldStore(api, &slept).Append(context.Background(), "g", m, holdNow)
			switch {
			case tries != tc.tries || len(slept) != tc.tries-1:
				t.Fatalf("%d tries, slept %v; want %d tries", tries, slept, tc.tries)
			case tc.want == errCancelled:
				var tce *types.TransactionCanceledException
				if !errors.As(err, &tce) || !strings.Contains(err.Error(), "idem") {
					t.Fatalf("err = %v, want the cancellation, naming the table", err)
				}
			case tc.want != nil:
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
			case err != nil || h.Version != 9:
				t.Fatalf("Append = %+v, %v; want the stored hold", h, err)
			}
		})
	}
}

// errCancelled marks a case whose error is the cancellation itself.
var errCancelled = errors.New("the cancellation")

// An Append ended by a drain after its transaction (the read finds no
// hold) reports ErrNotHeld.
func TestAppendOfAHoldEndedSinceIsNotHeld(t *testing.T) {
	api := &fakeHoldAPI{
		transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			return &dynamodb.TransactWriteItemsOutput{}, nil
		},
		get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return &dynamodb.GetItemOutput{}, nil },
	}
	if _, err := newTestHoldStore(api, nil).Append(context.Background(), "g", hold.Message{Seq: "1", Record: json.RawMessage(`{}`)}, holdNow); !errors.Is(err, hold.ErrNotHeld) {
		t.Fatalf("err = %v, want ErrNotHeld", err)
	}
}

// A record whose item would exceed DynamoDB's 400 KB is refused before any
// write, with its size; one that fits is written.
func TestAppendRefusesARecordOverTheItemLimit(t *testing.T) {
	for _, tc := range []struct {
		body   int
		refuse bool
	}{{maxItemBytes - 1024, false}, {maxItemBytes, true}} {
		api := &fakeHoldAPI{
			transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
				return &dynamodb.TransactWriteItemsOutput{}, nil
			},
			get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
				return &dynamodb.GetItemOutput{Item: storedHold("g", 8)}, nil
			},
		}
		m := hold.Message{Seq: "0001", Record: heldJSON(events.SQSMessage{Body: strings.Repeat("x", tc.body)})}
		_, err := newTestHoldStore(api, nil).Append(context.Background(), "g", m, holdNow)
		if refused := err != nil && strings.Contains(err.Error(), "over DynamoDB's"); refused != tc.refuse || refused && len(api.calls) != 0 {
			t.Errorf("body of %d bytes: err = %v, calls %v", tc.body, err, api.calls)
		}
	}
}

// Holds reads each group once, in consistent batches of at most 100, and
// retries the keys left unprocessed after a pause.
func TestHoldsBatchesAndRetriesUnprocessedKeys(t *testing.T) {
	var groups []string
	for i := range 150 {
		groups = append(groups, fmt.Sprintf("g-%03d", i))
	}
	var batches []int
	stingy := 1
	api := &fakeHoldAPI{batchGet: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		req := in.RequestItems["idem"]
		if !aws.ToBool(req.ConsistentRead) || len(req.Keys) > 100 {
			return nil, fmt.Errorf("bad request: consistent=%v keys=%d", aws.ToBool(req.ConsistentRead), len(req.Keys))
		}
		batches = append(batches, len(req.Keys))
		keys := req.Keys
		out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
		if stingy > 0 {
			stingy--
			out.UnprocessedKeys = map[string]types.KeysAndAttributes{"idem": {Keys: keys[len(keys)/2:]}}
			keys = keys[:len(keys)/2]
		}
		for _, k := range keys {
			if g := stringOf(k["sk"]); g < "g-075" {
				out.Responses["idem"] = append(out.Responses["idem"], storedHold(g, 1))
			}
		}
		return out, nil
	}}
	var slept []time.Duration
	got, err := newTestHoldStore(api, &slept).Holds(context.Background(), append(groups, groups[0]))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(batches) != "[100 50 50]" || len(slept) != 1 || len(got) != 75 {
		t.Fatalf("batches %v, slept %v, %d holds", batches, slept, len(got))
	}
	if h := got["g-074"]; h.Group != "g-074" || h.Head != "m-1" || !h.Since.Equal(holdNow) {
		t.Fatalf("g-074: %+v", h)
	}
	stingy = 100
	if _, err := newTestHoldStore(api, nil).Holds(context.Background(), groups[:2]); err == nil || !strings.Contains(err.Error(), "unprocessed") {
		t.Fatalf("keys never processed: err = %v", err)
	}
}

// pagedQuery serves items in pages of at most two, whatever the Limit (as
// DynamoDB ends a page at 1 MB), with the Count of each page.
func pagedQuery(items []map[string]types.AttributeValue, limits *[]int32) func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	return func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		*limits = append(*limits, aws.ToInt32(in.Limit))
		start := 0
		if in.ExclusiveStartKey != nil {
			start, _ = strconv.Atoi(stringOf(in.ExclusiveStartKey["sk"]))
		}
		end := min(start+2, len(items))
		if in.Limit != nil {
			end = min(end, start+int(*in.Limit))
		}
		out := &dynamodb.QueryOutput{Count: int32(end - start)}
		if in.Select != types.SelectCount {
			out.Items = items[start:end]
		}
		if end < len(items) {
			out.LastEvaluatedKey = map[string]types.AttributeValue{"sk": &types.AttributeValueMemberS{Value: fmt.Sprint(end)}}
		}
		return out, nil
	}
}

func heldItems(n int) []map[string]types.AttributeValue {
	var items []map[string]types.AttributeValue
	for i := range n {
		item, _ := attributevalue.MarshalMap(heldItem{PK: "lane#hold#g", SK: fmt.Sprintf("%04d", i), Record: fmt.Sprintf(`{"body":"b%d"}`, i)})
		items = append(items, item)
	}
	return items
}

// Next reads page after page until it has n records (a page may end at 1
// MB, before the Limit), and reads nothing for n <= 0.
func TestNextPagesUntilItHasN(t *testing.T) {
	var limits []int32
	api := &fakeHoldAPI{query: pagedQuery(heldItems(7), &limits)}
	s := newTestHoldStore(api, nil)
	got, err := s.Next(context.Background(), "g", 5)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, m := range got {
		r, err := holdrecord.Of(m)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, m.Seq+":"+r.Body)
	}
	if want := "[0000:b0 0001:b1 0002:b2 0003:b3 0004:b4]"; fmt.Sprint(seen) != want || fmt.Sprint(limits) != "[5 5 5]" {
		t.Fatalf("Next = %v with limits %v, want %s", seen, limits, want)
	}
	api.calls = nil
	if got, err := s.Next(context.Background(), "g", 0); err != nil || len(got) != 0 || len(api.calls) != 0 {
		t.Fatalf("Next(0) = %v, %v after calls %v", got, err, api.calls)
	}
}

// Count and List read every page.
func TestCountAndListReadEveryPage(t *testing.T) {
	var limits []int32
	api := &fakeHoldAPI{query: pagedQuery(heldItems(5), &limits)}
	if n, err := newTestHoldStore(api, nil).Count(context.Background(), "g"); err != nil || n != 5 || len(limits) != 3 {
		t.Fatalf("Count = %d, %v in %d pages", n, err, len(limits))
	}
	var holds []map[string]types.AttributeValue
	for i := range 5 {
		holds = append(holds, storedHold(fmt.Sprintf("g-%d", i), int64(i)))
	}
	limits = nil
	api = &fakeHoldAPI{query: pagedQuery(holds, &limits)}
	got, err := newTestHoldStore(api, nil).List(context.Background())
	if err != nil || len(got) != 5 || got[4].Group != "g-4" || fmt.Sprint(limits) != fmt.Sprintf("[%d %d %d]", listPage, listPage, listPage) {
		t.Fatalf("List = %v, %v with limits %v", got, err, limits)
	}
}

// A refused Update is ErrConflict when the hold stands (from the failure,
// or read when the failure carries no item) and ErrNotHeld when there is
// none; a written one returns the hold as written.
func TestUpdateTellsNotHeldFromConflict(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failure  map[string]types.AttributeValue
		standing map[string]types.AttributeValue
		want     error
		calls    string
	}{
		{"the failure's item", storedHold("g", 3), nil, hold.ErrConflict, "[UpdateItem]"},
		{"read, standing", nil, storedHold("g", 3), hold.ErrConflict, "[UpdateItem GetItem]"},
		{"read, none", nil, nil, hold.ErrNotHeld, "[UpdateItem GetItem]"},
	} {
		api := &fakeHoldAPI{
			update: func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
				return nil, &types.ConditionalCheckFailedException{Item: tc.failure}
			},
			get: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
				return &dynamodb.GetItemOutput{Item: tc.standing}, nil
			},
		}
		_, err := newTestHoldStore(api, nil).Update(context.Background(), hold.Hold{Group: "g", Version: 2}, holdNow)
		if !errors.Is(err, tc.want) || fmt.Sprint(api.calls) != tc.calls {
			t.Errorf("%s: err = %v after %v, want %v after %s", tc.name, err, api.calls, tc.want, tc.calls)
		}
	}
	api := &fakeHoldAPI{update: func(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		if in.ReturnValues != types.ReturnValueAllNew || in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
			return nil, errors.New("fake: want ALL_NEW, and ALL_OLD on a failed condition")
		}
		return &dynamodb.UpdateItemOutput{Attributes: storedHold("g", 3)}, nil
	}}
	if h, err := newTestHoldStore(api, nil).Update(context.Background(), hold.Hold{Group: "g", Version: 2}, holdNow); err != nil || h.Version != 3 {
		t.Fatalf("Update = %+v, %v", h, err)
	}
}

// A refused End is ErrConflict.
func TestEndRefusedIsConflict(t *testing.T) {
	api := &fakeHoldAPI{del: func(in *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) {
		if cond := aws.ToString(in.ConditionExpression); !strings.Contains(cond, "attribute_not_exists") || !strings.Contains(cond, "OR") {
			return nil, fmt.Errorf("fake: condition %q", cond)
		}
		return nil, &types.ConditionalCheckFailedException{}
	}}
	if err := newTestHoldStore(api, nil).End(context.Background(), hold.Hold{Group: "g", Version: 2}); !errors.Is(err, hold.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
}

// Every failure of the SDK comes back wrapped: its cause kept, the table
// named.
func TestHoldErrorsNameTheTableAndKeepTheCause(t *testing.T) {
	cause := errors.New("ProvisionedThroughputExceeded")
	api := &fakeHoldAPI{
		put:      func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) { return nil, cause },
		get:      func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) { return nil, cause },
		update:   func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, cause },
		del:      func(*dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) { return nil, cause },
		query:    func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error) { return nil, cause },
		batchGet: func(*dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) { return nil, cause },
		transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) { return nil, cause },
	}
	s := newTestHoldStore(api, nil)
	ctx := context.Background()
	h := hold.Hold{Group: "g", Version: 1}
	for name, call := range map[string]func() error{
		"Begin": func() error { _, err := s.Begin(ctx, hold.Hold{Group: "g", Head: "m"}, holdNow); return err },
		"Holds": func() error { _, err := s.Holds(ctx, []string{"g"}); return err },
		"Append": func() error {
			_, err := s.Append(ctx, "g", hold.Message{Seq: "1", Record: json.RawMessage(`{}`)}, holdNow)
			return err
		},
		"Next":   func() error { _, err := s.Next(ctx, "g", 1); return err },
		"Count":  func() error { _, err := s.Count(ctx, "g"); return err },
		"Remove": func() error { return s.Remove(ctx, "g", "1") },
		"Update": func() error { _, err := s.Update(ctx, h, holdNow); return err },
		"End":    func() error { return s.End(ctx, h) },
		"List":   func() error { _, err := s.List(ctx); return err },
	} {
		if err := call(); !errors.Is(err, cause) || !strings.Contains(err.Error(), "idem") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// A stored item that does not decode is an error naming the table, not a
// hold of zero values.
func TestHoldsRefusesAnItemThatDoesNotDecode(t *testing.T) {
	bad := storedHold("g", 1)
	bad["since"] = &types.AttributeValueMemberS{Value: "yesterday"}
	api := &fakeHoldAPI{batchGet: func(*dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		return &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{"idem": {bad}}}, nil
	}}
	if _, err := newTestHoldStore(api, nil).Holds(context.Background(), []string{"g"}); err == nil || !strings.Contains(err.Error(), "idem") {
		t.Fatalf("err = %v", err)
	}
}

// A hold's first version leaves room for 2^62 writes before an int64
// overflows.
func TestRandomVersionLeavesRoom(t *testing.T) {
	seen := map[int64]bool{}
	for range 1000 {
		v := randomVersion()
		if v < 1 || v >= maxFirstVersion {
			t.Fatalf("version %d out of [1, 2^62)", v)
		}
		seen[v] = true
	}
	if len(seen) < 990 {
		t.Fatalf("%d distinct versions in 1000 draws", len(seen))
	}
}

// heldJSON is r as a hold keeps it (package record).
func heldJSON(r events.SQSMessage) json.RawMessage {
	m, err := holdrecord.Held(r)
	if err != nil {
		panic(err)
	}
	return m.Record
}
