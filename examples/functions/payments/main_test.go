package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/invalid"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/posting"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var fixedNow = time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC)

type fakeSQS struct {
	mu   sync.Mutex
	sent []*sqs.SendMessageInput
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, in)
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprintf("invalid-%d", len(f.sent)))}, nil
}

// golden is what one events file does, delivered twice: the responses, what
// reached the invalid queue, and the ledger's entries.
type golden struct {
	First   json.RawMessage     `json:"first"`
	Again   json.RawMessage     `json:"again"`
	Invalid []invalidMessage    `json:"invalid"`
	Entries map[string][]string `json:"entries"`
	Frozen  []string            `json:"frozen,omitempty"`
}

type invalidMessage struct {
	MessageID string `json:"messageId"`
	Group     string `json:"group"`
	Reason    string `json:"reason"`
	Detail    string `json:"detail"`
	// DedupID is the FIFO deduplication id: the same for both deliveries,
	// so SQS stores the message once.
	DedupID string `json:"dedupId"`
}

// TestGolden feeds every events/*.json through lambda.NewHandler(...).Invoke
// twice, with accounts named FROZEN-* frozen: the second delivery must post
// nothing new (exactly once), and the outcome must match testdata/.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("../../events/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no events: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			payload, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var ev events.SQSEvent
			if err := json.Unmarshal(payload, &ev); err != nil {
				t.Fatal(err)
			}
			got := deliverTwice(t, payload, ev)
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			path := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(path, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("%s differs from %s:\n%s", name, path, out)
			}
		})
	}
}

func deliverTwice(t *testing.T, payload []byte, ev events.SQSEvent) golden {
	t.Helper()
	cfg, err := posting.LoadConfig(func(key string) string {
		return map[string]string{
			"INVALID_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/payments-invalid.fifo",
			"IDEMPOTENCY_TABLE": "idempotency", "ENTRIES_TABLE": "entries", "CONCURRENCY": "4",
		}[key]
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		queue   = &fakeSQS{}
		book    = &ledger.Memory{}
		g       = golden{Entries: map[string][]string{}}
		ctx     = context.Background()
		account = map[string]bool{}
	)
	for _, r := range ev.Records {
		account[r.Attributes["MessageGroupId"]] = true
	}
	for a := range account {
		if strings.HasPrefix(a, "FROZEN-") {
			g.Frozen = append(g.Frozen, a)
			if err := book.Freeze(ctx, a, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(g.Frozen)
	p := posting.NewProcessor(cfg, posting.Deps{Sender: queue, Store: idempotency.NewMemoryStore(), Ledger: book,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return fixedNow }})
	h := lambda.NewHandler(p.Process)
	if g.First, err = h.Invoke(ctx, payload); err != nil {
		t.Fatal(err)
	}
	if g.Again, err = h.Invoke(ctx, payload); err != nil {
		t.Fatal(err)
	}
	for _, in := range queue.sent {
		meta, _, found, err := invalid.Read(in.MessageAttributes)
		if err != nil || !found {
			t.Fatalf("invalid message without its verdict: %v", err)
		}
		if meta.At != fixedNow || meta.Consumer != "ledger" {
			t.Errorf("verdict %+v: want at %s by ledger", meta, fixedNow)
		}
		g.Invalid = append(g.Invalid, invalidMessage{MessageID: meta.MessageID, Group: aws.ToString(in.MessageGroupId), Reason: meta.Reason, Detail: meta.Detail,
			DedupID: aws.ToString(in.MessageDeduplicationId)})
	}
	// Groups run concurrently: the order of the sends is not the contract.
	slices.SortStableFunc(g.Invalid, func(a, b invalidMessage) int { return strings.Compare(a.MessageID, b.MessageID) })
	for a := range account {
		entries, err := book.Entries(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			g.Entries[a] = append(g.Entries[a], fmt.Sprintf("%d %s %s %d", e.Seq, e.PaymentID, e.Currency, e.AmountMinor))
		}
	}
	return g
}
