//go:build e2e

package dynamo_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/fifo/fifotest"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

// The parks' contract runs on every DynamoDB implementation, each test on
// a ledger table of its own (the parks' partition is fixed).
func TestGroupStoreContract(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.DynamoDB, func(t *testing.T, e emulatortest.Endpoint) {
		db := dynamodb.NewFromConfig(e.Config)
		fifotest.Tests(t, func(t *testing.T) fifo.Store { return dynamo.NewGroupStore(db, emulatortest.LedgerTable(t, db)) })
	})
}

// Of eight Parks racing for one group one parks it and every one returns
// that park, and counts racing each other all count. Skipped on moto, whose
// server does not serialise conditional writes (serialisesConditionalWrites).
func TestGroupStoreConcurrentWrites(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.DynamoDB, func(t *testing.T, e emulatortest.Endpoint) {
		if !serialisesConditionalWrites(e.Name) {
			t.Skipf("%s does not serialise conditional writes", e.Name)
		}
		db := dynamodb.NewFromConfig(e.Config)
		s := dynamo.NewGroupStore(db, emulatortest.LedgerTable(t, db))
		ctx := context.Background()
		got := make([]fifo.Park, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				var err error
				if got[i], err = s.Park(ctx, fifo.Park{Group: "g", Head: string(rune('a' + i)), Queue: "parking"}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for i, p := range got {
			if p.Head != got[0].Head {
				t.Errorf("Park %d returned head %q, Park 0 %q", i, p.Head, got[0].Head)
			}
		}
		for range 10 {
			wg.Go(func() {
				if err := s.Count(ctx, "g", fifo.Count{Parked: 1}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		parks, err := s.Parked(ctx, []string{"g"})
		if err != nil {
			t.Fatal(err)
		}
		if p := parks["g"]; p.Head != got[0].Head || p.Parked != 10 {
			t.Fatalf("park after the races: %+v", p)
		}
	})
}

// A park is stored under the ledger's key schema, partition
// settings.GroupsPartition and the group as sort key, with no TTL
// attribute: DynamoDB never deletes it, however long the group stays
// parked.
func TestGroupStoreWritesNoTTLAttribute(t *testing.T) {
	db := dynamodb.NewFromConfig(emulatortest.Config(t))
	table := emulatortest.LedgerTable(t, db)
	s := dynamo.NewGroupStore(db, table)
	ctx := context.Background()
	if _, err := s.Park(ctx, fifo.Park{Group: "acct-7", Head: "m-1", Queue: "invalid"}); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		settings.PartitionKeyAttribute: &types.AttributeValueMemberS{Value: settings.GroupsPartition}, settings.SortKeyAttribute: &types.AttributeValueMemberS{Value: "acct-7"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		t.Fatalf("no item at %s / acct-7", settings.GroupsPartition)
	}
	if _, ok := out.Item[settings.TTLAttribute]; ok {
		t.Errorf("the park carries %s", settings.TTLAttribute)
	}
}
