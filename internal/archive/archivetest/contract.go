package archivetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/suite"
)

// StoreHarness is what [RunStore] runs the contract on: an S3 and a new,
// empty bucket per test.
type StoreHarness struct {
	S3        archive.S3
	NewBucket func(t *testing.T) string
}

// StoreTests is the contract, one rule a function.
var StoreTests = []func(*testing.T, StoreHarness){
	testPutThenGet,
	testGetMissing,
	testGetThroughTheIndex,
	testPutAgainKeepsOneKey,
	testLargestMessage,
	testListInKeyOrderAcrossPages,
	testListStopsWhenTold,
}

// RunStore runs the contract on h, one subtest a rule.
func RunStore(t *testing.T, h StoreHarness) { suite.Run(t, h, StoreTests) }

// sample is an object of every field, as a parked message would be.
func sample(id string) archive.Object {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	return archive.Object{
		Version:   archive.Version,
		Lane:      "orders",
		Queue:     archive.Parking,
		QueueURL:  "https://sqs.us-east-1.amazonaws.com/000000000000/orders-parking",
		MessageID: id,
		Key:       "order/42 é",
		Body:      `{"orderId":"order/42 é","n":1}`,
		Attributes: map[string]archive.Attribute{
			"source": {DataType: "String", StringValue: aws.String("checkout")},
			"blob":   {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 255}},
		},
		System:     map[string]string{"SentTimestamp": "1796205600000", "ApproximateReceiveCount": "1"},
		Reason:     "replay-exhausted",
		Failure:    &archive.Failure{Class: "tax-service-503", Message: "unavailable", Failures: 3, FirstAt: at, LastAt: at},
		SentAt:     at.Add(-time.Hour),
		ArchivedAt: at,
	}
}

func testPutThenGet(t *testing.T, h StoreHarness) {
	s := archive.NewStore(h.S3, h.NewBucket(t))
	o := sample("m-1")
	key, err := s.Put(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if key != archive.ObjectKey(o) {
		t.Fatalf("key %q, want %q", key, archive.ObjectKey(o))
	}
	got, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, o) {
		t.Fatalf("got  %+v\nwant %+v", got, o)
	}
}

func testGetMissing(t *testing.T, h StoreHarness) {
	s := archive.NewStore(h.S3, h.NewBucket(t))
	_, err := s.Get(context.Background(), "orders/parking/2026/12/03/none.json")
	if !errors.Is(err, archive.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func testGetThroughTheIndex(t *testing.T, h StoreHarness) {
	s := archive.NewStore(h.S3, h.NewBucket(t))
	o := sample("m-2")
	if _, err := s.Put(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var found []string
	if err := s.List(context.Background(), archive.KeyPrefix(o.Lane, o.Key), func(k string) bool { found = append(found, k); return true }); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0] != archive.IndexKey(o) {
		t.Fatalf("by key: %q, want [%q]", found, archive.IndexKey(o))
	}
	got, err := s.Get(context.Background(), found[0])
	if err != nil || got.MessageID != o.MessageID {
		t.Fatalf("through the index: %v, %v", got.MessageID, err)
	}
}

func testPutAgainKeepsOneKey(t *testing.T, h StoreHarness) {
	s := archive.NewStore(h.S3, h.NewBucket(t))
	o := sample("m-3")
	if _, err := s.Put(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	o.ArchivedAt = o.ArchivedAt.Add(time.Minute)
	if _, err := s.Put(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := s.List(context.Background(), archive.DayPrefix(o.Lane, o.Queue, time.Time{}), func(k string) bool { keys = append(keys, k); return true }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("keys %q, want one", keys)
	}
	got, err := s.Get(context.Background(), keys[0])
	if err != nil || !got.ArchivedAt.Equal(o.ArchivedAt) {
		t.Fatalf("archived at %v (%v), want the second write's %v", got.ArchivedAt, err, o.ArchivedAt)
	}
}

func testLargestMessage(t *testing.T, h StoreHarness) {
	s := archive.NewStore(h.S3, h.NewBucket(t))
	o := sample("m-4")
	o.Body = strings.Repeat(`"<é>\`, (1<<20)/6) // escapes grow it in JSON
	key, err := s.Put(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(context.Background(), key)
	if err != nil || got.Body != o.Body {
		t.Fatalf("body of %d bytes came back as %d (%v)", len(o.Body), len(got.Body), err)
	}
}

// putRaw writes n empty objects under prefix, 16 at a time.
func putRaw(t *testing.T, h StoreHarness, bucket, prefix string, n int) []string {
	t.Helper()
	keys := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%05d.json", prefix, i)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, err := h.S3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(keys[i]), Body: bytes.NewReader(nil)})
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return keys
}

func testListInKeyOrderAcrossPages(t *testing.T, h StoreHarness) {
	bucket := h.NewBucket(t)
	want := putRaw(t, h, bucket, "orders/invalid/2026/12/03/", 1001)
	putRaw(t, h, bucket, "orders/parking/2026/12/03/", 2)
	var got []string
	s := archive.NewStore(h.S3, bucket)
	if err := s.List(context.Background(), archive.DayPrefix("orders", archive.Invalid, time.Time{}), func(k string) bool { got = append(got, k); return true }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("listed %d keys (first %q), want the %d under the prefix in order", len(got), got[:min(3, len(got))], len(want))
	}
}

func testListStopsWhenTold(t *testing.T, h StoreHarness) {
	bucket := h.NewBucket(t)
	keys := putRaw(t, h, bucket, "orders/parking/2026/12/03/", 5)
	var got []string
	s := archive.NewStore(h.S3, bucket)
	err := s.List(context.Background(), "orders/parking/", func(k string) bool { got = append(got, k); return len(got) < 2 })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, keys[:2]) {
		t.Fatalf("stopping at two: %q, want %q", got, keys[:2])
	}
}
