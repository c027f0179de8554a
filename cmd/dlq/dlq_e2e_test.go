//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/browse"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// These tests run the built dlq binary, as an operator would, against the
// stack deployed by `make deploy-local`. The stack is shared with other
// tests and its replay schedule runs every minute, so each test uses order
// ids of its own and asserts about its own messages only. Replays stream
// queues the test creates (the schedule never touches them) into the real
// source queue, so the deployed consumer invoices the orders.

var dlqBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dlq-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dlqBinary = filepath.Join(dir, "dlq")
	if out, err := exec.Command("go", "build", "-o", dlqBinary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build dlq: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sampleLane is the sample stack's lane that these tests drive; the
// local stack holds the example's payments lane beside it.
const sampleLane = emulatortest.SampleLane

type lane struct {
	stack map[string]string // the stack's outputs, as make deploy-local wrote them (flat)
	out   map[string]string // the sample lane's, by lane output key (outDLQ...)
	sqs   *sqs.Client
	run   string // unique to this test run, in every order id
}

func deployedLane(t *testing.T) *lane {
	t.Helper()
	stack := emulatortest.Outputs(t)
	a := &app{flags: globalFlags{lane: sampleLane}}
	res, err := a.pickLane(map[string]map[string]string{"": stack}, "the local stack's outputs")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range laneKeys {
		if res.values[k] == "" {
			t.Fatalf("the local stack's outputs lack lane %s's %s: %v", sampleLane, k, stack)
		}
	}
	emulatortest.NewTaxAdmin(t, emulatortest.Output(t, stack, "TaxServiceAdminUrl")).SetMode("up")
	return &lane{stack: stack, out: res.values, sqs: sqs.NewFromConfig(emulatortest.Config(t)), run: fmt.Sprintf("D%d", time.Now().UnixNano()%1e8)}
}

// dlq runs the binary on the sample lane (--lane orders) of the local
// stack, whose outputs file it finds in HOMING_OUTPUTS (make e2e sets it).
func (l *lane) dlq(t *testing.T, args ...string) result {
	t.Helper()
	return runDLQ(t, nil, append([]string{"--lane", sampleLane}, args...)...)
}

// runDLQ runs the binary with args, in the test's environment without
// the variables named in unset.
func runDLQ(t *testing.T, unset []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(dlqBinary, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(unset, k)
	})
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run dlq: %v", err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func (l *lane) orderBody(t *testing.T, id string) string {
	t.Helper()
	var sample events.SQSEvent
	b, err := os.ReadFile("../../events/order-valid.json")
	if err == nil {
		err = json.Unmarshal(b, &sample)
	}
	if err != nil || len(sample.Records) == 0 {
		t.Fatalf("the sample order: %v", err)
	}
	return strings.Replace(sample.Records[0].Body, "ORD-2026-000123", id, 1)
}

func (l *lane) send(t *testing.T, url, body string, attrs map[string]types.MessageAttributeValue) {
	t.Helper()
	if _, err := l.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs}); err != nil {
		t.Fatalf("send to %s: %v", url, err)
	}
}

// dropCopies deletes every second copy of a body in url: an SDK retry of
// a send whose answer was lost (the emulator closed the connection under
// load) leaves one, and a test that counts what it sent would count it.
func (l *lane) dropCopies(t *testing.T, url string) {
	t.Helper()
	seen := map[string]bool{}
	copies, err := browse.All(context.Background(), l.sqs, url, browse.Options{Hide: 10}, func(m types.Message) bool {
		body := aws.ToString(m.Body)
		copied := seen[body]
		seen[body] = true
		return copied
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range copies {
		if _, err := l.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatalf("delete a copy from %s: %v", url, err)
		}
	}
}

// remove deletes this run's messages from url.
func (l *lane) remove(t *testing.T, url string) {
	mine, err := browse.All(context.Background(), l.sqs, url, browse.Options{Hide: 10}, func(m types.Message) bool {
		return strings.Contains(aws.ToString(m.Body), l.run)
	})
	if err != nil {
		t.Error(err)
	}
	for _, m := range mine {
		if _, err := l.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Error(err)
		}
	}
}

// inspect and peek on the lane's invalid queue, with a message of this run
// that the consumer's invalid lane would have published; --json parsed.
func TestE2EInspectAndPeek(t *testing.T) {
	l := deployedLane(t)
	id := "ORD-" + l.run + "-INV"
	attrs, err := envelope.Pack(map[string]types.MessageAttributeValue{"traceparent": {DataType: aws.String("String"), StringValue: aws.String("00-" + l.run + "-01")}},
		invalid.AttributeName, invalid.Metadata{Reason: "invalid-tax-id", Detail: "check digits", Consumer: "invoice", At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	l.send(t, l.out[outInvalid], l.orderBody(t, id), attrs)
	t.Cleanup(func() { l.remove(t, l.out[outInvalid]) })

	// Sampling is approximate (a receive may come back short, and a
	// message released a moment ago may not be visible yet): poll.
	var rep inspectReport
	emulatortest.Eventually(t, 15*time.Second, func() (bool, string) {
		r := l.dlq(t, "--json", "inspect", "--queue", "invalid", "--sample", "1000")
		r.want(t, exitOK)
		rep = decode[inspectReport](t, r)
		return rep.Sample.ByReason["invalid-tax-id"] >= 1, fmt.Sprintf("sample %+v", rep.Sample)
	})
	roles := []string{}
	for _, q := range rep.Queues {
		roles = append(roles, q.Role)
	}
	if rep.Sampled != "invalid" || !slices.Equal(roles, []string{"invalid", "dlq", "parking"}) || rep.Queues[0].URL != l.out[outInvalid] {
		t.Fatalf("report = %+v", rep)
	}
	if st := rep.Sample; !st.Approximate || st.Size < 1 || st.OldestSentAt.IsZero() || st.ExpiresInSeconds <= 0 {
		t.Fatalf("sample = %+v", st)
	}

	var mine *peekedMessage
	emulatortest.Eventually(t, 15*time.Second, func() (bool, string) {
		r := l.dlq(t, "--json", "peek", "--queue", "invalid", "-n", "100")
		r.want(t, exitOK)
		msgs := decode[peekReport](t, r).Messages
		for i := range msgs {
			if msgs[i].Key == id {
				mine = &msgs[i]
			}
		}
		return mine != nil, fmt.Sprintf("%d messages peeked, none of order %s", len(msgs), id)
	})
	if mine.Reason != "invalid-tax-id" || mine.Invalid == nil || mine.Invalid.Detail != "check digits" ||
		mine.Attributes["traceparent"] != "00-"+l.run+"-01" || !strings.Contains(mine.Body, id) {
		t.Fatalf("my message = %+v", mine)
	}
	// Released at once (nothing deleted): a table peek shows it again.
	emulatortest.Eventually(t, 15*time.Second, func() (bool, string) {
		r := l.dlq(t, "peek", "--queue", "invalid", "-n", "100", "--width", "40")
		r.want(t, exitOK)
		return strings.Contains(r.stdout, id), "the table peek does not show " + id + ":\n" + r.stdout
	})
}

// dlq finds the deployed lane in CDK's outputs file (one or more stacks),
// in the stack by name (CloudFormation DescribeStacks on the emulator, from
// --stack or HOMING_STACK), and in the flat file of HOMING_OUTPUTS.
func TestE2EWhereTheLaneIs(t *testing.T) {
	l := deployedLane(t)
	cdk := filepath.Join(t.TempDir(), "cdk-outputs.json")
	b, err := json.Marshal(map[string]any{"Homing": l.stack, "Unrelated": map[string]string{"BucketName": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cdk, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		unset []string
		args  []string
	}{
		{"cdk outputs file", nil, []string{"--outputs-file", cdk}},
		{"cdk outputs file, its stack", nil, []string{"--outputs-file", cdk, "--stack", "Homing"}},
		{"stack by name", nil, []string{"--stack", "Homing"}},
		{"stack by name, HOMING_STACK", []string{envOutputs}, []string{}},
		{"flat file, HOMING_OUTPUTS", nil, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := c.unset
			args := append(slices.Clone(c.args), "--lane", sampleLane, "-o", "json", "inspect")
			if slices.Contains(c.unset, envOutputs) {
				t.Setenv(envStack, "Homing")
			}
			r := runDLQ(t, env, args...)
			r.want(t, exitOK)
			if rep := decode[inspectReport](t, r); rep.Sampled != "dlq" || rep.Queues[0].URL != l.out[outDLQ] || rep.Queues[0].RetentionSeconds <= 0 || len(rep.Queues) != 3 {
				t.Fatalf("report = %+v", rep)
			}
		})
	}
	runDLQ(t, nil, "--stack", "NoSuchStack", "inspect").want(t, exitError, "read the outputs of stack NoSuchStack with CloudFormation DescribeStacks")
	// The local stack holds two lanes: without --lane, the error lists them.
	runDLQ(t, []string{envLane}, "--stack", "Homing", "inspect").want(t, exitUsage, "stack Homing has 2 lanes: orders, payments — pass one of them with --lane NAME")
	r := runDLQ(t, nil, "--outputs-file", cdk, "--lane", "payments", "-o", "json", "inspect", "--queue", "parking")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); rep.Queues[0].URL != l.stack[settings.OutputID("payments", outParking)] || !strings.HasSuffix(rep.Queues[0].URL, ".fifo") {
		t.Fatalf("the payments lane's parking queue: report = %+v", rep)
	}
}

func TestE2ERefusesTheSourceQueue(t *testing.T) {
	l := deployedLane(t)
	src := l.out[outSource]
	for _, args := range [][]string{
		{"inspect", "--dlq-url", src},
		{"peek", "--dlq-url", src},
		{"replay", "--dry-run", "--dlq-url", src, "--route", "e2e-" + l.run},
	} {
		l.dlq(t, args...).want(t, exitRefused, "refusing to", src, "RedrivePolicy (maxReceiveCount 3", "--force")
	}
}

// On-demand replay of this run's orders from a queue of the test's own into
// the real source queue: a dry run, then a run; the consumer invoices them;
// audit shows the ledger history and the invoice, and the run.
func TestE2EReplayAndAudit(t *testing.T) {
	l := deployedLane(t)
	q := sqs.NewFromConfig(emulatortest.Config(t))
	dlqURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "dlq"))
	parkingURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "parking"))
	ids := []string{"ORD-" + l.run + "-1", "ORD-" + l.run + "-2"}
	for _, id := range append(ids, "ORD-"+l.run+"-OTHER") {
		l.send(t, dlqURL, l.orderBody(t, id), nil)
	}
	l.dropCopies(t, dlqURL)
	route := "e2e-" + l.run
	base := []string{"--dlq-url", dlqURL, "--parking-url", parkingURL, "replay", "--route", route, "--order", ids[0], "--order", ids[1]}
	time.Sleep(3 * time.Second) // the local backoff before a first replay is up to 2 s

	fifo, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "other")+".fifo")
	l.dlq(t, append(base, "--yes", "--to", fifo)...).want(t, exitUsage, "is a FIFO queue but")
	l.dlq(t, append(base, "--dry-run", "--health-url", "http://127.0.0.1:1")...).want(t, exitIncomplete, "closed gates held every route")
	l.dlq(t, base...).want(t, exitRefused, "stdin is not a terminal")

	// A receive whose answer the SDK lost under load (its connection
	// closed; the SDK receives again) leaves messages in flight for the
	// decision window: wait until the three are visible again.
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		visible, inFlight, _ := emulatortest.Depth(t, q, dlqURL)
		return visible == 3, fmt.Sprintf("%d visible, %d in flight", visible, inFlight)
	})
	r := l.dlq(t, append([]string{"--json"}, append(base, "--dry-run")...)...)
	r.want(t, exitOK)
	dry := decode[replay.Summary](t, r)
	if !dry.DryRun || dry.Total.Replayed != 2 || dry.Total.Skipped != 1 || dry.Routes[0].Route != route || len(dry.Filter.Keys) != 2 {
		t.Fatalf("dry run = %+v", dry)
	}
	if strings.Contains(r.stderr, "\r") || !strings.Contains(r.stderr, "route "+route+": examined") {
		t.Fatalf("a pipe gets one line per route, no progress bar: %q", r.stderr)
	}

	// The shared tax stand-in may be down for another package's test: run
	// until both orders are replayed.
	var runIDs []string
	replayed := 0
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		r := l.dlq(t, append([]string{"--json"}, append(base, "--yes", "--max", "10", "--rate", "5")...)...)
		if r.code != exitOK && r.code != exitIncomplete {
			t.Fatalf("replay: exit %d: %s", r.code, r.stderr)
		}
		s := decode[replay.Summary](t, r)
		replayed += s.Total.Replayed
		if s.Total.Replayed > 0 {
			runIDs = append(runIDs, s.RunID)
		}
		return replayed == 2 && r.code == exitOK, fmt.Sprintf("replayed %d; last run exit %d, gates %s", replayed, r.code, gatesText(s))
	})

	for _, id := range ids {
		var a keyAudit
		emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
			r := l.dlq(t, "--json", "audit", "--key", id)
			r.want(t, exitOK)
			a = decode[keyAudit](t, r)
			return a.Completion.Completed, fmt.Sprintf("completion of %s: %+v", id, a.Completion)
		})
		if a.HistoryKey != "order#"+id || a.Completion.Result == "" || a.Completion.Key != "invoice#"+id {
			t.Fatalf("audit of %s = %+v", id, a)
		}
		if i := slices.IndexFunc(a.History, func(r record.Message) bool { return r.State == record.Sent && slices.Contains(runIDs, r.RunID) }); i < 0 || a.History[i].ReplayCount != 1 || a.History[i].Route != route {
			t.Fatalf("history of %s = %+v, want SENT by one of %v", id, a.History, runIDs)
		}
		r := l.dlq(t, "audit", "--order", id) // --order: the alias of --key
		r.want(t, exitOK)
		if !strings.Contains(r.stdout, "SENT (replayed)") || !strings.Contains(r.stdout, "Completed: result "+a.Completion.Result) {
			t.Fatalf("audit table:\n%s", r.stdout)
		}
	}

	r = l.dlq(t, "--json", "audit", "--runs", "100")
	r.want(t, exitOK)
	runs := decode[[]replay.Summary](t, r)
	i := slices.IndexFunc(runs, func(s replay.Summary) bool { return s.RunID == runIDs[len(runIDs)-1] })
	if i < 0 || runs[i].Routes[0].Route != route || runs[i].DryRun {
		t.Fatalf("run %s not among the last %d runs", runIDs[len(runIDs)-1], len(runs))
	}
	if r := l.dlq(t, "audit", "--runs", "3"); r.code != exitOK || !strings.Contains(r.stdout, "STARTED") {
		t.Fatalf("audit --runs table: %+v", r)
	}
	// The order outside the filter stayed in the queue.
	if v, _, _ := emulatortest.Depth(t, q, dlqURL); v != 1 {
		t.Fatalf("%d messages left in the test's DLQ, want 1", v)
	}
}

// A parked order that exhausted its replays comes back with --from parking
// --reset-count and is invoiced.
func TestE2EReplayFromParkingWithReset(t *testing.T) {
	l := deployedLane(t)
	q := sqs.NewFromConfig(emulatortest.Config(t))
	dlqURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "dlq"))
	parkingURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "parking"))
	id := "ORD-" + l.run + "-PARKED"
	attrs, err := envelope.Pack(nil, envelope.ReplayAttributeName, replay.Metadata{
		ReplayCount: 3, OriginalMessageID: "orig-" + l.run, Reason: replay.ReasonReplayExhausted,
		FirstDeadLetteredAt: time.Now().Add(-time.Hour), LastReplayAt: time.Now().Add(-30 * time.Minute), ParkedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	l.send(t, parkingURL, l.orderBody(t, id), attrs)
	l.dropCopies(t, parkingURL)
	time.Sleep(3 * time.Second)
	base := []string{"--json", "--dlq-url", dlqURL, "--parking-url", parkingURL, "replay", "--route", "e2e-" + l.run, "--from", "parking", "--order", id}

	l.dlq(t, base...).want(t, exitUsage, "--from parking needs --reset-count")
	replayed := 0
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		r := l.dlq(t, append(base, "--reset-count", "--yes")...)
		s := decode[replay.Summary](t, r)
		replayed += s.Total.Replayed
		if s.Total.ParkedTotal() > 0 {
			t.Fatalf("parked again despite --reset-count: %+v", s)
		}
		return replayed == 1, fmt.Sprintf("exit %d, replayed %d, routes %+v", r.code, replayed, s.Routes)
	})
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		a := decode[keyAudit](t, l.dlq(t, "--json", "audit", "--key", id))
		return a.Completion.Completed, fmt.Sprintf("completion %+v", a.Completion)
	})
}
