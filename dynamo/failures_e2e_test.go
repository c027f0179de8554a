//go:build e2e

package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

// On each emulator: a failure record is one item beside the idempotency
// records of the same consumer, its first failure kept and its count set
// by each write, read back with a batch of ids (150: two BatchGetItems).
func TestFailureLogOnTheEmulator(t *testing.T) {
	emulatortest.OnEachEndpoint(t, emulatortest.DynamoDB, func(t *testing.T, e emulatortest.Endpoint) {
		ctx := context.Background()
		db := dynamodb.NewFromConfig(e.Config)
		table := emulatortest.IdempotencyTable(t, db)
		r := &idempotency.Receiver{Store: dynamo.NewIdempotencyStore(db, table), Scope: "invoice"}
		if _, err := r.Do(ctx, "m-1", "h", func(context.Context) (string, error) { return "INV-1", nil }); err != nil {
			t.Fatal(err)
		}
		log := dynamo.NewFailureLog(db, table, "invoice")
		first := time.UnixMilli(1_800_000_000_000).UTC()
		last := time.Now().UTC().Truncate(time.Millisecond)
		var fs []batch.Failure
		for i := range 150 {
			fs = append(fs, batch.Failure{MessageID: "m-" + strconv.Itoa(i), Class: "http-503", Message: "answered 503", Failures: 1, FirstAt: first, LastAt: last})
		}
		if err := log.RecordFailures(ctx, fs); err != nil {
			t.Fatal(err)
		}
		again := batch.Failure{MessageID: "m-1", Class: "tax-service-503", Message: "tax service answered 503", Failures: 5000, FirstAt: last, LastAt: last}
		if err := log.RecordFailures(ctx, []batch.Failure{again}); err != nil {
			t.Fatal(err)
		}
		ids := make([]string, 0, 151)
		for i := range 151 {
			ids = append(ids, "m-"+strconv.Itoa(i))
		}
		got, err := log.Failures(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		want := batch.Failure{MessageID: "m-1", Class: "tax-service-503", Message: "tax service answered 503", Failures: 5000, FirstAt: first, LastAt: last}
		if len(got) != 150 || got["m-1"] != want {
			t.Fatalf("read %d records, m-1 %+v, want 150 and %+v", len(got), got["m-1"], want)
		}
		// The completion record of key m-1 is untouched.
		if rec, found, err := dynamo.NewIdempotencyStore(db, table).Get(ctx, idempotency.Key("invoice", "m-1")); err != nil || !found || rec.Result != "INV-1" {
			t.Fatalf("completion record %+v, %v, %v", rec, found, err)
		}
	})
}
