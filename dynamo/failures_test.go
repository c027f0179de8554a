package dynamo_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/settings"
)

// failureTable is a table in memory that applies the failure log's one
// update (SET, firstAt if it does not exist) and answers BatchGetItem,
// leaving the first key of the first call unprocessed.
type failureTable struct {
	dynamo.API
	mu      sync.Mutex
	items   map[string]map[string]types.AttributeValue
	updates int
	gets    int
}

func (f *failureTable) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates++
	pk := in.Key["pk"].(*types.AttributeValueMemberS).Value
	item := f.items[pk]
	if item == nil {
		item = map[string]types.AttributeValue{"pk": in.Key["pk"]}
		f.items[pk] = item
	}
	for placeholder, name := range in.ExpressionAttributeNames {
		v := in.ExpressionAttributeValues[":"+strings.TrimPrefix(placeholder, "#")]
		if _, ok := item[name]; ok && strings.Contains(*in.UpdateExpression, "if_not_exists("+placeholder) {
			continue
		}
		item[name] = v
	}
	return &dynamodb.UpdateItemOutput{}, nil
}

func (f *failureTable) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for table, ka := range in.RequestItems {
		keys := ka.Keys
		if f.gets == 1 && len(keys) > 1 {
			out.UnprocessedKeys = map[string]types.KeysAndAttributes{table: {Keys: keys[:1]}}
			keys = keys[1:]
		}
		for _, k := range keys {
			if item, ok := f.items[k["pk"].(*types.AttributeValueMemberS).Value]; ok {
				out.Responses[table] = append(out.Responses[table], item)
			}
		}
	}
	return out, nil
}

// A message's failure record is one item under its own key, its first
// failure kept by a later write, read back for a batch of ids.
func TestFailureLogRecordsAndReads(t *testing.T) {
	ctx := context.Background()
	table := &failureTable{items: map[string]map[string]types.AttributeValue{}}
	log := dynamo.NewFailureLog(table, "idem", "invoice")
	first := time.UnixMilli(1_800_000_000_000).UTC()
	last := time.Now().UTC().Truncate(time.Millisecond)
	for i, count := range []int{1, 3} {
		err := log.RecordFailures(ctx, []batch.Failure{
			{MessageID: "m-1", Class: "tax-service-503", Message: "tax service answered 503", Failures: count, FirstAt: first.Add(time.Duration(i) * time.Minute), LastAt: last},
			{MessageID: "m-2", Class: "timeout", Failures: count, FirstAt: first, LastAt: last},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(table.items) != 2 || table.items["#failure#invoice#m-1"] == nil {
		t.Fatalf("items: %v", table.items)
	}
	// Another runtime's record, over the bounds.
	table.items["#failure#invoice#m-3"] = map[string]types.AttributeValue{
		"pk":        &types.AttributeValueMemberS{Value: "#failure#invoice#m-3"},
		"class":     &types.AttributeValueMemberS{Value: "Not A Class\x1b[31m"},
		"message":   &types.AttributeValueMemberS{Value: strings.Repeat("\x1b", 1<<20)},
		"failures":  &types.AttributeValueMemberN{Value: "7"},
		"expiresAt": &types.AttributeValueMemberN{Value: "9999999999"},
	}
	got, err := log.Failures(ctx, []string{"m-1", "m-2", "m-3", "m-4", "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := batch.Failure{MessageID: "m-1", Class: "tax-service-503", Message: "tax service answered 503", Failures: 3, FirstAt: first, LastAt: last}
	if len(got) != 3 || got["m-1"] != want || got["m-2"].Class != "timeout" {
		t.Fatalf("read %+v, want m-1 %+v", got, want)
	}
	if m3 := got["m-3"]; m3.Class != "other" || len(m3.Message) > 515 || strings.Contains(m3.Message, "\x1b") || m3.Failures != 7 {
		t.Fatalf("another runtime's record read as %q, %d bytes of message", m3.Class, len(m3.Message))
	}
	if table.gets != 2 {
		t.Fatalf("%d BatchGetItem calls, want 2 (one retry of the unprocessed key)", table.gets)
	}
	classes, err := log.Classes(ctx, []string{"m-1", "m-3", "m-4"})
	if err != nil || len(classes) != 2 || classes["m-1"] != "tax-service-503" || classes["m-3"] != "other" {
		t.Fatalf("Classes = %v, %v; want m-1's and m-3's (bounded), none for m-4", classes, err)
	}
}

// An expired record is read as absent.
func TestFailureLogSkipsExpired(t *testing.T) {
	table := &failureTable{items: map[string]map[string]types.AttributeValue{"#failure#invoice#m-1": {
		"pk": &types.AttributeValueMemberS{Value: "#failure#invoice#m-1"}, "class": &types.AttributeValueMemberS{Value: "timeout"},
		"expiresAt": &types.AttributeValueMemberN{Value: "1"}}}}
	got, err := dynamo.NewFailureLog(table, "idem", "invoice").Failures(context.Background(), []string{"m-1"})
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v: want no live record", got, err)
	}
}

// TestContractDocFailureRecords holds docs/CONTRACT.md's table of the
// failure record to the item FailureLog writes: the same attributes, the
// same key, the same bounds.
func TestContractDocFailureRecords(t *testing.T) {
	doc, err := os.ReadFile("../docs/CONTRACT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## Failure records\n")
	if !ok {
		t.Fatal("docs/CONTRACT.md has no section Failure records")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var listed []string
	for line := range strings.Lines(sec) {
		if m := regexp.MustCompile("^\\| `([a-zA-Z]+)` \\|").FindStringSubmatch(line); m != nil {
			listed = append(listed, m[1])
		}
	}
	table := &failureTable{items: map[string]map[string]types.AttributeValue{}}
	now := time.Now()
	if err := dynamo.NewFailureLog(table, "idem", "invoice").RecordFailures(context.Background(), []batch.Failure{
		{MessageID: "m-1", Class: "timeout", Message: "m", Failures: 1, FirstAt: now, LastAt: now}}); err != nil {
		t.Fatal(err)
	}
	var written []string
	for name := range table.items["#failure#invoice#m-1"] {
		written = append(written, name)
	}
	slices.Sort(listed)
	slices.Sort(written)
	if !slices.Equal(listed, written) {
		t.Errorf("the doc lists %v, the log writes %v", listed, written)
	}
	for _, want := range []string{"`" + settings.FailurePrefix + "<CONSUMER_NAME>#<message id>`", "1..64 bytes of `[a-z0-9-]`", "cut to 512 bytes", "at most 515 bytes", "30 days (720 h"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the section does not say %q", want)
		}
	}
	if settings.DefaultRecordLifetime != 720*time.Hour {
		t.Errorf("the record lifetime is %v, the doc says 720 h", settings.DefaultRecordLifetime)
	}
}
