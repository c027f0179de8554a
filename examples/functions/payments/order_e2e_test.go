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

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/hold"
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
	if len(sum.Routes) != 1 || sum.Routes[0].Holds.AppliedHeads != 1 {
		t.Fatalf("replay summary %+v: want one held group drained past its applied head", sum.Routes)
	}
	eventually(t, 60*time.Second, "the account drained", func() (bool, string) {
		got := s.entries(t, acct)
		h, _, ok := holdOf(t, store, acct)
		return !ok && slices.Equal(got, want(head, next)), fmt.Sprintf("entries %q, hold %+v", got, h)
	})
}
