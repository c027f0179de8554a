package handler_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/holdtest"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/handler"
	"github.com/homingdlq/homing/replay/replaytest"
)

// The function's holds store reaches the engine: the keeper of a FIFO
// route with groups sends its triggers to the route's source queue through
// the function's queue, does with a parked head what the route's groups
// says, and the summary reports the holds.
func TestGroupsReachTheEngine(t *testing.T) {
	clock := replaytest.NewClock(time.Now().UTC().Truncate(time.Second))
	q := replaytest.NewMemoryQueue(clock.Now)
	ledger := replaytest.NewMemoryLedger(clock.Now)
	rt := replay.Route{Name: "payments", Groups: "skip"}
	for _, u := range []struct {
		url  *string
		name string
	}{{&rt.DLQURL, "payments-dlq.fifo"}, {&rt.SourceURL, "payments.fifo"}, {&rt.ParkingURL, "payments-parking.fifo"}} {
		url, err := q.CreateQueue(u.name, nil)
		if err != nil {
			t.Fatal(err)
		}
		*u.url = url
	}
	routes, _ := json.Marshal([]replay.Route{rt})
	vars := map[string]string{"REPLAY_ROUTES": string(routes), "LEDGER_TABLE": "ledger", "IDEMPOTENCY_TABLE": "idempotency"}
	cfg, err := handler.LoadConfig(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := holdtest.NewMemory()
	if _, err := store.Begin(ctx, hold.Hold{Group: "acct-1", Head: "orig-head"}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	// The head, its replays spent, in the DLQ.
	key, err := replay.SealKey(ctx, ledger, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	body := `{"orderId":"ORD-1"}`
	meta := replay.Metadata{ReplayCount: replay.DefaultMaxReplays, OriginalMessageID: "orig-head"}.Sealed(key, body, rt.SourceURL)
	// A head's replay carries the name its hold knows it by.
	attrs, err := envelope.Pack(map[string]types.MessageAttributeValue{hold.Attribute: hold.OriginAttribute("orig-head")}, replay.AttributeName, meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(rt.DLQURL), MessageBody: aws.String(body), MessageAttributes: attrs,
		MessageGroupId: aws.String("acct-1"), MessageDeduplicationId: aws.String("d1")}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)

	h := handler.New(cfg, handler.Deps{Queue: q, Ledger: ledger, Holds: store, Logger: slog.New(slog.DiscardHandler), Now: clock.Now, Sleep: clock.Sleep})
	out, err := lambda.NewHandler(h).Invoke(ctx, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var s replay.Summary
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Routes[0].Holds; got != (replay.GroupHolds{Held: 1}) || s.Total.ParkedTotal() != 1 {
		t.Fatalf("route summary = %+v, want one held group swept and its head parked", s.Routes[0])
	}
	hs, _ := store.Holds(ctx, []string{"acct-1"})
	if h := hs["acct-1"]; h.State != hold.Draining || !strings.HasPrefix(h.Parked, "parked: "+replay.ReasonReplayExhausted) {
		t.Fatalf("hold = %+v, want released past its parked head", h)
	}
	source := q.Messages(rt.SourceURL)
	if len(source) != 1 || aws.ToString(source[0].Body) != hold.TriggerBody || source[0].Attributes["MessageGroupId"] != "acct-1" {
		t.Fatalf("source = %+v, want one drain trigger of acct-1", source)
	}
}

func TestGroupsOfRoutesAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name, route, want string
	}{
		{"standard route", `[{"name":"o","dlqUrl":"https://sqs/o-dlq","sourceUrl":"https://sqs/o","parkingUrl":"https://sqs/o-p","groups":"hold"}]`, "needs a FIFO route"},
		{"unknown value", `[{"name":"o","dlqUrl":"https://sqs/o-dlq.fifo","sourceUrl":"https://sqs/o.fifo","parkingUrl":"https://sqs/o-p.fifo","groups":"always"}]`, `want "hold" or "skip"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"REPLAY_ROUTES": tc.route, "LEDGER_TABLE": "ledger", "IDEMPOTENCY_TABLE": "idempotency"}
			_, err := handler.LoadConfig(func(k string) string { return vars[k] })
			if err == nil || !strings.Contains(err.Error(), "REPLAY_ROUTES") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want REPLAY_ROUTES: ... %s", err, tc.want)
			}
		})
	}
	vars := map[string]string{"LEDGER_TABLE": "ledger", "IDEMPOTENCY_TABLE": "idempotency",
		"REPLAY_ROUTES": `[{"name":"o","dlqUrl":"https://sqs/o-dlq.fifo","sourceUrl":"https://sqs/o.fifo","parkingUrl":"https://sqs/o-p.fifo","groups":"skip"}]`}
	cfg, err := handler.LoadConfig(func(k string) string { return vars[k] })
	if err != nil || cfg.Routes[0].Groups != "skip" {
		t.Fatalf("LoadConfig = %+v, %v; want groups skip", cfg.Routes, err)
	}
}
