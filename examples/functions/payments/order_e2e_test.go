//go:build e2e

package main

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
)

// consumerEnv is the deployed consumer's environment.
func (s *stack) consumerEnv(t *testing.T) map[string]string {
	t.Helper()
	fn := s.lane(t, settings.OutputConsumerFunctionName)
	out, err := s.lambda.GetFunctionConfiguration(context.Background(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(fn)})
	if err != nil {
		t.Fatalf("configuration of %s: %v", fn, err)
	}
	if out.Environment == nil {
		return map[string]string{}
	}
	return out.Environment.Variables
}

// parks is the lane's store of parked accounts, as its consumer writes it:
// in its LEDGER_TABLE (the construct's default on a FIFO lane is to keep
// each account's order, GROUP_ORDER hold).
func (s *stack) parks(t *testing.T) fifo.Store {
	t.Helper()
	env := s.consumerEnv(t)
	if env[settings.GroupOrder.Env] != string(fifo.Hold) || env[settings.ParksTable.Env] == "" {
		t.Fatalf("the lane's consumer has %s=%q, %s=%q; want %q and its ledger (the construct's default on a FIFO lane)",
			settings.GroupOrder.Env, env[settings.GroupOrder.Env], settings.ParksTable.Env, env[settings.ParksTable.Env], fifo.Hold)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dynamo.NewGroupStore(dynamodb.NewFromConfig(cfg), env[settings.ParksTable.Env])
}

// maxReceives is the deployed consumer's MAX_RECEIVES: a head delivered
// this often parks its account.
func (s *stack) maxReceives(t *testing.T) int {
	t.Helper()
	env := s.consumerEnv(t)
	r := settings.NewReader(func(k string) string { return env[k] })
	n := r.Int(settings.MaxReceives)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// parkOf returns the park of group, if it is parked.
func parkOf(t *testing.T, store fifo.Store, group string) (fifo.Park, bool) {
	t.Helper()
	ps, err := store.Parked(context.Background(), []string{group})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ps[group]
	return p, ok
}

var (
	dlqOnce sync.Once
	dlqPath string
	dlqErr  error
	// dlqMu runs one dlq at a time: a release scans the parking queue,
	// hiding the other groups' records while it does, so that a release
	// of another group meanwhile would not see its own.
	dlqMu sync.Mutex
)

// dlq runs the operator CLI (built once from this workspace) on the
// deployed lane and returns its output.
func dlq(t *testing.T, args ...string) string {
	t.Helper()
	out, code := dlqExit(t, args...)
	if code != 0 {
		t.Fatalf("dlq %s: exit status %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// dlqExit runs dlq with args on the lane and returns its output and exit
// status.
func dlqExit(t *testing.T, args ...string) (string, int) {
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
			dlqErr = fmt.Errorf("%w: %s", err, out)
		}
	})
	if dlqErr != nil {
		t.Fatalf("build dlq: %v", dlqErr)
	}
	dlqMu.Lock()
	defer dlqMu.Unlock()
	cmd := exec.Command(dlqPath, append(args, "--lane", Lane)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var exit *exec.ExitError
	if err := cmd.Run(); errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	} else if err != nil {
		t.Fatalf("dlq %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), 0
}

// parked counts the parking queue's records of group it sees, without
// taking them (hidden for 10 s should the test stop meanwhile, then shown
// again), under dlqMu: a scan hides the other groups' records, as a
// release's does. SQS returns none of a group behind one in flight: a
// group with records there shows one at least.
func (s *stack) parked(t *testing.T, group string) int {
	t.Helper()
	dlqMu.Lock()
	defer dlqMu.Unlock()
	ctx := context.Background()
	url := aws.String(s.lane(t, settings.OutputParkingQueueURL))
	var receipts []string
	defer func() {
		for _, r := range receipts {
			_, _ = s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: aws.String(r), VisibilityTimeout: 0})
		}
	}()
	n := 0
	for empty := 0; empty < 2; {
		out, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			t.Fatalf("read the parking queue: %v", err)
		}
		if len(out.Messages) == 0 {
			empty++
		}
		for _, m := range out.Messages {
			receipts = append(receipts, aws.ToString(m.ReceiptHandle))
			if m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)] == group {
				n++
			}
		}
	}
	return n
}

// TestAPoisonHeadIsParkedAndReleased shows a head that can never succeed
// on the payments lane: an account frozen for good, whose first payment
// fails on every delivery. It waits in the source under its backoff, the
// account's next payment behind it, neither posted nor dead-lettered,
// until its MAX_RECEIVES-th delivery parks the account: the head goes to
// the parking queue (delivered-too-often) and the account's later
// payments, the one waiting and one sent after the park, follow it there
// in order. `dlq groups` lists the account with its reason, its head's
// failure class (ledger-frozen) and the three records waiting; once the account is thawed, `dlq groups release` sends
// them back, and the consumer posts the three in order, exactly once, and
// ends the park.
func TestAPoisonHeadIsParkedAndReleased(t *testing.T) {
	t.Parallel()
	s := deployed(t)
	ctx := context.Background()
	store := s.parks(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	acct := "X-" + run
	pay := func(n int) string { return fmt.Sprintf("PAY-%s-%d", acct, n) }
	if err := s.ledger.Freeze(ctx, acct, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.ledger.Freeze(ctx, acct, false) })

	// Backoffs of 30 s, 1, 2, 4... minutes (x0.75..1) before deliveries
	// 2, 3, 4, 5...: the MAX_RECEIVES-th comes within their sum.
	n := s.maxReceives(t)
	within := time.Duration(1<<(n-1)-1)*30*time.Second + 2*time.Minute
	sent := time.Now()
	s.sendBatch(t, acct, paymentBody(pay(1), acct, "3.00"), paymentBody(pay(2), acct, "4.00"))
	eventually(t, within, "the account parked behind its head", func() (bool, string) {
		p, ok := parkOf(t, store, acct)
		if got := s.entries(t, acct); len(got) != 0 {
			t.Fatalf("entries %q of a frozen account", got)
		}
		return ok && p.Reason == fifo.ReasonDeliveredTooOften && p.Parked == 2, fmt.Sprintf("park %+v (%t)", p, ok)
	})
	t.Logf("parked %s after the head's delivery %d, %s after it was sent", fifo.ReasonDeliveredTooOften, n, time.Since(sent).Round(time.Second))
	s.send(t, paymentBody(pay(3), acct, "5.00"), acct)
	eventually(t, time.Minute, "the payment sent after the park parked behind it", func() (bool, string) {
		p, _ := parkOf(t, store, acct)
		return p.Parked == 3, fmt.Sprintf("park %+v", p)
	})
	p, _ := parkOf(t, store, acct)
	if p.Queue != "parking" || p.Waiting() != 3 || p.Releasing != "" {
		t.Fatalf("park %+v: want the head in the parking queue, 3 records waiting, no release", p)
	}
	if got := s.parked(t, acct); got == 0 {
		t.Fatal("the parking queue holds none of the account's payments")
	}
	// The head's failure record (FAILURE_RECORDS, on by default), written
	// at its last delivery before the park: the ledger's class.
	list := dlq(t, "groups")
	line := ""
	for _, l := range strings.Split(list, "\n") {
		if strings.HasPrefix(l, acct+" ") {
			line = l
		}
	}
	if !strings.Contains(line, fifo.ReasonDeliveredTooOften) || !strings.Contains(line, "ledger-frozen (") {
		t.Fatalf("dlq groups lists:\n%s\nwant %s, parked %s, its head failed ledger-frozen", list, acct, fifo.ReasonDeliveredTooOften)
	}
	if dls := s.deadLettersOf(t, acct); len(dls) != 0 {
		t.Fatalf("%d dead letters of the account: the redrive is a backstop the consumer stays ahead of", len(dls))
	}

	if err := s.ledger.Freeze(ctx, acct, false); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	out := dlq(t, "groups", "release", acct, "--yes")
	t.Logf("dlq groups release took %s:\n%s", time.Since(released).Round(time.Millisecond), out)
	if _, ok := parkOf(t, store, acct); ok {
		t.Fatalf("the account is still parked after dlq groups release:\n%s", out)
	}
	if got := s.entries(t, acct); !slices.Equal(got, want(pay(1), pay(2), pay(3))) {
		t.Fatalf("entries %q after the release, want the three payments in order", got)
	}
	if got := s.parked(t, acct); got != 0 {
		t.Errorf("the parking queue still holds %d of the account's records", got)
	}
	// Exactly once: a late duplicate of the head posts nothing; the
	// payment after it is posted next.
	s.sendBatch(t, acct, paymentBody(pay(1), acct, "3.00"), paymentBody(pay(4), acct, "6.00"))
	eventually(t, time.Minute, "the payment after a duplicate posted", func() (bool, string) {
		got := s.entries(t, acct)
		return slices.Equal(got, want(pay(1), pay(2), pay(3), pay(4))), fmt.Sprintf("%q", got)
	})
}
