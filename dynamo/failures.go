package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/internal/clip"
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/wait"
)

// failuresAPI is the part of API [FailureLog] calls.
type failuresAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// failureWriters bounds the UpdateItems of one RecordFailures call in flight.
const failureWriters = 10

// failureUpdate is the one write of a failure record.
const failureUpdate = "SET #class = :class, #message = :message, #failures = :failures, " +
	"#firstAt = if_not_exists(#firstAt, :firstAt), #lastAt = :lastAt, #expiresAt = :expiresAt"

// FailureLog is a batch.FailureLog on the idempotency table, one item per
// message id of one consumer (docs/CONTRACT.md#failure-records). It is
// safe for concurrent use.
type FailureLog struct {
	api      failuresAPI
	table    string
	consumer string
	now      func() time.Time
	sleep    func(context.Context, time.Duration) error
}

// NewFailureLog returns the failure records of consumer (its
// CONSUMER_NAME) in table.
func NewFailureLog(api API, table, consumer string) *FailureLog {
	return &FailureLog{api: api, table: table, consumer: consumer, now: time.Now, sleep: wait.Sleep}
}

var _ batch.FailureLog = (*FailureLog)(nil)

func (l *FailureLog) key(messageID string) string {
	return settings.FailurePrefix + l.consumer + settings.KeySeparator + messageID
}

// RecordFailures writes each failure with one UpdateItem, ten at a time,
// and returns every write's error joined.
func (l *FailureLog) RecordFailures(ctx context.Context, fs []batch.Failure) error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, failureWriters)
	for i, f := range fs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = l.write(ctx, f)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (l *FailureLog) write(ctx context.Context, f batch.Failure) error {
	k := l.key(f.MessageID)
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	_, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.table), Key: key(k), UpdateExpression: aws.String(failureUpdate),
		ExpressionAttributeNames: map[string]string{"#class": "class", "#message": "message", "#failures": "failures",
			"#firstAt": "firstAt", "#lastAt": "lastAt", "#expiresAt": ttlAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":class":     &types.AttributeValueMemberS{Value: f.Class},
			":message":   &types.AttributeValueMemberS{Value: f.Message},
			":failures":  n(int64(f.Failures)),
			":firstAt":   n(f.FirstAt.UnixMilli()),
			":lastAt":    n(f.LastAt.UnixMilli()),
			":expiresAt": n(f.LastAt.Add(settings.DefaultRecordLifetime).Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("record the failure of %s in %s: %w", k, l.table, err)
	}
	return nil
}

// Failures reads the live failure records of messageIDs with consistent
// BatchGetItems of up to 100 ids, retrying unprocessed ids a few times;
// an id without one is absent from the map. Class and Message are bounded
// again as the consumer bounds them: another runtime may have written them.
func (l *FailureLog) Failures(ctx context.Context, messageIDs []string) (map[string]batch.Failure, error) {
	ids := slices.Compact(slices.Sorted(slices.Values(messageIDs)))
	out := make(map[string]batch.Failure, len(ids))
	now := l.now().Unix()
	byKey := make(map[string]string, len(ids))
	keys := make([]map[string]types.AttributeValue, 0, len(ids))
	for _, id := range ids {
		byKey[l.key(id)] = id
		keys = append(keys, key(l.key(id)))
	}
	err := batchGet(ctx, l.api, l.sleep, l.table, "failure records", keys, types.KeysAndAttributes{}, func(item map[string]types.AttributeValue) error {
		id, ok := byKey[str(item, keyAttribute)]
		if f := failureOf(item, id); ok && num(item, ttlAttribute) > now {
			out[id] = f
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// failureOf decodes a failure record, its strings bounded.
func failureOf(item map[string]types.AttributeValue, id string) batch.Failure {
	class := str(item, "class")
	if !settings.ValidFailureClass(class) {
		class = "other"
	}
	return batch.Failure{
		MessageID: id,
		Class:     class,
		Message:   clip.String(printable.String(clip.String(str(item, "message"), 512)), 512),
		Failures:  int(num(item, "failures")),
		FirstAt:   time.UnixMilli(num(item, "firstAt")).UTC(),
		LastAt:    time.UnixMilli(num(item, "lastAt")).UTC(),
	}
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// Classes returns the failure class of each id among messageIDs that has a
// record, as Failures reads them: replay.Options.Failures.
func (l *FailureLog) Classes(ctx context.Context, messageIDs []string) (map[string]string, error) {
	recs, err := l.Failures(ctx, messageIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(recs))
	for id, f := range recs {
		out[id] = f.Class
	}
	return out, nil
}
