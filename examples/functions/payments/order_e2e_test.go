//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/settings"
)

// holds is the lane's hold store, as its consumer writes it: its HOLD_TABLE,
// scoped by its CONSUMER_NAME.
func (s *stack) holds(t *testing.T) hold.Store {
	t.Helper()
	fn := s.lane(t, settings.OutputConsumerFunctionName)
	out, err := s.lambda.GetFunctionConfiguration(context.Background(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(fn)})
	if err != nil {
		t.Fatalf("configuration of %s: %v", fn, err)
	}
	env := map[string]string{}
	if out.Environment != nil {
		env = out.Environment.Variables
	}
	if env[settings.GroupOrder.Env] != string(hold.KeepHeld) {
		t.Fatalf("the lane's consumer has %s=%q, want %q (the construct's default on a FIFO lane)", settings.GroupOrder.Env, env[settings.GroupOrder.Env], hold.KeepHeld)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if env[settings.HoldTable.Env] == "" {
		t.Fatalf("the lane's consumer has no %s", settings.HoldTable.Env)
	}
	return dynamo.NewHoldStore(dynamodb.NewFromConfig(cfg), env[settings.HoldTable.Env], env[settings.ConsumerName.Env])
}

// holdOf returns the hold of group and how many records wait behind it.
func holdOf(t *testing.T, store hold.Store, group string) (h hold.Hold, held int, ok bool) {
	t.Helper()
	ctx := context.Background()
	hs, err := store.Holds(ctx, []string{group})
	if err != nil {
		t.Fatal(err)
	}
	h, ok = hs[group]
	if ok {
		if held, err = store.Count(ctx, group); err != nil {
			t.Fatal(err)
		}
	}
	return h, held, ok
}

var (
	dlqOnce sync.Once
	dlqPath string
	dlqErr  error
)

// dlq runs the operator CLI (built once from this workspace) on the
// deployed lane and returns its output.
func dlq(t *testing.T, args ...string) string {
	t.Helper()
	dlqOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dlq-e2e")
		if err != nil {
			dlqErr = err
			return
		}
		dlqPath = filepath.Join(dir, "dlq")
		out, err := exec.Command("go", "build", "-o", dlqPath, "github.com/homingdlq/homing/cmd/dlq").CombinedOutput()
		if err != nil {
			dlqErr = &exec.ExitError{Stderr: out}
		}
	})
	if dlqErr != nil {
		t.Fatalf("build dlq: %v", dlqErr)
	}
	cmd := exec.Command(dlqPath, append(args, "--lane", Lane)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("dlq %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// TestAGroupHeldBehindAPostedHeadDrains shows the sweep on the payments
// lane, keyed by its own expression (paymentId): an account held behind a
// head whose payment the consumer already posted, with the same payload,
// and of which no copy is left in either queue (as when one invocation
// acknowledged a copy of the head while another held the account behind
// it: that end state is written here directly), is drained by the next
// replay run, from the body the hold keeps of its head. The payment
// waiting behind it is then posted, after the head's.
func TestAGroupHeldBehindAPostedHeadDrains(t *testing.T) {
	s := deployed(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	acct := "H-" + run
	head, next := "PAY-"+acct+"-1", "PAY-"+acct+"-2"
	s.schedule(t, false) // this test's replay runs are its own
	t.Cleanup(func() { s.schedule(t, true) })
	body := paymentBody(head, acct, "7.00")
	s.send(t, body, acct)
	eventually(t, 60*time.Second, "the head posted", func() (bool, string) {
		got := s.entries(t, acct)
		return slices.Equal(got, want(head)), fmt.Sprintf("%q", got)
	})
	store := s.holds(t)
	if _, err := store.Begin(context.Background(), hold.Hold{Group: acct, Head: "gone-" + run, HeadBody: body}, time.Now()); err != nil {
		t.Fatal(err)
	}
	s.send(t, paymentBody(next, acct, "8.00"), acct)
	eventually(t, 60*time.Second, "the next payment held", func() (bool, string) {
		_, n, ok := holdOf(t, store, acct)
		return ok && n == 1, fmt.Sprintf("held %t, %d behind", ok, n)
	})
	sum := invokeReplay(t, s, s.lane(t, settings.OutputReplayFunctionName))
	if len(sum.Routes) != 1 || sum.Routes[0].Holds.AppliedHeads < 1 {
		t.Fatalf("replay summary %+v: want a held group drained past its applied head (this account's, checked next)", sum.Routes)
	}
	eventually(t, 60*time.Second, "the account drained", func() (bool, string) {
		got := s.entries(t, acct)
		h, _, ok := holdOf(t, store, acct)
		return !ok && slices.Equal(got, want(head, next)), fmt.Sprintf("entries %q, hold %+v", got, h)
	})
}

// TestAPoisonHeadIsParkedAndReleased shows a head that can never succeed
// on the payments lane: an account held behind a payment whose replays are
// spent (its dead letter carries the deployed engine's sealed metadata of
// MAX_REPLAYS replays, and homing-hold naming it as the account's head,
// as the engine writes both; the hold is begun here as the consumer began
// it when the payment first failed). The replay parks it with its reason
// and tells the hold, which says why; the account's next payment waits
// behind it until `dlq groups release`, then is posted.
func TestAPoisonHeadIsParkedAndReleased(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	acct := "X-" + run
	head, next := "PAY-"+acct+"-1", "PAY-"+acct+"-2"
	origin := "poison-" + run
	s.schedule(t, false) // this test's replay runs are its own
	t.Cleanup(func() { s.schedule(t, true) })
	store := s.holds(t)
	body := paymentBody(head, acct, "3.00")
	if _, err := store.Begin(ctx, hold.Hold{Group: acct, Head: origin, HeadBody: body}, time.Now()); err != nil {
		t.Fatal(err)
	}
	s.send(t, paymentBody(next, acct, "4.00"), acct)
	eventually(t, 60*time.Second, "the next payment held", func() (bool, string) {
		_, n, ok := holdOf(t, store, acct)
		return ok && n == 1, fmt.Sprintf("held %t, %d behind", ok, n)
	})

	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key, err := replay.SealKey(ctx, dynamo.NewLedger(dynamodb.NewFromConfig(cfg), s.lane(t, settings.OutputLedgerTableName), time.Now), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	meta := replay.Metadata{
		ReplayCount: s.replaySettings(t).maxReplays, FirstDeadLetteredAt: time.Now().Add(-time.Hour), LastReplayAt: time.Now().Add(-10 * time.Minute),
		OriginalMessageID: origin,
	}.Sealed(key, body, s.lane(t, settings.OutputSourceQueueURL))
	attrs, err := replay.Attributes(map[string]sqstypes.MessageAttributeValue{hold.Attribute: hold.OriginAttribute(origin)}, meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(s.lane(t, settings.OutputDeadLetterQueueURL)), MessageBody: aws.String(body), MessageAttributes: attrs,
		MessageGroupId: aws.String(acct), MessageDeduplicationId: aws.String("poison-" + run),
	}); err != nil {
		t.Fatalf("send to the DLQ: %v", err)
	}
	eventually(t, 60*time.Second, "the poison head parked and told to its hold", func() (bool, string) {
		sum := invokeReplay(t, s, s.lane(t, settings.OutputReplayFunctionName))
		h, _, ok := holdOf(t, store, acct)
		return ok && h.Parked == "parked: "+replay.ReasonReplayExhausted, fmt.Sprintf("hold %+v (%t); last run parked %v", h, ok, sum.Total.Parked)
	})
	if list := dlq(t, "groups"); !strings.Contains(list, acct) || !strings.Contains(list, replay.ReasonReplayExhausted) {
		t.Fatalf("dlq groups lists:\n%s\nwant %s, held by its %s head", list, acct, replay.ReasonReplayExhausted)
	}
	if got := s.entries(t, acct); len(got) != 0 {
		t.Fatalf("entries %q while the account is held behind its parked head: want none", got)
	}
	dlq(t, "groups", "release", acct, "--yes")
	eventually(t, 60*time.Second, "the account released past its head", func() (bool, string) {
		got := s.entries(t, acct)
		h, _, ok := holdOf(t, store, acct)
		return !ok && slices.Equal(got, want(next)), fmt.Sprintf("entries %q, hold %+v", got, h)
	})
	// The head waits in the parking queue with its reason; take it back.
	parking := aws.String(s.lane(t, settings.OutputParkingQueueURL))
	eventually(t, 60*time.Second, "the parked head in the parking queue", func() (bool, string) {
		out, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: parking, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if aws.ToString(m.Body) != body {
				continue
			}
			if _, err := s.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: parking, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			got, _, found, err := replay.Read(m.MessageAttributes)
			if err != nil || !found || got.Reason != replay.ReasonReplayExhausted {
				t.Fatalf("parked metadata %+v (found %t, %v), want %s", got, found, err, replay.ReasonReplayExhausted)
			}
			return true, ""
		}
		return false, fmt.Sprintf("%d others", len(out.Messages))
	})
}
