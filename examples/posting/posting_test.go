package posting_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/idempotency"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/payment"
	"github.com/homingdlq/homing/examples/posting"
)

const fifoARN = "arn:aws:sqs:us-east-1:000000000000:payments.fifo"

func record(body, group string) events.SQSMessage {
	return events.SQSMessage{MessageId: "m-" + group, Body: body, EventSourceARN: fifoARN,
		Attributes: map[string]string{"MessageGroupId": group}}
}

func body(id, account, amount string) string {
	return `{"eventType":"payment.captured","version":1,"paymentId":"` + id + `","accountId":"` + account +
		`","capturedAt":"2026-11-29T10:00:00Z","amount":"` + amount + `","currency":"EUR"}`
}

// lossy applies the append and then loses the answer, as a timeout after
// the request was sent does: the error says nothing about whether it applied.
type lossy struct {
	ledger.Ledger
	lose int // how many answers to lose
}

func (l *lossy) Append(ctx context.Context, p ledger.Posting) (ledger.Entry, error) {
	e, err := l.Ledger.Append(ctx, p)
	if err == nil && l.lose > 0 {
		l.lose--
		return ledger.Entry{}, errors.New("read tcp: i/o timeout")
	}
	return e, err
}

func newHandler(l ledger.Ledger) *posting.Handler {
	return &posting.Handler{Receiver: &idempotency.Receiver{Store: idempotency.NewMemoryStore(), Scope: "ledger"}, Ledger: l}
}

func TestHandle(t *testing.T) {
	ctx := context.Background()
	book := &ledger.Memory{}
	h := newHandler(book)
	if err := h.Handle(ctx, record(body("P1", "A", "1.00"), "A")); err != nil {
		t.Fatal(err)
	}
	// The same payment again (a redelivery, a replay): nothing new.
	if err := h.Handle(ctx, record(body("P1", "A", "1.00"), "A")); err != nil {
		t.Fatal(err)
	}
	// Another content under the same paymentId: invalid, for good.
	var inv *payment.InvalidError
	if err := h.Handle(ctx, record(body("P1", "A", "2.00"), "A")); !errors.As(err, &inv) || inv.Reason != payment.ReasonConflictingDuplicate {
		t.Fatalf("conflicting duplicate: %v", err)
	}
	// Invalid messages are rejected before anything is claimed.
	if err := h.Handle(ctx, record(body("P2", "A", "1.00"), "B")); !errors.As(err, &inv) || inv.Reason != payment.ReasonGroupNotAccount {
		t.Fatalf("group mismatch: %v", err)
	}
	// On a standard queue there is no group to compare.
	std := record(body("P3", "A", "3.00"), "")
	std.EventSourceARN = "arn:aws:sqs:us-east-1:000000000000:payments"
	if err := h.Handle(ctx, std); err != nil {
		t.Fatal(err)
	}
	entries, _ := book.Entries(ctx, "A")
	if len(entries) != 2 || entries[0].PaymentID != "P1" || entries[1].PaymentID != "P3" {
		t.Fatalf("entries = %+v", entries)
	}
}

func TestFrozenAccountIsTransient(t *testing.T) {
	ctx := context.Background()
	book := &ledger.Memory{}
	_ = book.Freeze(ctx, "A", true)
	h := newHandler(book)
	err := h.Handle(ctx, record(body("P1", "A", "1.00"), "A"))
	var inv interface{ Invalid() (string, string) }
	if !errors.Is(err, ledger.ErrFrozen) || errors.As(err, &inv) {
		t.Fatalf("Handle on a frozen account = %v, want a transient ErrFrozen", err)
	}
	// The claim was released: once thawed, the redelivery posts it.
	_ = book.Freeze(ctx, "A", false)
	if err := h.Handle(ctx, record(body("P1", "A", "1.00"), "A")); err != nil {
		t.Fatalf("after the thaw: %v", err)
	}
	if entries, _ := book.Entries(ctx, "A"); len(entries) != 1 {
		t.Fatalf("entries = %+v", entries)
	}
}

// An append whose answer was lost is resolved by looking the payment up:
// the handler succeeds and the entry exists once.
func TestLostAnswerIsResolvedByLookup(t *testing.T) {
	ctx := context.Background()
	book := &ledger.Memory{}
	h := newHandler(&lossy{Ledger: book, lose: 1})
	if err := h.Handle(ctx, record(body("P1", "A", "1.00"), "A")); err != nil {
		t.Fatalf("Handle = %v, want the doubt resolved as applied", err)
	}
	if err := h.Handle(ctx, record(body("P1", "A", "1.00"), "A")); err != nil {
		t.Fatal(err)
	}
	if entries, _ := book.Entries(ctx, "A"); len(entries) != 1 {
		t.Fatalf("entries = %+v, want one", entries)
	}
}

func TestLoadConfig(t *testing.T) {
	cfg, err := posting.LoadConfig(func(k string) string {
		return map[string]string{"INVALID_QUEUE_URL": "q", "IDEMPOTENCY_TABLE": "i", "ENTRIES_TABLE": "e", "DEADLINE_MARGIN": "1s"}[k]
	})
	if err != nil || cfg.ConsumerName != "ledger" || cfg.Concurrency != 10 || cfg.DeadlineMargin.String() != "1s" || cfg.MaxPayloadBytes != payment.DefaultMaxBytes {
		t.Fatalf("LoadConfig = %+v, %v", cfg, err)
	}
	_, err = posting.LoadConfig(func(k string) string {
		return map[string]string{"CONCURRENCY": "many", "CONSUMER_NAME": "a#b", "RECORD_LIFETIME": "1h", "DEADLINE_MARGIN": "0s"}[k]
	})
	for _, want := range []string{"INVALID_QUEUE_URL is required", "IDEMPOTENCY_TABLE is required", "ENTRIES_TABLE is required",
		`CONCURRENCY="many"`, `CONSUMER_NAME="a#b"`, "RECORD_LIFETIME=1h", "DEADLINE_MARGIN=0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadConfig error %v: want %q among the problems", err, want)
		}
	}
}

// TestLoadConfigGroups: with GROUP_ORDER the construct's other variables
// are read and required (the ledger only for hold, whose parks it keeps).
func TestLoadConfigGroups(t *testing.T) {
	base := map[string]string{"INVALID_QUEUE_URL": "q", "IDEMPOTENCY_TABLE": "i", "ENTRIES_TABLE": "e"}
	with := func(more map[string]string) func(string) string {
		return func(k string) string {
			if v, ok := more[k]; ok {
				return v
			}
			return base[k]
		}
	}
	cfg, err := posting.LoadConfig(with(map[string]string{"GROUP_ORDER": "hold", "SOURCE_QUEUE_URL": "s.fifo", "PARKING_QUEUE_URL": "p.fifo",
		"LEDGER_TABLE": "l", "SOURCE_RETENTION": "6h", "MAX_RECEIVES": "4"}))
	if err != nil || cfg.LedgerTable != "l" || cfg.ParkingQueueURL != "p.fifo" || cfg.SourceRetention != 6*time.Hour || cfg.MaxReceives != 4 {
		t.Fatalf("LoadConfig = %+v, %v", cfg, err)
	}
	cfg, err = posting.LoadConfig(with(map[string]string{"GROUP_ORDER": "skip", "SOURCE_QUEUE_URL": "s.fifo", "PARKING_QUEUE_URL": "p.fifo"}))
	if err != nil || cfg.SourceRetention != 96*time.Hour || cfg.MaxReceives != 90 {
		t.Fatalf("skip without a ledger, retention and receives unset: %+v, %v", cfg, err)
	}
	_, err = posting.LoadConfig(with(map[string]string{"GROUP_ORDER": "hold", "MAX_RECEIVES": "1"}))
	for _, want := range []string{"GROUP_ORDER is set, so SOURCE_QUEUE_URL and PARKING_QUEUE_URL are required", "GROUP_ORDER is hold, so LEDGER_TABLE is required", "MAX_RECEIVES=1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadConfig error %v: want %q among the problems", err, want)
		}
	}
}

// noInvalid is an invalid queue that no test here sends to.
type noInvalid struct{}

func (noInvalid) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, errors.New("no invalid message expected")
}

// failureLog is a batch.FailureLog in memory.
type failureLog struct{ got []batch.Failure }

func (l *failureLog) RecordFailures(_ context.Context, fs []batch.Failure) error {
	l.got = append(l.got, fs...)
	return nil
}

// With FAILURE_RECORDS on (the default) and the source's
// MAX_RECEIVE_COUNT, the processor records why a payment failed at its
// last delivery before the redrive, in the ledger's words: a frozen
// account is ledger-frozen.
func TestFailureRecords(t *testing.T) {
	env := map[string]string{"INVALID_QUEUE_URL": "q", "IDEMPOTENCY_TABLE": "i", "ENTRIES_TABLE": "e", "MAX_RECEIVE_COUNT": "3"}
	cfg, err := posting.LoadConfig(func(k string) string { return env[k] })
	if err != nil || !cfg.FailureRecords || cfg.MaxReceiveCount != 3 {
		t.Fatalf("LoadConfig = %+v, %v; want failure records on, at delivery 3", cfg, err)
	}
	env["FAILURE_RECORDS"] = "maybe"
	if _, err := posting.LoadConfig(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), `FAILURE_RECORDS="maybe": want on or off`) {
		t.Fatalf("LoadConfig with FAILURE_RECORDS=maybe: %v", err)
	}
	book := &ledger.Memory{}
	_ = book.Freeze(context.Background(), "A", true)
	log := &failureLog{}
	p := posting.NewProcessor(cfg, posting.Deps{Sender: noInvalid{}, Store: idempotency.NewMemoryStore(), Ledger: book, Failures: log})
	for delivery := 1; delivery <= 3; delivery++ {
		msg := record(body("P1", "A", "1.00"), "A")
		msg.Attributes["ApproximateReceiveCount"] = strconv.Itoa(delivery)
		resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
		if err != nil || len(resp.BatchItemFailures) != 1 {
			t.Fatalf("delivery %d: %+v, %v; want the payment failed", delivery, resp, err)
		}
		if want := delivery / 3; len(log.got) != want {
			t.Fatalf("delivery %d: %d failure records, want %d", delivery, len(log.got), want)
		}
	}
	if f := log.got[0]; f.MessageID != "m-A" || f.Class != "ledger-frozen" || f.Failures != 3 || !strings.Contains(f.Message, "frozen") {
		t.Fatalf("failure record %+v", f)
	}
}
