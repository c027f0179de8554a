package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/consumer"
)

// BenchmarkProcessBatch measures one invocation of the consumer on a batch of
// 10 records, from the JSON payload to the JSON response, with in-memory
// fakes for SQS, DynamoDB and the tax service (so it measures our code only).
//
//	valid:      10 new orders, each invoiced
//	mixed:      events/batch-mixed.json (3 valid, 7 invalid to the invalid queue)
//	duplicates: 10 orders invoiced before (all absorbed by the idempotency store)
//	failed-records-off, failed-records-on: 10 orders the tax service refuses
//	    (503), at their last delivery before the redrive (receive count 3 of
//	    MAX_RECEIVE_COUNT 3), without and with failure records (through
//	    dynamo.FailureLog on a fake UpdateItem); writes/failed-msg counts the
//	    UpdateItems per failed message
func BenchmarkProcessBatch(b *testing.B) {
	sample, err := os.ReadFile("../../../events/order-valid.json")
	if err != nil {
		b.Fatal(err)
	}
	var one events.SQSEvent
	if err := json.Unmarshal(sample, &one); err != nil {
		b.Fatal(err)
	}
	// 1000 distinct batches of 10 new orders; the store is renewed after
	// each round so every order is new.
	const rounds = 1000
	batches := make([][]byte, rounds)
	for i := range batches {
		var ev events.SQSEvent
		for j := range 10 {
			r := one.Records[0]
			r.MessageId = fmt.Sprintf("m-%d-%d", i, j)
			r.Body = fmt.Sprintf(`{"eventType":"order.created","version":1,"orderId":"ORD-B-%d-%d","createdAt":"2026-11-29T10:00:00Z","customer":{"name":"Ana Souza","taxId":"123.456.789-09","email":"ana@example.com"},"items":[{"sku":"SKU-1","quantity":2,"unitPrice":"49.90"}],"total":"99.80","currency":"BRL"}`, i, j)
			ev.Records = append(ev.Records, r)
		}
		batches[i], _ = json.Marshal(ev)
	}
	mixed, err := os.ReadFile("../../../events/batch-mixed.json")
	if err != nil {
		b.Fatal(err)
	}

	newHandler := func() lambda.Handler {
		cfg, err := consumer.LoadConfig(func(k string) string {
			return map[string]string{"INVALID_QUEUE_URL": "q", "IDEMPOTENCY_TABLE": "t", "TAX_SERVICE_URL": "http://127.0.0.1:1"}[k]
		})
		if err != nil {
			b.Fatal(err)
		}
		p := consumer.New(cfg, consumer.Deps{Sender: &fakeSQS{}, Store: idempotency.NewMemoryStore(), Invoicer: &fakeTax{},
			Logger: slog.New(slog.DiscardHandler), Now: time.Now})
		return lambda.NewHandler(p)
	}
	invoke := func(b *testing.B, h lambda.Handler, payload []byte) {
		if _, err := h.Invoke(context.Background(), payload); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		h, i := newHandler(), 0
		for b.Loop() {
			if i == rounds {
				b.StopTimer()
				h, i = newHandler(), 0
				b.StartTimer()
			}
			invoke(b, h, batches[i])
			i++
		}
	})
	b.Run("mixed", func(b *testing.B) {
		b.ReportAllocs()
		h := newHandler()
		for b.Loop() {
			invoke(b, h, mixed)
		}
	})
	var failed events.SQSEvent
	for j := range 10 {
		r := one.Records[0]
		r.MessageId = fmt.Sprintf("f-%d", j)
		r.Attributes = map[string]string{"ApproximateReceiveCount": "3", "ApproximateFirstReceiveTimestamp": "1800000000000"}
		r.Body = fmt.Sprintf(`{"eventType":"order.created","version":1,"orderId":"ORD-F-%d-DOWN","createdAt":"2026-11-29T10:00:00Z","customer":{"name":"Ana Souza","taxId":"123.456.789-09","email":"ana@example.com"},"items":[{"sku":"SKU-1","quantity":2,"unitPrice":"49.90"}],"total":"99.80","currency":"BRL"}`, j)
		failed.Records = append(failed.Records, r)
	}
	failedBatch, _ := json.Marshal(failed)
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "failed-records-off", true: "failed-records-on"}[on]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cfg, err := consumer.LoadConfig(func(k string) string {
				return map[string]string{"INVALID_QUEUE_URL": "q", "IDEMPOTENCY_TABLE": "t", "TAX_SERVICE_URL": "http://127.0.0.1:1", "MAX_RECEIVE_COUNT": "3"}[k]
			})
			if err != nil {
				b.Fatal(err)
			}
			db := &countingUpdates{}
			d := consumer.Deps{Sender: &fakeSQS{}, Store: idempotency.NewMemoryStore(), Invoicer: &fakeTax{}, Logger: slog.New(slog.DiscardHandler), Now: time.Now}
			if on {
				d.Failures = dynamo.NewFailureLog(db, cfg.IdempotencyTable, cfg.ConsumerName)
			}
			h := lambda.NewHandler(consumer.New(cfg, d))
			for b.Loop() {
				invoke(b, h, failedBatch)
			}
			b.ReportMetric(float64(db.n.Load())/float64(b.N*len(failed.Records)), "writes/failed-msg")
		})
	}
	b.Run("duplicates", func(b *testing.B) {
		b.ReportAllocs()
		h := newHandler()
		invoke(b, h, batches[0])
		for b.Loop() {
			invoke(b, h, batches[0])
		}
	})
}

// countingUpdates is DynamoDB's UpdateItem, counted and answered at once.
type countingUpdates struct {
	dynamo.API
	n atomic.Int64
}

func (c *countingUpdates) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.n.Add(1)
	return &dynamodb.UpdateItemOutput{}, nil
}
