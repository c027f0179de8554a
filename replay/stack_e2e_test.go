//go:build e2e

package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/browse"
	"github.com/homingdlq/homing/internal/crash"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/replay"
)

// These tests run against the stack deployed by `make deploy-local`: the
// deployed consumer behind the real event source mapping and redrive
// policy, the deployed replay function (invoked directly, or by its
// EventBridge schedule in the slow test), the tax stand-in. The schedule
// runs every minute throughout, so assertions are about outcomes (orders
// invoiced once, queues drained), never about which run did the work.

type deployedStack struct {
	out    map[string]string
	sqs    *sqs.Client
	lambda *lambda.Client
	tax    *emulatortest.TaxAdmin
	run    string
}

func deployed(t *testing.T) *deployedStack {
	cfg := emulatortest.Config(t)
	out := emulatortest.Outputs(t)
	s := &deployedStack{
		out: map[string]string{}, sqs: sqs.NewFromConfig(cfg), lambda: lambda.NewFromConfig(cfg),
		tax: emulatortest.NewTaxAdmin(t, emulatortest.Output(t, out, "TaxServiceAdminUrl")),
		run: fmt.Sprintf("P%d", time.Now().UnixNano()%1e8),
	}
	// The sample lane's outputs, by their settings.Output* keys.
	for _, k := range []string{settings.OutputSourceQueueURL, settings.OutputDeadLetterQueueURL, settings.OutputParkingQueueURL,
		settings.OutputReplayFunctionName, settings.OutputLedgerTableName} {
		s.out[k] = emulatortest.LaneOutput(t, out, emulatortest.SampleLane, k)
	}
	s.tax.SetMode("up")
	t.Cleanup(func() { s.tax.SetMode("up") })
	return s
}

func (s *deployedStack) orderBody(t *testing.T, id string) string {
	b, err := os.ReadFile("../events/order-valid.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev struct{ Records []struct{ Body string } }
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(ev.Records[0].Body, "ORD-2026-000123", id, 1)
}

func (s *deployedStack) send(t *testing.T, url, body string, attrs map[string]types.MessageAttributeValue) {
	t.Helper()
	if _, err := s.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// count browses url and counts this run's messages, leaving them in place.
func (s *deployedStack) count(t *testing.T, url string) int {
	t.Helper()
	n := 0
	_, err := browse.All(context.Background(), s.sqs, url, browse.Options{Hide: 5}, func(m types.Message) bool {
		if strings.Contains(aws.ToString(m.Body), s.run) {
			n++
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// invoke runs the deployed replay function on demand and returns its summary.
func (s *deployedStack) invoke(t *testing.T, request string) replay.Summary {
	t.Helper()
	out, err := s.lambda.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(s.out[settings.OutputReplayFunctionName]), Payload: []byte(request)})
	if err != nil {
		t.Fatalf("invoke the replay function: %v", err)
	}
	if out.FunctionError != nil {
		t.Fatalf("replay function failed: %s: %s", aws.ToString(out.FunctionError), out.Payload)
	}
	var sum replay.Summary
	if err := json.Unmarshal(out.Payload, &sum); err != nil {
		t.Fatalf("summary %s: %v", out.Payload, err)
	}
	return sum
}

func (s *deployedStack) invoices(t *testing.T) map[string]int {
	mine := map[string]int{}
	for id, n := range s.tax.Invoices() {
		if strings.Contains(id, s.run) {
			mine[id] = n
		}
	}
	return mine
}

func gate(sum replay.Summary, name string) string {
	for _, g := range sum.Gates {
		if g.Name == name {
			return string(g.Decision)
		}
	}
	return ""
}

// The main job: an outage dead-letters valid orders; while the service is
// down the health gate holds them; once it is back a replay run brings
// them home and each is invoiced exactly once.
func TestDeployedOutageThenReplay(t *testing.T) {
	s := deployed(t)
	s.tax.SetMode("down")
	ids := []string{"ORD-" + s.run + "-1", "ORD-" + s.run + "-2", "ORD-" + s.run + "-3"}
	for _, id := range ids {
		s.send(t, s.out[settings.OutputSourceQueueURL], s.orderBody(t, id), nil)
	}
	emulatortest.Eventually(t, 150*time.Second, func() (bool, string) {
		n := s.count(t, s.out[settings.OutputDeadLetterQueueURL])
		return n == len(ids), fmt.Sprintf("%d of %d orders dead-lettered", n, len(ids))
	})

	held := s.invoke(t, `{}`)
	if gate(held, "health") != "closed" {
		t.Fatalf("service down: health gate = %q, want closed (summary %+v)", gate(held, "health"), held)
	}
	if held.Total.Replayed != 0 || s.count(t, s.out[settings.OutputDeadLetterQueueURL]) != len(ids) {
		t.Fatalf("the gate did not hold: replayed %d", held.Total.Replayed)
	}

	s.tax.SetMode("up")
	// Backoff is seconds locally: run until the orders are home.
	emulatortest.Eventually(t, 120*time.Second, func() (bool, string) {
		sum := s.invoke(t, `{}`)
		inv := s.invoices(t)
		done := len(inv) == len(ids) && s.count(t, s.out[settings.OutputDeadLetterQueueURL]) == 0
		return done, fmt.Sprintf("invoices %v; last run: health %s, replayed %d, delayed %d", inv, gate(sum, "health"), sum.Total.Replayed, sum.Total.Delayed)
	})
	for _, id := range ids {
		if n := s.invoices(t)[id]; n != 1 {
			t.Errorf("%s invoiced %d times, want 1", id, n)
		}
	}
}

// A message that has used its replays goes to the parking queue with its
// reason, and is not sent back to the source.
func TestDeployedReplayExhaustedIsParked(t *testing.T) {
	s := deployed(t)
	id := "ORD-" + s.run + "-TIRED"
	// The metadata the deployed function wrote on a third replay: sealed
	// with the key of the stack's ledger for the source queue.
	cfg := emulatortest.Config(t)
	key, err := replay.SealKey(context.Background(), dynamo.NewLedger(dynamodb.NewFromConfig(cfg), s.out[settings.OutputLedgerTableName], time.Now), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	body := s.orderBody(t, id)
	meta := replay.Metadata{
		ReplayCount: 3, FirstDeadLetteredAt: time.Now().Add(-time.Hour), LastReplayAt: time.Now().Add(-10 * time.Minute), OriginalMessageID: "orig-" + s.run,
	}.Sealed(key, body, s.out[settings.OutputSourceQueueURL])
	attrs, err := replay.Attributes(nil, meta)
	if err != nil {
		t.Fatal(err)
	}
	s.send(t, s.out[settings.OutputDeadLetterQueueURL], body, attrs)
	var parked []types.Message
	emulatortest.Eventually(t, 90*time.Second, func() (bool, string) {
		sum := s.invoke(t, `{}`)
		var err error
		parked, err = browse.All(context.Background(), s.sqs, s.out[settings.OutputParkingQueueURL], browse.Options{}, func(m types.Message) bool {
			return strings.Contains(aws.ToString(m.Body), s.run)
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(parked) == 1, fmt.Sprintf("parked %d; last run parked %v", len(parked), sum.Total.Parked)
	})
	meta, _, found, err := replay.Read(parked[0].MessageAttributes)
	if err != nil || !found || meta.Reason != "replay-exhausted" || meta.OriginalMessageID != "orig-"+s.run {
		t.Fatalf("parked metadata = %+v, found=%v, err=%v", meta, found, err)
	}
	if _, err := s.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(s.out[settings.OutputParkingQueueURL]), ReceiptHandle: parked[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if inv := s.invoices(t); len(inv) != 0 {
		t.Fatalf("a parked order was invoiced: %v", inv)
	}
}

// A replay that crashes after sending and before deleting leaves the
// message in the DLQ with its SENT ledger record, or with its INTENT one
// when the crash came before the record (the engine writes a batch's final
// records beside its deletes): the next run (the deployed function) deletes
// it without sending it again, or sends it again, and the consumer invoices
// the order once.
func TestDeployedCrashBetweenSendAndDelete(t *testing.T) {
	s := deployed(t)
	cfg := emulatortest.Config(t)
	id := "ORD-" + s.run + "-CRASH"
	s.send(t, s.out[settings.OutputDeadLetterQueueURL], s.orderBody(t, id), nil)

	ledger := dynamo.NewLedger(dynamodb.NewFromConfig(cfg), s.out[settings.OutputLedgerTableName], time.Now)
	cr := crash.New(crash.AtFirst("DeleteMessageBatch"))
	crashing := replay.New(cr.Queue(s.sqs), cr.Ledger(ledger), replay.Options{Policy: replay.Policy{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}})
	route := replay.Route{Name: "crash-test", Key: "orderId", DLQURL: s.out[settings.OutputDeadLetterQueueURL], SourceURL: s.out[settings.OutputSourceQueueURL], ParkingURL: s.out[settings.OutputParkingQueueURL]}
	sum, _ := crashing.Run(context.Background(), replay.Request{Routes: []replay.Route{route}, Filter: replay.Filter{Keys: []string{id}}})
	if sum.Total.Replayed != 1 || !cr.Crashed() {
		t.Fatalf("the crashing run sent %d, want 1, and crashed: %v (summary %+v)", sum.Total.Replayed, cr.Crashed(), sum)
	}
	// The message is in the source (the consumer invoices it) and still in the DLQ.
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		inv := s.invoices(t)
		return inv[id] == 1, fmt.Sprintf("invoices %v", inv)
	})
	emulatortest.Eventually(t, 90*time.Second, func() (bool, string) {
		after := s.invoke(t, `{"filter":{"orderIds":["`+id+`"]}}`)
		left := s.count(t, s.out[settings.OutputDeadLetterQueueURL])
		return left == 0, fmt.Sprintf("%d left in the DLQ; last run recovered %d, replayed %d", left, after.Total.Recovered, after.Total.Replayed)
	})
	time.Sleep(5 * time.Second) // a resend would be consumed within this
	if n := s.invoices(t)[id]; n != 1 {
		t.Fatalf("%s invoiced %d times, want 1", id, n)
	}
	if n := s.count(t, s.out[settings.OutputSourceQueueURL]); n != 0 {
		t.Fatalf("%d copies left in the source queue", n)
	}
}

// The slow one: nobody invokes the function; its EventBridge schedule
// (rate(1 minute) locally) brings the dead letter home by itself.
func TestDeployedScheduleFiresByItself(t *testing.T) {
	s := deployed(t)
	id := "ORD-" + s.run + "-SCHEDULED"
	s.send(t, s.out[settings.OutputDeadLetterQueueURL], s.orderBody(t, id), nil)
	emulatortest.Eventually(t, 150*time.Second, func() (bool, string) {
		inv := s.invoices(t)
		return inv[id] == 1 && s.count(t, s.out[settings.OutputDeadLetterQueueURL]) == 0, fmt.Sprintf("invoices %v", inv)
	})
}

// The deployed replay function reports, per route, what the DLQ's own age
// metric cannot (it leaves out messages received three times or more): the
// age of its oldest dead letter, the time to its expiry, how many are in
// the rescue window, and a heartbeat, as EMF lines in its log group.
func TestDeployedReplayReportsExpiryAndHeartbeat(t *testing.T) {
	s := deployed(t)
	id := "ORD-" + s.run + "-EXPIRY"
	s.send(t, s.out[settings.OutputDeadLetterQueueURL], s.orderBody(t, id), nil)
	sum := s.invoke(t, `{}`)
	group := emulatortest.LaneOutput(t, emulatortest.Outputs(t), emulatortest.SampleLane, settings.OutputReplayLogGroupName)
	logs := cloudwatchlogs.NewFromConfig(emulatortest.Config(t))
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		p := cloudwatchlogs.NewFilterLogEventsPaginator(logs, &cloudwatchlogs.FilterLogEventsInput{
			LogGroupName: aws.String(group), StartTime: aws.Int64(time.Now().Add(-15 * time.Minute).UnixMilli()),
		})
		for p.HasMorePages() {
			page, err := p.NextPage(t.Context())
			if err != nil {
				return false, err.Error()
			}
			for _, e := range page.Events {
				msg := aws.ToString(e.Message)
				if !strings.Contains(msg, `"_aws"`) || !strings.Contains(msg, `"runId":"`+sum.RunID+`"`) {
					continue
				}
				var line map[string]any
				if err := json.Unmarshal([]byte(msg), &line); err != nil {
					t.Fatalf("EMF line is not JSON: %q", msg)
				}
				for _, k := range []string{"RunCompleted", "OldestDeadLetterAgeSeconds", "SecondsToExpiry", "InRescueWindow"} {
					if _, ok := line[k].(float64); !ok {
						t.Fatalf("EMF line of run %s has no %s: %s", sum.RunID, k, msg)
					}
				}
				if line["RunCompleted"] != 1.0 || line["SecondsToExpiry"].(float64) <= 0 {
					t.Fatalf("EMF line of run %s: %s", sum.RunID, msg)
				}
				return true, ""
			}
		}
		return false, fmt.Sprintf("no EMF line of run %s in %s yet", sum.RunID, group)
	})
}
