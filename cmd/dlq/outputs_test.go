package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homingdlq/homing/replay"
)

// Queues outside the fixture's account (000000000000) and region
// (us-east-1).
const (
	otherAccountQueue = "https://sqs.us-east-1.amazonaws.com/999999999999/orders"
	otherRegionQueue  = "https://sqs.eu-west-1.amazonaws.com/000000000000/orders"
)

// forget forgets the SQS calls made so far (the test's own sends).
func (f *fixture) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = map[string]int{}
}

// movedNothing fails the test when the run sent anything since forget,
// took a dead letter out of the DLQ (deadLetters put three there) or sent
// any to a queue elsewhere.
func (f *fixture) movedNothing(r result) {
	f.t.Helper()
	if n := f.callsOf("SendMessageBatch"); n != 0 {
		f.t.Fatalf("%d SendMessageBatch call(s), want none\nstderr: %s", n, r.stderr)
	}
	if n := f.visible(f.dlq); n != 3 {
		f.t.Fatalf("%d dead letters left in the DLQ, want 3\nstderr: %s", n, r.stderr)
	}
	for url, standIn := range f.foreign {
		if n := f.visible(standIn); n != 0 {
			f.t.Fatalf("%d message(s) sent to %s", n, url)
		}
	}
}

// An outputs file (or a flag) that names another destination than the
// lane's replay function does, or one outside the DLQ's account and
// region, is refused before anything moves, and says which values
// disagree.
func TestOutputsFileCannotRedirectReplays(t *testing.T) {
	tests := []struct {
		name   string
		plant  map[string]string // outputs of the file, over the lane's
		args   []string
		code   int
		stderr []string
	}{
		{"a source in another account", map[string]string{outSource: otherAccountQueue},
			[]string{"replay", "--yes"}, exitError,
			[]string{"the source queue of stack Homing in outputs file", "(output OrdersSourceQueueUrl) \"" + otherAccountQueue + "\" is in account 999999999999, region us-east-1, and the queue replayed from", "in account 000000000000, region us-east-1"}},
		{"a source in another account, no function to read", map[string]string{outSource: otherAccountQueue},
			[]string{"replay", "--yes", "--replay-function", ""}, exitError,
			[]string{"is in account 999999999999, region us-east-1, and the queue replayed from", "in account 000000000000, region us-east-1"}},
		{"a source in another account, no function in the file", map[string]string{outSource: otherAccountQueue, outReplayFunction: ""},
			[]string{"replay", "--yes"}, exitError,
			[]string{"the source queue of stack Homing in outputs file", "is in account 999999999999"}},
		{"a source in another region, no function to read", map[string]string{outSource: otherRegionQueue},
			[]string{"replay", "--yes", "--replay-function", ""}, exitError,
			[]string{"is in account 000000000000, region eu-west-1"}},
		{"a parking queue in another account", map[string]string{outParking: otherAccountQueue + "-parking"},
			[]string{"replay", "--yes"}, exitError,
			[]string{"the parking queue of stack Homing in outputs file", "(output OrdersParkingQueueUrl)", "is in account 999999999999"}},
		{"another parking queue of the same account", map[string]string{outParking: "https://sqs.us-east-1.amazonaws.com/000000000000/orders-elsewhere"},
			[]string{"replay", "--yes"}, exitError,
			[]string{"(output OrdersParkingQueueUrl) names \"https://sqs.us-east-1.amazonaws.com/000000000000/orders-elsewhere\" as the lane's parking queue, but the lane's replay function replay-fn names \"https://sqs.us-east-1.amazonaws.com/000000000000/orders-parking\""}},
		{"another source of the same account", map[string]string{outSource: "https://sqs.us-east-1.amazonaws.com/000000000000/orders-elsewhere"},
			[]string{"replay", "--yes"}, exitError,
			[]string{"orders-elsewhere\" as the lane's source queue, but the lane's replay function replay-fn names \"https://sqs.us-east-1.amazonaws.com/000000000000/orders\""}},
		{"a --source-url against the function's route", nil,
			[]string{"--source-url", "https://sqs.us-east-1.amazonaws.com/000000000000/orders-elsewhere", "replay", "--yes"}, exitError,
			[]string{"--source-url names \"https://sqs.us-east-1.amazonaws.com/000000000000/orders-elsewhere\" as the lane's source queue", "pass --to URL"}},
		{"a --source-url in another account", nil,
			[]string{"--source-url", otherAccountQueue, "replay", "--yes"}, exitError,
			[]string{"the source queue of --source-url \"" + otherAccountQueue + "\" is in account 999999999999"}},
		{"--to in another account", nil,
			[]string{"replay", "--yes", "--to", otherAccountQueue}, exitUsage,
			[]string{"--to \"" + otherAccountQueue + "\" is in account 999999999999, region us-east-1", "pass --to-other-account"}},
		{"--to in another region", nil,
			[]string{"replay", "--yes", "--to", otherRegionQueue}, exitUsage,
			[]string{"region eu-west-1", "pass --to-other-account"}},
		{"a ledger table other than the function's", map[string]string{outLedger: "planted-ledger"},
			[]string{"replay", "--yes"}, exitError,
			[]string{"names table \"planted-ledger\", but the lane's replay function uses \"ledger\" (LEDGER_TABLE): refusing a run on another table"}},
		{"a ledger table in another account, no function to read", map[string]string{outLedger: "arn:aws:dynamodb:us-east-1:999999999999:table/ledger"},
			[]string{"replay", "--yes", "--replay-function", ""}, exitError,
			[]string{"table \"arn:aws:dynamodb:us-east-1:999999999999:table/ledger\" is in account 999999999999, region us-east-1, not in the account 000000000000"}},
		{"--to-other-account without --to", nil,
			[]string{"replay", "--yes", "--to-other-account"}, exitUsage,
			[]string{"--to-other-account works only with --to"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.elsewhere(otherAccountQueue)
			f.elsewhere(otherAccountQueue + "-parking")
			f.elsewhere(otherRegionQueue)
			f.queue("orders-elsewhere", nil)
			f.deadLetters()
			f.forget()
			f.env["LEDGER_TABLE"] = "ledger" // as the construct sets them
			f.env["IDEMPOTENCY_TABLE"] = "idempotency"
			for k, v := range tt.plant {
				f.outputs[k] = v
			}
			f.writeOutputs()
			r := f.run(tt.args...)
			r.want(t, tt.code, tt.stderr...)
			f.movedNothing(r)
		})
	}
}

// --to in another account needs --to-other-account; the confirmation then
// names the account and region replays go to, and with --yes stderr does.
func TestReplayToAnotherAccount(t *testing.T) {
	f := newFixture(t)
	f.elsewhere(otherAccountQueue)
	f.deadLetters()
	f.forget()
	f.stdinTTY = true
	f.stdin = "n\n"
	r := f.run("replay", "--to", otherAccountQueue, "--to-other-account")
	r.want(t, exitRefused, "Replay the default cap messages from "+f.dlq+" to "+otherAccountQueue+
		" (account 999999999999, region us-east-1, not the account 000000000000, region us-east-1 of the queue replayed from;")
	f.movedNothing(r)

	f.stdinTTY = false
	r = f.run("--json", "replay", "--yes", "--to", otherAccountQueue, "--to-other-account", "--key", "ORD-1")
	r.want(t, exitOK, "dlq: replays go to "+otherAccountQueue+" in account 999999999999, region us-east-1, not the account 000000000000")
	if n := f.visible(f.foreign[otherAccountQueue]); n != 1 {
		t.Fatalf("%d message(s) in the queue of the other account, want 1", n)
	}
	decode[replay.Summary](t, r) // stdout stays JSON

	// In the DLQ's own account, the confirmation names it too.
	f.stdinTTY = true
	f.stdin = "n\n"
	f.run("replay").want(t, exitRefused, "to "+f.source+" (account 000000000000, region us-east-1; parking "+f.parking)
}

// A URL with credentials is refused wherever it comes from (an outputs
// file, a stack, the tags, a flag), and neither its user nor its password
// is ever printed.
func TestNoCredentialShown(t *testing.T) {
	const user, pass = "AKIAEXAMPLEUSER", "s3cr3t-Pa55word"
	withCreds := "https://" + user + ":" + pass + "@sqs.us-east-1.amazonaws.com/000000000000/orders"
	withToken := "https://sqs.us-east-1.amazonaws.com/000000000000/orders?X-Amz-Security-Token=" + pass
	tests := []struct {
		name   string
		plant  map[string]string
		args   []string
		code   int
		stderr []string
	}{
		{"the source in the outputs file", map[string]string{outSource: withCreds}, []string{"replay", "--yes"}, exitError,
			[]string{`(output OrdersSourceQueueUrl) "https://sqs.us-east-1.amazonaws.com/000000000000/orders": not a queue URL: it has an '@' in it`}},
		{"the DLQ in the outputs file", map[string]string{outDLQ: withCreds}, []string{"inspect"}, exitError,
			[]string{"(output OrdersDeadLetterQueueUrl)"}},
		{"a token in the outputs file", map[string]string{outParking: withToken}, []string{"peek", "--queue", "parking"}, exitError,
			[]string{`(output OrdersParkingQueueUrl) "https://sqs.us-east-1.amazonaws.com/000000000000/orders?…": not a queue URL`}},
		{"--to", nil, []string{"replay", "--yes", "--to", withCreds}, exitUsage,
			[]string{`--to "https://sqs.us-east-1.amazonaws.com/000000000000/orders": not a queue URL`}},
		{"--dlq-url", nil, []string{"--dlq-url", withCreds, "inspect"}, exitUsage, []string{"--dlq-url"}},
		{"--source-url", nil, []string{"--source-url", withToken, "replay", "--dry-run"}, exitUsage, []string{"--source-url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.deadLetters()
			f.forget()
			for k, v := range tt.plant {
				f.outputs[k] = v
			}
			f.writeOutputs()
			r := f.run(tt.args...)
			r.want(t, tt.code, tt.stderr...)
			f.movedNothing(r)
			for _, secret := range []string{user, pass} {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Fatalf("%q printed:\nstdout: %s\nstderr: %s", secret, r.stdout, r.stderr)
				}
			}
		})
	}

	// A stack's outputs and the tags are checked as a file's are.
	f := newFixture(t)
	f.outputs[outDLQ] = withCreds
	r := f.runRaw("--stack", "Homing", "inspect")
	r.want(t, exitError, "stack Homing (output OrdersDeadLetterQueueUrl)")
	f = newFixture(t)
	f.tagLane()
	f.urls["orders-dlq"] = withCreds
	r2 := f.runRaw("--lane", "orders", "inspect")
	r2.want(t, exitError, "the SQS queue tagged homing:lane=orders, homing:role=dead-letter")
	for _, out := range []string{r.stdout, r.stderr, r2.stdout, r2.stderr} {
		if strings.Contains(out, pass) || strings.Contains(out, user) {
			t.Fatalf("credentials printed: %s", out)
		}
	}
}

// Every value of an outputs file is checked as the flag it stands for,
// before any AWS call, and a refusal names the file and the output.
func TestOutputsFileValuesCheckedAsFlags(t *testing.T) {
	long := "https://sqs.us-east-1.amazonaws.com/000000000000/" + strings.Repeat("q", 100_000)
	tests := []struct {
		name   string
		key    string
		value  string
		stderr []string
	}{
		{"a control byte in a queue URL", outDLQ, "https://sqs.us-east-1.amazonaws.com/000000000000/orders\x1b[2J", []string{`(output OrdersDeadLetterQueueUrl) "https://sqs.us-east-1.amazonaws.com/000000000000/orders\x1b[2J": not a queue URL`}},
		{"a newline in a queue URL", outSource, "https://sqs.us-east-1.amazonaws.com/000000000000/orders\nfake", []string{`(output OrdersSourceQueueUrl) "https://sqs.us-east-1.amazonaws.com/000000000000/orders\nfake": not a queue URL`}},
		{"an overlong queue URL", outParking, long, []string{"(output OrdersParkingQueueUrl)", "… (100049 bytes): not a queue URL"}},
		{"another scheme", outInvalid, "ftp://sqs.us-east-1.amazonaws.com/000000000000/orders", []string{"(output OrdersInvalidQueueUrl)", "not a queue URL"}},
		{"a file URL", outDLQ, "file:///000000000000/orders", []string{"(output OrdersDeadLetterQueueUrl)", "not a queue URL"}},
		{"an escape in a queue URL", outDLQ, "https://sqs.us-east-1.amazonaws.com/000000000000/%6frders", []string{"not a queue URL"}},
		{"a table name with a space", outLedger, "led ger", []string{`(output OrdersLedgerTableName) "led ger": not a DynamoDB table`}},
		{"a table ARN of no partition", outIdempotency, "arn:x:dynamodb:us-east-1:123456789012:table/idem", []string{"(output OrdersIdempotencyTableName)", "not a DynamoDB table"}},
		{"an overlong table name", outLedger, strings.Repeat("t", 256), []string{"(output OrdersLedgerTableName)", "… (256 bytes): not a DynamoDB table"}},
		{"a function name with a control byte", outReplayFunction, "replay-fn\x00", []string{`(output OrdersReplayFunctionName) "replay-fn\x00": not a Lambda function`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.noAWS = true
			f.outputs[tt.key] = tt.value
			f.writeOutputs()
			r := f.run("inspect")
			r.want(t, exitError, append([]string{"outputs file " + f.file}, tt.stderr...)...)
			if len(r.stderr) > 1000 {
				t.Fatalf("stderr of %d bytes", len(r.stderr))
			}
		})
	}
}

// The outputs file of the current directory, which no flag names, is
// announced on stderr with its absolute path before anything moves, by
// every command; stdout stays the report.
func TestImplicitOutputsFileIsAnnounced(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	f.forget()
	cwd := t.TempDir()
	t.Chdir(cwd)
	if err := os.Mkdir(".local", 0o755); err != nil {
		t.Fatal(err)
	}
	f.writeFile(defaultOutputsFile, f.outputs)
	announced := "dlq: using outputs file " + filepath.Join(cwd, defaultOutputsFile) + " (found in the current directory; pass --outputs-file to name one)\n"
	for _, args := range [][]string{{"inspect"}, {"peek"}, {"audit", "--runs", "1"}, {"replay", "--dry-run"}} {
		r := f.runRaw(append([]string{"--json"}, args...)...)
		r.want(t, exitOK)
		if !strings.HasPrefix(r.stderr, announced) || strings.Contains(r.stdout, "outputs file") {
			t.Fatalf("dlq %s: stderr %q, stdout %q; want stderr to start with %q", strings.Join(args, " "), r.stderr, r.stdout, announced)
		}
	}

	// Before the confirmation, before anything moves.
	f.stdinTTY = true
	f.stdin = "n\n"
	r := f.runRaw("replay")
	r.want(t, exitRefused)
	if !strings.HasPrefix(r.stderr, announced) || !strings.Contains(r.stderr, "? [y/N]") {
		t.Fatalf("stderr %q: want the announcement, then the question", r.stderr)
	}
	f.movedNothing(r)

	// A file from the environment is announced too; one a flag names is not.
	f.vars = map[string]string{envOutputs: f.file}
	f.runRaw("inspect").want(t, exitOK, "dlq: using outputs file "+f.file+" (from "+envOutputs+")")
	f.vars = nil
	if r := f.run("inspect"); strings.Contains(r.stderr, "using outputs file") {
		t.Fatalf("announced a file --outputs-file names: %s", r.stderr)
	}
}

// A run of the lane's own replay function's route is left as it was: the
// function's source and parking queues, the same as the outputs'.
func TestReplayGoesWhereTheFunctionSends(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	f.forget()
	// The emulator answers a queue under another host: the same queue.
	f.outputs[outSource] = "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/orders"
	f.writeOutputs()
	r := f.run("--json", "replay", "--yes", "--key", "ORD-1")
	r.want(t, exitOK)
	if n := f.visible(f.source); n != 1 {
		t.Fatalf("%d message(s) in the function's source queue, want 1", n)
	}
}

func TestQueuePlaces(t *testing.T) {
	for _, tt := range []struct {
		a, b   string
		within bool
		same   bool
	}{
		{"https://sqs.us-east-1.amazonaws.com/000000000000/a", "https://sqs.us-east-1.amazonaws.com/000000000000/b", true, false},
		{"https://sqs.us-east-1.amazonaws.com/000000000000/a", "https://queue.amazonaws.com/000000000000/a", true, true},
		{"https://sqs.eu-west-1.amazonaws.com/000000000000/a", "https://eu-west-1.queue.amazonaws.com/000000000000/a", true, true},
		{"https://sqs.eu-west-1.amazonaws.com/000000000000/a", "https://sqs.us-east-1.amazonaws.com/000000000000/a", false, false},
		{"https://sqs.us-east-1.amazonaws.com/111111111111/a", "https://sqs.us-east-1.amazonaws.com/000000000000/a", false, false},
		{"http://localhost:4566/000000000000/a", "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/a", true, true},
		{"http://localhost:4566/000000000000/a", "http://localhost:4566/111111111111/a", false, false},
	} {
		if got := placeOf(tt.a).within(placeOf(tt.b)); got != tt.within {
			t.Errorf("%s within %s = %v, want %v", tt.a, tt.b, got, tt.within)
		}
		if got := sameQueue(tt.a, tt.b); got != tt.same {
			t.Errorf("sameQueue(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"https://u:p@h/1/q", `"https://h/1/q"`},
		{"https://u:p@ss@h/1/q?token=t#f", `"https://h/1/q?…"`},
		{"u:p@h", `"h"`},
		{"a\x00b", `"a\x00b"`},
		{strings.Repeat("x", maxShown+1), `"` + strings.Repeat("x", maxShown) + `"… (201 bytes)`},
	} {
		if got := shown(tt.in); got != tt.want {
			t.Errorf("shown(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
