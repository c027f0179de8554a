//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/payment"
)

// Lane is the example lane's name in the local stack (infra/stack.go): the
// prefix of its outputs.
const Lane = "payments"

// OutputEntriesTableName is the stack output of the ledger's table, beside
// the lane's own outputs.
var OutputEntriesTableName = settings.OutputID(Lane, "EntriesTableName")

// stack is the deployed example lane, found through the outputs file that
// `make deploy-local` writes (HOMING_OUTPUTS).
type stack struct {
	outputs map[string]string
	sqs     *sqs.Client
	lambda  *lambda.Client
	events  *eventbridge.Client
	ledger  *ledger.Table
}

func deployed(t *testing.T) *stack {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL") == "" || os.Getenv("HOMING_OUTPUTS") == "" {
		t.Fatal("AWS_ENDPOINT_URL or HOMING_OUTPUTS is not set: run e2e tests with `make e2e`")
	}
	raw, err := os.ReadFile(os.Getenv("HOMING_OUTPUTS"))
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{}
	if err := json.Unmarshal(raw, &s.outputs); err != nil {
		t.Fatalf("outputs %s: %v", os.Getenv("HOMING_OUTPUTS"), err)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.sqs = sqs.NewFromConfig(cfg)
	s.lambda = lambda.NewFromConfig(cfg)
	s.events = eventbridge.NewFromConfig(cfg)
	s.ledger = ledger.NewTable(dynamodb.NewFromConfig(cfg), s.output(t, OutputEntriesTableName))
	return s
}

func (s *stack) output(t *testing.T, id string) string {
	t.Helper()
	v := s.outputs[id]
	if v == "" {
		t.Fatalf("stack output %s is missing (the lane %q is not deployed?)", id, Lane)
	}
	return v
}

func (s *stack) lane(t *testing.T, key string) string {
	return s.output(t, settings.OutputID(Lane, key))
}

// send sends body to the source queue in group, with a deduplication id of
// its own.
func (s *stack) send(t *testing.T, body, group string) {
	t.Helper()
	_, err := s.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(s.lane(t, settings.OutputSourceQueueURL)), MessageBody: aws.String(body),
		MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(fmt.Sprintf("%d", time.Now().UnixNano())),
	})
	if err != nil {
		t.Fatalf("send to the source queue: %v", err)
	}
}

func (s *stack) depth(t *testing.T, key string) int {
	t.Helper()
	out, err := s.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(s.lane(t, key)),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatalf("depth of %s: %v", key, err)
	}
	var n int
	for _, a := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		var v int
		fmt.Sscan(out.Attributes[string(a)], &v)
		n += v
	}
	return n
}

// entries returns an account's ledger as "seq paymentId" lines.
func (s *stack) entries(t *testing.T, account string) []string {
	t.Helper()
	es, err := s.ledger.Entries(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = fmt.Sprintf("%d %s", e.Seq, e.PaymentID)
	}
	return lines
}

// eventually polls check until it reports done or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() (done bool, state string)) {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		done, state := check()
		if done {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not after %s; last seen: %s", what, timeout, state)
		}
		time.Sleep(time.Second)
	}
}

func paymentBody(id, account, amount string) string {
	return fmt.Sprintf(`{"eventType":"payment.captured","version":1,"paymentId":%q,"accountId":%q,"capturedAt":"2026-11-29T10:00:00Z","amount":%q,"currency":"EUR"}`, id, account, amount)
}

// want lists the expected entries of an account as "seq paymentId" lines.
func want(ids ...string) []string {
	lines := make([]string, len(ids))
	for i, id := range ids {
		lines[i] = fmt.Sprintf("%d %s", i+1, id)
	}
	return lines
}

// TestLane runs the example lane end to end on the deployed stack: the FIFO
// event source mapping posts valid payments once each and in order per
// account, and sends invalid ones to the invalid queue with their reason.
// The lane keeps each account's order (GROUP_ORDER hold): an invalid
// payment parks its account, the account's later payments following it to
// the parking queue in order, until an operator releases it with `dlq
// groups release`, which sends them back; the consumer posts them in order
// (a further invalid one parks the account again) and ends the park. A
// late duplicate posts nothing.
func TestLane(t *testing.T) {
	t.Parallel()
	s := deployed(t)
	store := s.parks(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	var (
		acctA  = "A-" + run // three payments, one of them sent twice, then a conflicting copy
		acctB  = "B-" + run // an invalid payment among valid ones, then two more invalid ones
		pay    = func(acct string, n int) string { return fmt.Sprintf("PAY-%s-%d", acct, n) }
		ctx    = context.Background()
		reason = map[string]string{} // paymentId (or body) of each invalid message -> its reason
	)
	s.send(t, paymentBody(pay(acctA, 1), acctA, "1.00"), acctA)
	s.send(t, paymentBody(pay(acctB, 1), acctB, "2.00"), acctB)
	s.send(t, paymentBody(pay(acctA, 2), acctA, "1.50"), acctA)
	s.send(t, paymentBody(pay(acctB, 2), acctB, "-2.00"), acctB)
	reason[pay(acctB, 2)] = payment.ReasonBadAmount
	s.send(t, paymentBody(pay(acctA, 1), acctA, "1.00"), acctA) // a producer's duplicate
	s.send(t, paymentBody(pay(acctA, 3), acctA, "3.00"), acctA)
	s.send(t, paymentBody(pay(acctB, 3), acctB, "2.50"), acctB)
	s.send(t, paymentBody(pay(acctA, 1), acctA, "9.99"), acctA) // the same paymentId, another amount
	reason["conflict-"+pay(acctA, 1)] = payment.ReasonConflictingDuplicate
	s.send(t, paymentBody(pay(acctB, 9), acctA, "1.00"), acctB) // in another account's group
	reason[pay(acctB, 9)] = payment.ReasonGroupNotAccount
	s.send(t, `{"eventType":"payment.captured","paymentId":"NJ-`+run+`",`, acctB)
	reason["not-json-"+run] = payment.ReasonNotJSON
	s.send(t, paymentBody(pay(acctB, 4), acctB, "3.00"), acctB)

	eventually(t, 90*time.Second, "valid payments posted in order, up to B's invalid one, the rest of B parked behind it", func() (bool, string) {
		a, b := s.entries(t, acctA), s.entries(t, acctB)
		p, parked := parkOf(t, store, acctB)
		return slices.Equal(a, want(pay(acctA, 1), pay(acctA, 2), pay(acctA, 3))) && slices.Equal(b, want(pay(acctB, 1))) && parked && p.Parked == 4,
			fmt.Sprintf("A %q, B %q (parked %t: %+v)", a, b, parked, p)
	})

	t.Run("an_invalid_head_parks_its_account_until_released", func(t *testing.T) {
		// Each invalid payment of B is a head that can never succeed: the
		// account is parked behind it, listed by dlq with its reason, until
		// the operator releases it; the next invalid one parks it again
		// and ends the release (exit 4, naming it).
		invalids := []string{payment.ReasonBadAmount, payment.ReasonGroupNotAccount, payment.ReasonNotJSON}
		final := want(pay(acctB, 1), pay(acctB, 3), pay(acctB, 4))
		for releases := 0; ; releases++ {
			// A release ends the park once the records it sent back are
			// applied; a record parked meanwhile may park the account
			// again a visibility timeout later.
			var p fifo.Park
			var parked bool
			eventually(t, 90*time.Second, "account B parked, or posted to its end", func() (bool, string) {
				p, parked = parkOf(t, store, acctB)
				b := s.entries(t, acctB)
				return parked && p.Releasing == "" || !parked && slices.Equal(b, final), fmt.Sprintf("B %q, park %+v (%t)", b, p, parked)
			})
			if !parked {
				t.Logf("account B posted to its end after %d dlq groups release(s)", releases)
				break
			}
			if releases == len(invalids) {
				t.Fatalf("account B still parked after %d releases: %+v", releases, p)
			}
			why, _ := strings.CutPrefix(p.Reason, "invalid: ")
			if p.Queue != "invalid" || !slices.Contains(invalids, why) {
				t.Fatalf("account B's park %+v: want one of its invalid payments in the invalid queue", p)
			}
			if list := dlq(t, "groups"); !strings.Contains(list, acctB) || !strings.Contains(list, why) {
				t.Fatalf("dlq groups lists:\n%s\nwant %s, parked by %s", list, acctB, why)
			}
			switch out, code := dlqExit(t, "groups", "release", acctB, "--yes"); {
			case code == 0:
			case code == 4 && strings.Contains(out, "parked again"):
				t.Logf("the release of B ended at another invalid payment:\n%s", out)
			default:
				t.Fatalf("dlq groups release %s: exit %d\n%s", acctB, code, out)
			}
		}
		if b := s.entries(t, acctB); !slices.Equal(b, final) {
			t.Fatalf("B %q after its releases, want %q", b, final)
		}
		// A's conflicting copy parks A, with nothing behind it.
		if p, ok := parkOf(t, store, acctA); !ok || p.Reason != "invalid: "+payment.ReasonConflictingDuplicate || p.Waiting() != 0 {
			t.Fatalf("account A's park %+v (%t), want parked by the conflicting copy, nothing behind", p, ok)
		}
		dlq(t, "groups", "release", acctA, "--yes")
		if p, ok := parkOf(t, store, acctA); ok {
			t.Fatalf("account A still parked after its release: %+v", p)
		}
	})

	t.Run("invalid_with_their_reason", func(t *testing.T) {
		got := map[string]string{}
		eventually(t, 60*time.Second, "invalid messages in the invalid queue", func() (bool, string) {
			out, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.lane(t, settings.OutputInvalidQueueURL)),
				MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				meta, _, found, err := invalid.Read(m.MessageAttributes)
				if err != nil || !found {
					t.Errorf("invalid message without its verdict: %v", err)
					continue
				}
				body := aws.ToString(m.Body)
				if !strings.Contains(body, run) {
					continue // another run's
				}
				var key string
				var p struct{ PaymentID string }
				_ = json.Unmarshal([]byte(body), &p)
				switch {
				case meta.Reason == payment.ReasonNotJSON:
					key = "not-json-" + run
				case meta.Reason == payment.ReasonConflictingDuplicate:
					key = "conflict-" + p.PaymentID
				default:
					key = p.PaymentID
				}
				got[key] = meta.Reason
				if meta.Detail == "" || meta.Consumer == "" || meta.MessageID == "" || m.Attributes["MessageGroupId"] == "" {
					t.Errorf("verdict %+v (group %q): want a detail, a consumer, the source message id, and a group", meta, m.Attributes["MessageGroupId"])
				}
				_, _ = s.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.lane(t, settings.OutputInvalidQueueURL)), ReceiptHandle: m.ReceiptHandle})
			}
			return len(got) >= len(reason), fmt.Sprintf("%v", got)
		})
		for k, r := range reason {
			if got[k] != r {
				t.Errorf("invalid %s: reason %q, want %q", k, got[k], r)
			}
		}
	})

	t.Run("exactly_once", func(t *testing.T) {
		// A late duplicate of a posted payment, and one more payment after
		// it: only the latter is posted.
		s.sendBatch(t, acctB, paymentBody(pay(acctB, 1), acctB, "2.00"), paymentBody(pay(acctB, 5), acctB, "4.00"))
		eventually(t, 60*time.Second, "the payment after a duplicate posted", func() (bool, string) {
			got := s.entries(t, acctB)
			return slices.Equal(got, want(pay(acctB, 1), pay(acctB, 3), pay(acctB, 4), pay(acctB, 5))), fmt.Sprintf("%q", got)
		})
		for acct, ids := range map[string][]string{
			acctA: {pay(acctA, 1), pay(acctA, 2), pay(acctA, 3)},
			acctB: {pay(acctB, 1), pay(acctB, 3), pay(acctB, 4), pay(acctB, 5)},
		} {
			if got := s.entries(t, acct); !slices.Equal(got, want(ids...)) {
				t.Errorf("account %s: %q, want %q", acct, got, want(ids...))
			}
			if p, ok := parkOf(t, store, acct); ok {
				t.Errorf("account %s is still parked: %+v", acct, p)
			}
			if n := s.parked(t, acct); n != 0 {
				t.Errorf("account %s has %d records in the parking queue", acct, n)
			}
			if dls := s.deadLettersOf(t, acct); len(dls) != 0 {
				t.Errorf("account %s has %d dead letters", acct, len(dls))
			}
		}
	})
}

// schedule enables or disables the lane's replay schedule.
func (s *stack) schedule(t *testing.T, enabled bool) {
	t.Helper()
	name := aws.String(s.lane(t, settings.OutputReplayScheduleName))
	var err error
	if enabled {
		_, err = s.events.EnableRule(context.Background(), &eventbridge.EnableRuleInput{Name: name})
	} else {
		_, err = s.events.DisableRule(context.Background(), &eventbridge.DisableRuleInput{Name: name})
	}
	if err != nil {
		t.Fatalf("replay schedule %s (enabled %t): %v", aws.ToString(name), enabled, err)
	}
}

func invokeReplay(t *testing.T, s *stack, fn string) replay.Summary {
	t.Helper()
	out, err := s.lambda.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: []byte(`{}`)})
	if err != nil {
		t.Fatalf("invoke %s: %v", fn, err)
	}
	if out.FunctionError != nil {
		t.Fatalf("invoke %s: %s: %s", fn, aws.ToString(out.FunctionError), out.Payload)
	}
	var sum replay.Summary
	if err := json.Unmarshal(out.Payload, &sum); err != nil {
		t.Fatalf("replay summary %s: %v", out.Payload, err)
	}
	return sum
}

// TestAPostedDeadLetterIsRemoved shows the already-applied removal on the
// payments lane, keyed by its own expression (paymentId): a dead letter
// whose payment the consumer already posted, with the same payload, is
// deleted from the DLQ by the replay instead of being sent back (as after
// a consumer that posted and then timed out before it could acknowledge),
// and the account's entries stay as they were. A dead letter of the same
// payment id with another payload is not removed: it is replayed, and the
// consumer routes it as a conflicting duplicate.
func TestAPostedDeadLetterIsRemoved(t *testing.T) {
	s := deployed(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	acct := "R-" + run
	id := "PAY-" + acct + "-1"
	body := paymentBody(id, acct, "4.00")
	s.schedule(t, false) // this test's replay runs are its own
	t.Cleanup(func() { s.schedule(t, true) })
	s.send(t, body, acct)
	eventually(t, 60*time.Second, "the payment posted", func() (bool, string) {
		got := s.entries(t, acct)
		return slices.Equal(got, want(id)), fmt.Sprintf("%q", got)
	})
	// The same message in the DLQ, as SQS's redrive leaves it.
	_, err := s.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(s.lane(t, settings.OutputDeadLetterQueueURL)), MessageBody: aws.String(body),
		MessageGroupId: aws.String(acct), MessageDeduplicationId: aws.String("dl-" + run),
	})
	if err != nil {
		t.Fatalf("send to the DLQ: %v", err)
	}
	var applied, replayed int
	eventually(t, 60*time.Second, "the posted dead letter removed", func() (bool, string) {
		for _, r := range invokeReplay(t, s, s.lane(t, settings.OutputReplayFunctionName)).Routes {
			applied += r.Counts.Applied
			replayed += r.Counts.Replayed
		}
		n := s.depth(t, settings.OutputDeadLetterQueueURL)
		return applied == 1 && n == 0, fmt.Sprintf("applied %d, replayed %d, DLQ %d", applied, replayed, n)
	})
	if replayed != 0 {
		t.Errorf("the replay sent %d messages back; want the posted one removed, not replayed", replayed)
	}
	if got := s.entries(t, acct); !slices.Equal(got, want(id)) {
		t.Errorf("entries after the removal: %q, want %q", got, want(id))
	}
	if n := s.depth(t, settings.OutputSourceQueueURL); n != 0 {
		t.Errorf("source queue holds %d messages, want 0: nothing was to be sent back", n)
	}

	// Another payload under the same payment id is no duplicate of the
	// posted one: it goes back to the consumer, which routes it to the
	// invalid queue; the entries stay.
	_, err = s.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(s.lane(t, settings.OutputDeadLetterQueueURL)), MessageBody: aws.String(paymentBody(id, acct, "4.50")),
		MessageGroupId: aws.String(acct), MessageDeduplicationId: aws.String("dl2-" + run),
	})
	if err != nil {
		t.Fatalf("send to the DLQ: %v", err)
	}
	applied, replayed = 0, 0
	eventually(t, 60*time.Second, "the other payload replayed", func() (bool, string) {
		for _, r := range invokeReplay(t, s, s.lane(t, settings.OutputReplayFunctionName)).Routes {
			applied += r.Counts.Applied
			replayed += r.Counts.Replayed
		}
		return replayed == 1, fmt.Sprintf("applied %d, replayed %d", applied, replayed)
	})
	if applied != 0 {
		t.Errorf("a dead letter with another payload was removed as applied (%d)", applied)
	}
	eventually(t, 60*time.Second, "the replayed conflict consumed", func() (bool, string) {
		src, dlq := s.depth(t, settings.OutputSourceQueueURL), s.depth(t, settings.OutputDeadLetterQueueURL)
		return src == 0 && dlq == 0, fmt.Sprintf("source %d, DLQ %d", src, dlq)
	})
	if got := s.entries(t, acct); !slices.Equal(got, want(id)) {
		t.Errorf("entries after the conflicting replay: %q, want %q", got, want(id))
	}
	// The conflicting copy is a head that can never succeed: it parks the
	// account (GROUP_ORDER hold) until an operator releases it.
	store := s.parks(t)
	if p, ok := parkOf(t, store, acct); !ok || p.Reason != "invalid: "+payment.ReasonConflictingDuplicate || p.Waiting() != 0 {
		t.Fatalf("account %s: park %+v (parked %t), want parked by the conflicting copy, nothing behind", acct, p, ok)
	}
	dlq(t, "groups", "release", acct, "--yes")
	if p, ok := parkOf(t, store, acct); ok {
		t.Fatalf("account %s still parked after its release: %+v", acct, p)
	}
}
