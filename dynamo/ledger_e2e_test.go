//go:build e2e

package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/record/ledgertest"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// The contracts run on every DynamoDB implementation (emulatortest.Endpoints:
// ministack and moto; LocalStack's host mode has no DynamoDB). In what the
// ledger and the completions use of DynamoDB (conditional writes returning
// ALL_OLD, consistent Query and BatchGetItem with its limits) one gap shows:
// moto's server does not serialise concurrent conditional writes to one
// item (seen: two of eight concurrent INTENT marks both passed their
// condition, in a make test under load), so the concurrency subtests are
// skipped there (serialisesConditionalWrites).
func TestLedgerContract(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.DynamoDB, func(t *testing.T, e emulatortest.Endpoint) {
		db := dynamodb.NewFromConfig(e.Config)
		ledgertest.Run(t, ledgertest.Harness{
			NewLedger: func(t *testing.T, now func() time.Time) replay.Ledger {
				return dynamo.NewLedger(db, emulatortest.LedgerTable(t, db), now)
			},
			Features: ledgertest.Features{ConcurrentMarks: serialisesConditionalWrites(e.Name)},
		})
	})
}

// serialisesConditionalWrites tells whether the DynamoDB implementation of
// that name serialises concurrent conditional writes to one item, as
// DynamoDB does: every one but moto's server.
func serialisesConditionalWrites(name string) bool { return name != "moto" }

func TestCompletionsContract(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.DynamoDB, func(t *testing.T, e emulatortest.Endpoint) {
		db := dynamodb.NewFromConfig(e.Config)
		replaytest.RunCompletions(t, replaytest.CompletionsHarness{NewPair: func(t *testing.T) (idempotency.Store, replay.Completions) {
			table := emulatortest.IdempotencyTable(t, db)
			return dynamo.NewIdempotencyStore(db, table), dynamo.NewCompletions(db, table, replaytest.CompletionsScope, nil)
		}})
	})
}

// Ledger items carry the TTL attribute in epoch seconds, so DynamoDB can
// clean them up, while the ledger itself never relies on the deletion.
func TestLedgerWritesTheTTLAttribute(t *testing.T) {
	db := dynamodb.NewFromConfig(emulatortest.Config(t))
	table := emulatortest.LedgerTable(t, db)
	now := time.Now()
	r := record.Message{HistoryKey: "order#ORD-TTL", MessageID: "m-1", State: record.Seen, Route: "orders", OriginalMessageID: "m-1",
		RunID: "run", FirstSeenAt: now, At: now, ExpiresAt: now.Add(settings.DefaultRecordLifetime)}
	if _, ok, err := dynamo.NewLedger(db, table, nil).Mark(context.Background(), r); err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		settings.PartitionKeyAttribute: &types.AttributeValueMemberS{Value: "order#ORD-TTL"}, settings.SortKeyAttribute: &types.AttributeValueMemberS{Value: "message#m-1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := out.Item[settings.TTLAttribute].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item has no numeric %s: %v", settings.TTLAttribute, out.Item)
	}
	if secs, _ := strconv.ParseInt(n.Value, 10, 64); secs != r.ExpiresAt.Unix() {
		t.Fatalf("%s = %d, want %d", settings.TTLAttribute, secs, r.ExpiresAt.Unix())
	}
}

// The seal's public key is written beside the seal key, under its own
// partition (the one an operator may read), and read back by a Verifier,
// which verifies what the key seals.
func TestSealPublicKeyOnTheLedger(t *testing.T) {
	ctx := context.Background()
	db := dynamodb.NewFromConfig(emulatortest.Config(t))
	table := emulatortest.LedgerTable(t, db)
	ledger := dynamo.NewLedger(db, table, nil)
	key, err := replay.SealKey(ctx, ledger, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		settings.PartitionKeyAttribute: &types.AttributeValueMemberS{Value: settings.SealPublicKeyPartition}, settings.SortKeyAttribute: &types.AttributeValueMemberS{Value: "message#v2"},
	}})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("no public key item: %v, %v", out, err)
	}
	route := replay.Route{DLQURL: "http://127.0.0.1/000000000000/orders-dlq", SourceURL: "http://127.0.0.1/000000000000/orders"}
	v, err := replay.NewVerifier(ctx, ledger, route)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"orderId":"ORD-SEAL"}`
	for _, tc := range []struct {
		name string
		key  []byte
		want bool
	}{{"the lane's key", key, true}, {"another key", make([]byte, 32), false}} {
		attrs, err := replay.Attributes(nil, replay.Metadata{ReplayCount: 1, OriginalMessageID: "m-1"}.Sealed(tc.key, body, route.SourceURL))
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := v.Check(sqstypes.Message{MessageId: aws.String("m-2"), Body: aws.String(body), MessageAttributes: attrs}); ok != tc.want {
			t.Errorf("%s: verified %v, want %v", tc.name, ok, tc.want)
		}
	}
}
