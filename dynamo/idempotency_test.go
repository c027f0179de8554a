package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
)

// fakeAPI answers PutItem with a conditional check failure that carries no
// item, as some DynamoDB implementations do, so the store must read the
// standing record itself.
type fakeAPI struct {
	dynamo.API
	item map[string]types.AttributeValue
	// updateOld is the item a failed UpdateItem's condition check returns.
	updateOld map[string]types.AttributeValue
	putErr    error
	putOld    map[string]types.AttributeValue // the item a successful put replaced
	puts      []*dynamodb.PutItemInput
	getCall   int
}

func (f *fakeAPI) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.puts = append(f.puts, in)
	if f.putErr != nil {
		return nil, f.putErr
	}
	return &dynamodb.PutItemOutput{Attributes: f.putOld}, nil
}

func (f *fakeAPI) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.getCall++
	if in.ConsistentRead == nil || !*in.ConsistentRead {
		return nil, errors.New("want a consistent read")
	}
	return &dynamodb.GetItemOutput{Item: f.item}, nil
}

func (f *fakeAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, &types.ConditionalCheckFailedException{Item: f.updateOld}
}

func (f *fakeAPI) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errors.New("throttled")
}

var lease = idempotency.Lease{Key: "invoice#ORD-1", Token: "t", Now: time.Unix(1_800_000_000, 0), Until: time.Unix(1_800_000_060, 0), ExpiresAt: time.Unix(1_802_000_000, 0)}

func TestClaimReadsTheStandingRecordWhenTheFailureHasNone(t *testing.T) {
	api := &fakeAPI{
		putErr: &types.ConditionalCheckFailedException{},
		item: map[string]types.AttributeValue{
			"pk":          &types.AttributeValueMemberS{Value: "invoice#ORD-1"},
			"status":      &types.AttributeValueMemberS{Value: "COMPLETED"},
			"payloadHash": &types.AttributeValueMemberS{Value: "h"},
			"result":      &types.AttributeValueMemberS{Value: "INV-1"},
			"lockToken":   &types.AttributeValueMemberS{Value: "other"},
			"expiresAt":   &types.AttributeValueMemberN{Value: "1802000000"},
		},
	}
	rec, claimed, err := dynamo.NewIdempotencyStore(api, "idem").Claim(context.Background(), lease)
	if err != nil || claimed || api.getCall != 1 {
		t.Fatalf("claimed=%v err=%v gets=%d", claimed, err, api.getCall)
	}
	if rec.Status != idempotency.Completed || rec.Result != "INV-1" || rec.ExpiresAt.Unix() != 1802000000 {
		t.Fatalf("record = %+v", rec)
	}
}

func TestClaimGivesUpWhenTheRecordKeepsVanishing(t *testing.T) {
	api := &fakeAPI{putErr: &types.ConditionalCheckFailedException{}}
	_, _, err := dynamo.NewIdempotencyStore(api, "idem").Claim(context.Background(), lease)
	if !errors.Is(err, idempotency.ErrInProgress) || api.getCall != 3 {
		t.Fatalf("err = %v after %d reads, want ErrInProgress after 3", err, api.getCall)
	}
}

func TestErrorsNameTheTableAndKeepTheCause(t *testing.T) {
	cause := errors.New("ProvisionedThroughputExceeded")
	s := dynamo.NewIdempotencyStore(&fakeAPI{putErr: cause}, "idem")
	if _, _, err := s.Claim(context.Background(), lease); !errors.Is(err, cause) || !strings.Contains(err.Error(), "idem") {
		t.Fatalf("claim: %v", err)
	}
	if err := s.Complete(context.Background(), lease, "INV"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("complete: %v", err)
	}
	if err := s.Release(context.Background(), lease); err == nil || errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("release: %v, want the transport error, not ErrLeaseLost", err)
	}
}

// A takeover of an expired lock returns the lock it replaced (in doubt), and
// the condition lets only the same payload take it over.
func TestClaimReportsTheLockItTookOver(t *testing.T) {
	old := map[string]types.AttributeValue{
		"pk":            &types.AttributeValueMemberS{Value: "invoice#ORD-1"},
		"status":        &types.AttributeValueMemberS{Value: "IN_PROGRESS"},
		"payloadHash":   &types.AttributeValueMemberS{Value: "h"},
		"lockToken":     &types.AttributeValueMemberS{Value: "dead"},
		"lockExpiresAt": &types.AttributeValueMemberN{Value: "1800000000000"},
		"expiresAt":     &types.AttributeValueMemberN{Value: "1802000000"},
	}
	tests := []struct {
		name    string
		old     map[string]types.AttributeValue
		inDoubt bool
	}{
		{"absent", nil, false},
		{"expired lock", old, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{putOld: tt.old}
			l := lease
			l.PayloadHash = "h"
			prev, claimed, err := dynamo.NewIdempotencyStore(api, "idem").Claim(context.Background(), l)
			if err != nil || !claimed {
				t.Fatalf("claimed=%v err=%v", claimed, err)
			}
			if got := prev.Status == idempotency.InProgress && prev.Token == "dead"; got != tt.inDoubt {
				t.Fatalf("previous = %+v, want in doubt %v", prev, tt.inDoubt)
			}
			in := api.puts[0]
			if in.ReturnValues != types.ReturnValueAllOld {
				t.Fatalf("ReturnValues = %q, want ALL_OLD", in.ReturnValues)
			}
			hashed := false
			for name, v := range in.ExpressionAttributeNames {
				if v == "payloadHash" && strings.Contains(aws.ToString(in.ConditionExpression), name) {
					hashed = true
				}
			}
			if !hashed {
				t.Fatalf("condition %q does not compare the payload hash", aws.ToString(in.ConditionExpression))
			}
		})
	}
}

// A claim that supersedes a void claim of another payload may replace that
// expired lock by its token, and only then: an ordinary claim's condition
// does not look at tokens.
func TestClaimTakesOverAVoidClaimByItsToken(t *testing.T) {
	tests := []struct {
		name       string
		supersedes string
		wantToken  bool
	}{
		{"ordinary claim", "", false},
		{"superseding claim", "dead", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{}
			l := lease
			l.PayloadHash = "h2"
			l.Supersedes = tt.supersedes
			if _, claimed, err := dynamo.NewIdempotencyStore(api, "idem").Claim(context.Background(), l); err != nil || !claimed {
				t.Fatalf("claimed=%v err=%v", claimed, err)
			}
			in := api.puts[0]
			cond := aws.ToString(in.ConditionExpression)
			byToken := false
			for name, v := range in.ExpressionAttributeNames {
				if v == "lockToken" && strings.Contains(cond, name) {
					byToken = true
				}
			}
			valued := false
			for _, v := range in.ExpressionAttributeValues {
				if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == "dead" {
					valued = true
				}
			}
			if byToken != tt.wantToken || valued != tt.wantToken {
				t.Fatalf("condition %q compares the lock token: %v (value %v), want %v", cond, byToken, valued, tt.wantToken)
			}
		})
	}
}

// An SDK retry of a write that was applied, its answer lost (net/http
// closing the connection under load, aws-sdk-go-v2#1825), meets its own
// record: a claim that finds its own token is ours (in doubt: what it
// replaced is lost), a completion that finds its own COMPLETED record is
// done.
func TestRetriedWritesRecogniseTheirOwnRecord(t *testing.T) {
	own := func(status string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"pk":          &types.AttributeValueMemberS{Value: lease.Key},
			"status":      &types.AttributeValueMemberS{Value: status},
			"payloadHash": &types.AttributeValueMemberS{Value: "h"},
			"lockToken":   &types.AttributeValueMemberS{Value: lease.Token},
			"expiresAt":   &types.AttributeValueMemberN{Value: "1802000000"},
		}
	}
	l := lease
	l.PayloadHash = "h"
	api := &fakeAPI{putErr: &types.ConditionalCheckFailedException{Item: own("IN_PROGRESS")}}
	cur, claimed, err := dynamo.NewIdempotencyStore(api, "idem").Claim(context.Background(), l)
	if err != nil || !claimed || cur.Status != idempotency.InProgress || cur.PayloadHash != "h" {
		t.Fatalf("claim = %+v, %v, %v; want ours, in doubt", cur, claimed, err)
	}
	api = &fakeAPI{updateOld: own("COMPLETED")}
	if err := dynamo.NewIdempotencyStore(api, "idem").Complete(context.Background(), l, "INV-1"); err != nil {
		t.Fatalf("complete = %v, want done", err)
	}
	api = &fakeAPI{updateOld: nil}
	if err := dynamo.NewIdempotencyStore(api, "idem").Complete(context.Background(), l, "INV-1"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("complete of a lost lease = %v", err)
	}
}
