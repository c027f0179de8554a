package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

func TestUsageAndResourceErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		raw    bool // without the fixture's --outputs-file
		code   int
		stderr []string
	}{
		{"unknown flag", []string{"inspect", "--bogus"}, false, exitUsage, []string{"unknown flag: --bogus", "dlq inspect --help"}},
		{"unknown command", []string{"drain"}, false, exitUsage, []string{`unknown command "drain"`}},
		{"positional argument", []string{"inspect", "now"}, false, exitUsage, []string{"takes no arguments"}},
		{"unknown output format", []string{"-o", "yaml", "inspect"}, false, exitUsage, []string{`-o "yaml": want table or json`}},
		{"json and -o table", []string{"--json", "-o", "table", "inspect"}, false, exitUsage, []string{"--json and -o table disagree"}},
		{"empty outputs file", []string{"--outputs-file", "", "inspect"}, true, exitUsage, []string{`--outputs-file "": want a file`}},
		{"empty lane", []string{"--lane", "", "inspect"}, false, exitUsage, []string{`--lane "": want a lane name`}},
		{"outputs file twice", []string{"--stack-outputs", "x.json", "inspect"}, false, exitUsage, []string{"none of the others"}},
		{"flat file and stack", []string{"--outputs-file", "FLAT", "--stack", "Homing", "inspect"}, true, exitUsage, []string{"--stack Homing with outputs file", "flat file", "drop --stack"}},
		{"order and runs", []string{"audit", "--order", "ORD-1", "--runs", "3"}, false, exitUsage, []string{"none of the others"}},
		{"health url and no gate", []string{"replay", "--dry-run", "--health-url", "http://x", "--no-health-gate"}, false, exitUsage, []string{"none of the others"}},
		{"bad duration", []string{"replay", "--dry-run", "--older-than", "soon"}, false, exitUsage, []string{`invalid argument "soon"`, "--older-than"}},
		{"negative duration", []string{"replay", "--dry-run", "--older-than", "-1h"}, false, exitUsage, []string{"--older-than -1h0m0s: want a positive duration"}},
		{"negative max", []string{"replay", "--dry-run", "--max", "-1"}, false, exitUsage, []string{"--max -1"}},
		{"rate out of range", []string{"replay", "--dry-run", "--rate", "0.01"}, false, exitUsage, []string{"--rate 0.01"}},
		{"unknown queue", []string{"peek", "--queue", "source"}, false, exitUsage, []string{`--queue "source": want dlq, parking or invalid`}},
		{"unknown queue to inspect", []string{"inspect", "--queue", "source"}, false, exitUsage, []string{`--queue "source": want dlq, parking or invalid`}},
		{"unknown from", []string{"replay", "--dry-run", "--from", "source"}, false, exitUsage, []string{`--from "source"`}},
		{"parking without reset", []string{"replay", "--dry-run", "--from", "parking"}, false, exitUsage, []string{"--from parking needs --reset-count"}},
		{"reset on the DLQ", []string{"replay", "--dry-run", "--reset-count"}, false, exitUsage, []string{"--reset-count works only with --from parking|invalid"}},
		{"sample zero", []string{"inspect", "--sample", "0"}, false, exitUsage, []string{"--sample 0"}},
		{"limit zero", []string{"peek", "--limit", "0"}, false, exitUsage, []string{"--limit 0"}},
		{"n zero", []string{"peek", "-n", "0"}, false, exitUsage, []string{"--limit 0"}},
		{"runs zero", []string{"audit", "--runs", "0"}, false, exitUsage, []string{"--runs 0"}},
		{"missing outputs file given", []string{"--outputs-file", "/nonexistent/outputs.json", "inspect"}, true, exitError,
			[]string{"read the outputs file /nonexistent/outputs.json (--outputs-file): no such file — pass the file that `cdk deploy --outputs-file` wrote, or --stack NAME"}},
		{"not an outputs file", []string{"--outputs-file", "LIST", "inspect"}, true, exitError, []string{"not a JSON object of stack outputs", `want {"Stack":{"Key":"value"}}`}},
		{"stack not in the file", []string{"--stack", "Nope", "inspect"}, false, exitError, []string{"has no stack Nope; its stacks: Homing"}},
		{"lane not in the file", []string{"--lane", "payments", "inspect"}, false, exitError,
			[]string{"outputs file", "has no lane payments (--lane: no output PaymentsDeadLetterQueueUrl); its lanes are orders (stack Homing) — pass one of them with --lane"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.noAWS = true
			flat := filepath.Join(t.TempDir(), "flat.json")
			f.writeFile(flat, f.outputs)
			list := filepath.Join(t.TempDir(), "list.json")
			f.writeFile(list, []string{"DeadLetterQueueUrl"})
			args := slices.Clone(tt.args)
			for i, a := range args {
				args[i] = strings.NewReplacer("FLAT", flat, "LIST", list).Replace(a)
			}
			var r result
			if tt.raw {
				r = f.runRaw(args...)
			} else {
				r = f.run(args...)
			}
			r.want(t, tt.code, tt.stderr...)
			// A bad flag or file never waits for AWS credentials.
			if f.connects != 0 {
				t.Fatalf("connected to AWS %d time(s) for a rejected command", f.connects)
			}
		})
	}
}

// Errors that need AWS to happen, and that tell an operator what to do.
func TestResourceErrorsAfterConnecting(t *testing.T) {
	f := newFixture(t)
	f.runRaw("--stack", "Nope", "inspect").want(t, exitError, "read the outputs of stack Nope", "does not exist", "check the name, --region")
	if n := f.callsOf("ReceiveMessage") + f.callsOf("SendMessageBatch"); n != 0 {
		t.Fatalf("%d SQS receive/send calls for a failed command", n)
	}
}

// Every flag, and where the lane is when no AWS call is needed to know
// it, is checked before dlq builds an AWS client: a bad flag never waits
// for a region or credentials, and a command with nothing to say where the
// lane is says so rather than ask for a region.
func TestChecksBeforeAWS(t *testing.T) {
	const noOrigin = "nothing says where the lane is — pass --stack NAME (CloudFormation), " +
		"--outputs-file FILE (as `cdk deploy --outputs-file` writes it), or --lane NAME to find the lane by its tags"
	tests := []struct {
		name   string
		args   []string
		raw    bool // without the fixture's --outputs-file
		code   int
		stderr []string
	}{
		{"inspect, nothing given", []string{"inspect"}, true, exitError, []string{"no DeadLetterQueueUrl: " + noOrigin + "; or pass --dlq-url"}},
		{"peek at parking, only the DLQ given", []string{"--dlq-url", "DLQ", "peek", "--queue", "parking"}, true, exitError, []string{"no ParkingQueueUrl: " + noOrigin + "; or pass --parking-url"}},
		{"replay, only the DLQ given", []string{"--dlq-url", "DLQ", "replay", "--dry-run"}, true, exitError, []string{"no ParkingQueueUrl: " + noOrigin}},
		{"audit, nothing given", []string{"audit"}, true, exitError, []string{"no LedgerTableName: " + noOrigin + "; or pass --ledger-table"}},
		{"audit a key, only the ledger given", []string{"--ledger-table", "ledger", "audit", "--key", "K-1"}, true, exitError, []string{"no IdempotencyTableName: " + noOrigin}},
		{"to, not a queue URL", []string{"replay", "--yes", "--to", "http://x"}, false, exitUsage, []string{`--to "http://x": not a queue URL (want https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`}},
		{"to, not a queue URL, on a stack", []string{"--stack", "Homing", "replay", "--yes", "--to", "http://x"}, true, exitUsage, []string{`--to "http://x": not a queue URL`}},
		{"to, no account", []string{"replay", "--yes", "--to", "https://sqs.us-east-1.amazonaws.com/retry"}, false, exitUsage, []string{"not a queue URL"}},
		{"to, empty", []string{"replay", "--yes", "--to", ""}, false, exitUsage, []string{`--to "": not a queue URL`}},
		{"to, the queue replayed from", []string{"replay", "--yes", "--to", "DLQ"}, false, exitUsage, []string{"is the queue replayed from (--from dlq)"}},
		{"to, another type", []string{"replay", "--yes", "--to", "https://sqs.us-east-1.amazonaws.com/000000000000/retry.fifo"}, false, exitUsage, []string{"is a FIFO queue but", "is a standard queue"}},
		{"replay, consumer with the separator", []string{"replay", "--yes", "--consumer", "a#b"}, false, exitUsage, []string{`--consumer "a#b": want the consumer's name, 1..64 bytes without '#' (its records' keys are <consumer>#<key>)`}},
		{"replay, empty consumer", []string{"replay", "--yes", "--consumer", ""}, false, exitUsage, []string{`--consumer "": want the consumer's name`}},
		{"replay, consumer too long", []string{"replay", "--yes", "--consumer", strings.Repeat("c", 65)}, false, exitUsage, []string{"want the consumer's name, 1..64 bytes"}},
		{"audit, consumer with the separator", []string{"audit", "--key", "K-1", "--consumer", "a#b"}, false, exitUsage, []string{`--consumer "a#b": want the consumer's name`}},
		{"audit, empty consumer", []string{"audit", "--key", "K-1", "--consumer", ""}, false, exitUsage, []string{`--consumer "": want the consumer's name`}},
		{"audit, empty key", []string{"audit", "--key", ""}, false, exitUsage, []string{`--key "": want a business key (audit without --key lists the last runs)`}},
		{"audit, empty order", []string{"audit", "--order", ""}, false, exitUsage, []string{`--order "": want a business key (audit without --key lists the last runs)`}},
		{"replay, empty key", []string{"replay", "--dry-run", "--key", ""}, false, exitUsage, []string{`--key "": want a value`}},
		{"replay, empty order", []string{"replay", "--dry-run", "--order", ""}, false, exitUsage, []string{`--order "": want a value`}},
		{"replay, reason too long", []string{"replay", "--dry-run", "--reason", strings.Repeat("r", 129)}, false, exitUsage, []string{"--reason: a value of 129 bytes, want 1..128"}},
		{"replay, empty reason", []string{"replay", "--dry-run", "--reason", ""}, false, exitUsage, []string{`--reason "": want a value`}},
		{"replay, empty route", []string{"replay", "--dry-run", "--route", ""}, false, exitUsage, []string{`--route "": want 1..256 bytes`}},
		{"replay, health URL not http", []string{"replay", "--dry-run", "--health-url", "ftp://x"}, false, exitUsage, []string{`--health-url: base URL "ftp://x": scheme must be http or https`}},
		{"replay, empty health URL", []string{"replay", "--dry-run", "--health-url", ""}, false, exitUsage, []string{`--health-url "": want the downstream's base URL (--no-health-gate skips the gate)`}},
		{"every problem at once", []string{"replay", "--dry-run", "--to", "http://x", "--consumer", "a#b"}, false, exitUsage, []string{`--to "http://x"`, `; --consumer "a#b"`}},
		{"replay, not a function", []string{"replay", "--dry-run", "--replay-function", "my fn"}, false, exitUsage, []string{`--replay-function "my fn": not a Lambda function`}},
		{"a resource flag, not a queue URL", []string{"--dlq-url", "http://x", "inspect"}, true, exitUsage, []string{`--dlq-url "http://x": not a queue URL`}},
		{"a resource flag, empty", []string{"--parking-url", "", "inspect"}, false, exitUsage, []string{`--parking-url "": not a queue URL`}},
		{"a table flag, not a table", []string{"--ledger-table", "a b", "audit"}, false, exitUsage, []string{`--ledger-table "a b": not a DynamoDB table`}},
		{"groups, nothing given", []string{"groups"}, true, exitError, []string{"no LedgerTableName: " + noOrigin + "; or pass --ledger-table"}},
		{"groups release, only the table given", []string{"--ledger-table", "ledger", "groups", "release", "g-1"}, true, exitError, []string{"no ParkingQueueUrl: " + noOrigin + "; or pass --parking-url"}},
		{"groups release, no source", []string{"--ledger-table", "ledger", "--parking-url", "https://sqs.us-east-1.amazonaws.com/000000000000/p.fifo", "groups", "release", "g-1"}, true, exitError,
			[]string{"no SourceQueueUrl: " + noOrigin + "; or pass --source-url"}},
		{"groups, a standard lane", []string{"groups"}, false, exitError, []string{"dlq: lane orders is not a FIFO lane: ", " is a standard queue (stack Homing in outputs file "}},
		{"groups, an argument", []string{"groups", "g-1"}, false, exitUsage, []string{`dlq groups takes no arguments, got ["g-1"]`}},
		{"groups release, no group", []string{"groups", "release"}, false, exitUsage, []string{"dlq groups release takes one message group, got 0 arguments (dlq groups lists the parked groups)"}},
		{"groups release, two groups", []string{"groups", "release", "g-1", "g-2", "--yes"}, false, exitUsage, []string{"takes one message group, got 2 arguments"}},
		{"groups release, empty group", []string{"groups", "release", "", "--yes"}, false, exitUsage, []string{`group "": not a message group (want 1..128 letters, digits and ASCII punctuation, as SQS's MessageGroupId)`}},
		{"groups release, a space", []string{"groups", "release", "g 1", "--yes"}, false, exitUsage, []string{`group "g 1": not a message group`}},
		{"groups release, too long", []string{"groups", "release", strings.Repeat("g", 129), "--yes"}, false, exitUsage, []string{"not a message group (want 1..128"}},
		{"groups release, a negative wait", []string{"groups", "release", "g-1", "--wait", "-1s"}, false, exitUsage, []string{"--wait -1s: want a duration of 0 or more"}},
		{"groups release, a wait without unit", []string{"groups", "release", "g-1", "--wait", "5"}, false, exitUsage, []string{`invalid argument "5" for "--wait"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.noAWS = true
			args := slices.Clone(tt.args)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "DLQ", f.dlq)
			}
			var r result
			if tt.raw {
				r = f.runRaw(args...)
			} else {
				r = f.run(args...)
			}
			r.want(t, tt.code, tt.stderr...)
			if strings.Contains(r.stderr, "region") || strings.Contains(r.stderr, "make deploy-local") {
				t.Fatalf("stderr speaks of a region or of make deploy-local:\n%s", r.stderr)
			}
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 1 || n == 1 && tt.code != exitUsage {
				t.Fatalf("stderr is not one line (and the usage hint):\n%s", r.stderr)
			}
		})
	}
}

func TestCheckResourceNames(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://sqs.us-east-1.amazonaws.com/123456789012/orders", true},
		{"https://sqs.eu-west-1.amazonaws.com/123456789012/a_b-c.fifo", true},
		{"https://queue.amazonaws.com/123456789012/q", true},
		{"http://localhost:4566/000000000000/q", true},
		{"http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/q", true},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/" + strings.Repeat("q", 80), true},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/" + strings.Repeat("q", 75) + ".fifo", true},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/" + strings.Repeat("q", 81), false},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/" + strings.Repeat("q", 76) + ".fifo", false},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/a.b", false},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/q/", false},
		{"https://sqs.us-east-1.amazonaws.com/12345/q", false},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/q?x=1", false},
		{"ftp://sqs.us-east-1.amazonaws.com/123456789012/q", false},
		{"https:///123456789012/q", false},
		{"http://x", false},
		{"orders", false},
		{"", false},
	} {
		if err := checkQueueURL("to", tt.url); (err == nil) != tt.ok {
			t.Errorf("checkQueueURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
	}
	for _, tt := range []struct {
		fn string
		ok bool
	}{
		{"replay-fn", true},
		{"Homing-OrdersReplay9C162605-F207191D80617", true},
		{"replay-fn:live", true},
		{"replay-fn:$LATEST", true},
		{"123456789012:function:replay-fn", true},
		{"arn:aws:lambda:eu-west-1:123456789012:function:replay-fn:3", true},
		{"arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:replay-fn", true},
		{"my fn", false},
		{"replay-fn:", false},
		{"arn:aws:sqs:us-east-1:123456789012:q", false},
		{strings.Repeat("f", 171), false},
	} {
		if got := isFunctionName(tt.fn); got != tt.ok {
			t.Errorf("isFunctionName(%q) = %v, want %v", tt.fn, got, tt.ok)
		}
	}
	for _, tt := range []struct {
		table string
		ok    bool
	}{
		{"ledger", true},
		{"My_Stack-Ledger.v2", true},
		{"arn:aws:dynamodb:us-east-1:123456789012:table/ledger", true},
		{"ab", false},
		{"a b", false},
		{strings.Repeat("t", 256), false},
		{"arn:aws:sqs:us-east-1:123456789012:ledger", false},
		{"arn:aws:dynamodb:us-east-1:123456789012:ledger", false},
		{"", false},
	} {
		if err := checkTableName("ledger-table", tt.table); (err == nil) != tt.ok {
			t.Errorf("checkTableName(%q) = %v, want ok %v", tt.table, err, tt.ok)
		}
	}
}

// Without outputs, explicit flags are enough; --stack reads the outputs
// through CloudFormation; a flag overrides an output; a missing output is
// named, prefixed, with its flag.
func TestResourcesFromFlagsAndStack(t *testing.T) {
	f := newFixture(t)
	r := f.runRaw("--json", "--dlq-url", f.dlq, "inspect")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); len(rep.Queues) != 1 || rep.Queues[0].URL != f.dlq {
		t.Fatalf("report = %+v", rep)
	}
	r = f.runRaw("-o", "json", "--stack", "Homing", "inspect")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); len(rep.Queues) != 3 || rep.Queues[0].URL != f.dlq {
		t.Fatalf("report = %+v", rep)
	}
	r = f.run("--json", "--dlq-url", f.parking, "inspect")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); rep.Queues[0].URL != f.parking {
		t.Fatalf("report = %+v", rep)
	}
	delete(f.outputs, outLedger)
	f.writeOutputs()
	f.run("audit", "--runs", "1").want(t, exitError, "no LedgerTableName: stack Homing in outputs file "+f.file+" has no output OrdersLedgerTableName — pass --ledger-table")
	f.runRaw("--stack", "Homing", "audit", "--runs", "1").want(t, exitError, "no LedgerTableName: stack Homing has no output OrdersLedgerTableName — pass --ledger-table")
}

// Where the lane is: the outputs file in CDK's format or flat, one or more
// stacks and lanes, the unprefixed keys of older stacks, the environment,
// and the local default; --lane picks a lane, the only one is picked
// without it.
func TestWhereTheLaneIs(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	file := func(name string, v any) string {
		path := filepath.Join(dir, name)
		f.writeFile(path, v)
		return path
	}
	for _, q := range []string{"payments-dlq", "payments", "payments-parking", "payments-invalid"} {
		f.queue(q, nil)
	}
	payments := map[string]string{}
	for k, v := range f.outputs {
		payments[settings.OutputID("payments-ledger", k)] = strings.ReplaceAll(v, "orders", "payments")
	}
	pDLQ := f.urls["payments-dlq"]
	prefixed := f.stackOutputs()
	both := maps.Clone(prefixed)
	maps.Copy(both, f.outputs)
	twoLanes := maps.Clone(prefixed)
	maps.Copy(twoLanes, payments)
	var (
		cdk       = file("cdk.json", map[string]any{"Homing": prefixed})
		flat      = file("flat.json", prefixed)
		legacy    = file("legacy.json", f.outputs)
		legacyCDK = file("legacy-cdk.json", map[string]any{"Homing": f.outputs})
		bothKeys  = file("both.json", map[string]any{"Homing": both})
		stacks    = file("stacks.json", map[string]any{"Homing": prefixed, "Payments": payments})
		lanes     = file("lanes.json", map[string]any{"Homing": twoLanes})
		again     = file("again.json", map[string]any{"Homing": prefixed, "Copy": prefixed})
		none      = file("none.json", map[string]any{"Homing": map[string]string{"TaxServiceAdminUrl": "x"}})
	)
	tests := []struct {
		name   string
		args   []string
		vars   map[string]string
		code   int
		dlq    string   // the DLQ inspect reports, when code is 0
		stderr []string // when code is not 0
	}{
		{"cdk format", []string{"--outputs-file", cdk}, nil, exitOK, f.dlq, nil},
		{"cdk format, its stack", []string{"--outputs-file", cdk, "--stack", "Homing"}, nil, exitOK, f.dlq, nil},
		{"cdk format, its lane", []string{"--outputs-file", cdk, "--lane", "orders"}, nil, exitOK, f.dlq, nil},
		{"the lane as its outputs spell it", []string{"--outputs-file", cdk, "--lane", "Orders"}, nil, exitOK, f.dlq, nil},
		{"flat", []string{"--outputs-file", flat}, nil, exitOK, f.dlq, nil},
		{"former flag name", []string{"--stack-outputs", flat}, nil, exitOK, f.dlq, nil},
		{"unprefixed keys of an older stack", []string{"--outputs-file", legacy}, nil, exitOK, f.dlq, nil},
		{"unprefixed keys with --lane", []string{"--outputs-file", legacyCDK, "--lane", "orders"}, nil, exitOK, f.dlq, nil},
		{"a lane under both keys counts once", []string{"--outputs-file", bothKeys}, nil, exitOK, f.dlq, nil},
		{"two stacks need a lane", []string{"--outputs-file", stacks}, nil, exitUsage, "",
			[]string{"outputs file " + stacks + " has 2 lanes: orders (stack Homing), payments-ledger (stack Payments) — pass one of them with --lane NAME (or HOMING_LANE)"}},
		{"two stacks, a lane", []string{"--outputs-file", stacks, "--lane", "payments-ledger"}, nil, exitOK, pDLQ, nil},
		{"two stacks, a stack", []string{"--outputs-file", stacks, "--stack", "Homing"}, nil, exitOK, f.dlq, nil},
		{"two lanes in a stack", []string{"--outputs-file", lanes}, nil, exitUsage, "", []string{"has 2 lanes: orders (stack Homing), payments-ledger (stack Homing)"}},
		{"two lanes in a stack, a lane", []string{"--outputs-file", lanes, "--lane", "payments_ledger"}, nil, exitOK, pDLQ, nil},
		{"a lane in two stacks", []string{"--outputs-file", again, "--lane", "orders"}, nil, exitUsage, "", []string{"has lane orders in several stacks: orders (stack Copy), orders (stack Homing) — pass --stack NAME too"}},
		{"no lane in the outputs", []string{"--outputs-file", none}, nil, exitError, "", []string{"has no lane: no output named <Lane>DeadLetterQueueUrl"}},
		{"outputs file from the environment", nil, map[string]string{envOutputs: cdk}, exitOK, f.dlq, nil},
		{"stack from the environment", nil, map[string]string{envStack: "Homing"}, exitOK, f.dlq, nil},
		{"stack of a file from the environment", nil, map[string]string{envOutputs: stacks, envStack: "Payments"}, exitOK, pDLQ, nil},
		{"lane from the environment", []string{"--outputs-file", lanes}, map[string]string{envLane: "payments-ledger"}, exitOK, pDLQ, nil},
		{"--lane wins over the environment", []string{"--outputs-file", lanes, "--lane", "orders"}, map[string]string{envLane: "payments-ledger"}, exitOK, f.dlq, nil},
		{"--stack wins over the environment's file", []string{"--stack", "Homing"}, map[string]string{envOutputs: "/nonexistent"}, exitOK, f.dlq, nil},
		{"a missing file from the environment", nil, map[string]string{envOutputs: "/nonexistent/o.json"}, exitError, "", []string{"read the outputs file /nonexistent/o.json (HOMING_OUTPUTS): no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.vars = tt.vars
			f.connects = 0
			r := f.runRaw(append(tt.args, "-o", "json", "inspect")...)
			r.want(t, tt.code, tt.stderr...)
			if tt.code != exitOK {
				return
			}
			if rep := decode[inspectReport](t, r); rep.Queues[0].URL != tt.dlq {
				t.Fatalf("inspected %s, want %s", rep.Queues[0].URL, tt.dlq)
			}
			if strings.Contains(r.stderr, defaultOutputsFile) {
				t.Fatalf("the local default was read: %s", r.stderr)
			}
		})
	}
	f.vars = nil

	// In a checkout after make deploy-local, nothing else said: the local
	// stack's file, read saying so.
	cwd := t.TempDir()
	t.Chdir(cwd)
	if err := os.Mkdir(".local", 0o755); err != nil {
		t.Fatal(err)
	}
	f.writeFile(defaultOutputsFile, f.outputs)
	r := f.runRaw("-o", "json", "inspect")
	r.want(t, exitOK, "dlq: using outputs file "+filepath.Join(cwd, defaultOutputsFile)+" (found in the current directory; pass --outputs-file to name one)")
	if rep := decode[inspectReport](t, r); rep.Queues[0].URL != f.dlq {
		t.Fatalf("report = %+v", rep)
	}
	// --lane alone finds the lane by its tags, not in the local file.
	f.tagLane()
	f.tagging.calls = 0
	f.runRaw("-o", "json", "--lane", "orders", "inspect").want(t, exitOK)
	if f.tagging.calls == 0 {
		t.Fatal("--lane alone did not look for the lane's tags")
	}
}

func TestLaneNameRoundTrips(t *testing.T) {
	for _, name := range []string{"orders", "payments-ledger", "x_1", "Orders2", "ABC", "zahlungsausgänge"} {
		prefix := settings.OutputID(name, "")
		shown := laneOutputs{prefix: prefix}.name()
		if got := settings.OutputID(shown, ""); got != prefix {
			t.Errorf("lane %q: shown as %q, whose prefix is %q, want %q", name, shown, got, prefix)
		}
	}
}

func TestParseOutputs(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		flat   bool
		stacks map[string]map[string]string
		err    string
	}{
		{"cdk", `{"Homing":{"OrdersDeadLetterQueueUrl":"u"},"Other":{}}`, false, map[string]map[string]string{"Homing": {"OrdersDeadLetterQueueUrl": "u"}, "Other": {}}, ""},
		{"flat", ` {"DeadLetterQueueUrl": "u"} `, true, map[string]map[string]string{"": {"DeadLetterQueueUrl": "u"}}, ""},
		{"empty", `{}`, true, map[string]map[string]string{"": {}}, ""},
		{"mixed", `{"Homing":{"A":"b"},"C":"d"}`, false, nil, "stacks and outputs mixed"},
		{"a number", `{"A":1}`, false, nil, `"A" is neither an output nor a stack`},
		{"a nested number", `{"Homing":{"A":1}}`, false, nil, `stack "Homing": its outputs are not strings`},
		{"an array", `["A"]`, false, nil, "not a JSON object of stack outputs"},
		{"null", `null`, false, nil, "not a JSON object of stack outputs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stacks, flat, err := parseOutputs([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || flat != tt.flat || !reflect.DeepEqual(stacks, tt.stacks) {
				t.Fatalf("parseOutputs = %v, %v, %v; want %v, %v", stacks, flat, err, tt.stacks, tt.flat)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "unknown (built without module support)"},
		{"go install @version", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.4.0"}}, true, "v0.4.0 (go1.26.1)"},
		{"a checkout", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "d939f1b0123456789abcdef"}, {Key: "vcs.time", Value: "2026-11-30T15:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, true, "(devel) (commit d939f1b01234, 2026-11-30T15:00:00Z, modified, go1.26.1)"},
		{"clean tree", &debug.BuildInfo{Main: debug.Module{Version: ""}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}, true, "(devel) (commit abc)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionText(tt.info, tt.ok); got != tt.want {
				t.Fatalf("versionText = %q, want %q", got, tt.want)
			}
		})
	}
	f := newFixture(t)
	r := f.runRaw("--version")
	r.want(t, exitOK)
	if r.stdout != "dlq "+version()+"\n" || f.connects != 0 {
		t.Fatalf("--version printed %q (connects %d)", r.stdout, f.connects)
	}
}

// go install github.com/homingdlq/homing/cmd/dlq@latest refuses a module
// whose go.mod has replace or exclude directives.
func TestInstallableWithGoInstall(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	inBlock := ""
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if inBlock != "" && line == ")" {
			inBlock = ""
			continue
		}
		word, _, _ := strings.Cut(line, " ")
		if inBlock == "replace" || inBlock == "exclude" || word == "replace" || word == "exclude" || strings.HasPrefix(line, "replace(") || strings.HasPrefix(line, "exclude(") {
			t.Errorf("go.mod:%d: %q: `go install …/cmd/dlq@latest` refuses a module with replace or exclude directives", i+1, line)
		}
		if strings.HasSuffix(line, "(") {
			inBlock = strings.TrimSpace(strings.TrimSuffix(line, "("))
		}
	}
}

// A queue with a RedrivePolicy is a source queue: inspect, peek and replay
// refuse to receive from it unless --force.
func TestSourceQueueRefusal(t *testing.T) {
	f := newFixture(t)
	src := f.queue("orders-source", map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, f.q.ARN(f.dlq))})
	f.send(src, order("ORD-SRC-1"), nil, nil)
	for _, args := range [][]string{
		{"inspect", "--dlq-url", src},
		{"peek", "--dlq-url", src},
		{"peek", "--queue", "parking", "--parking-url", src},
		{"replay", "--dry-run", "--dlq-url", src},
	} {
		r := f.run(args...)
		r.want(t, exitRefused, "refusing to", src, "RedrivePolicy (maxReceiveCount 3, dead-letter queue orders-dlq)", "--force")
	}
	if n := f.callsOf("ReceiveMessage"); n != 0 {
		t.Fatalf("%d receives from a refused source queue", n)
	}
	f.run("peek", "--dlq-url", src, "--force").want(t, exitOK)
	if n := f.callsOf("ReceiveMessage"); n == 0 {
		t.Fatal("--force did not peek")
	}
}

func TestBrowsableKeepsAttributes(t *testing.T) {
	f := newFixture(t)
	attrs, err := browsable(t.Context(), f.q, f.dlq, "sample", false)
	if err != nil || attrs["MessageRetentionPeriod"] == "" {
		t.Fatalf("attrs %v, err %v", attrs, err)
	}
	if _, err := browsable(t.Context(), f.q, f.dlq+"-missing", "sample", false); err == nil || !strings.Contains(err.Error(), "check the URL") {
		t.Fatalf("err = %v", err)
	}
}

func TestVerdict(t *testing.T) {
	closed := []replay.Gate{{Name: replay.GateHealth, Decision: replay.GateClosed}}
	tests := []struct {
		name string
		sum  replay.Summary
		err  error
		code int
		msg  string
	}{
		{"clean", replay.Summary{Routes: []replay.RouteSummary{{StopReason: replay.StopDrained}}}, nil, exitOK, ""},
		{"limited canary is fine", replay.Summary{Routes: []replay.RouteSummary{{StopReason: replay.StopCap, Gates: []replay.Gate{{Name: "canary", Decision: replay.GateLimited, Limit: 5}}}}}, nil, exitOK, ""},
		{"errors", replay.Summary{RunID: "r1", Total: replay.Counts{Errors: 2}, Routes: []replay.RouteSummary{{StopReason: replay.StopDrained}}}, nil, exitIncomplete, "2 message(s) failed"},
		{"route error", replay.Summary{RunID: "r1"}, errors.New("route orders: receive: boom"), exitIncomplete, "finished with an error: route orders: receive: boom"},
		{"gates held everything", replay.Summary{RunID: "r1", Gates: closed, Routes: []replay.RouteSummary{{StopReason: replay.StopGate}}}, nil, exitIncomplete, "closed gates held every route (health=closed)"},
		{"one route of two held", replay.Summary{Routes: []replay.RouteSummary{{StopReason: replay.StopGate}, {StopReason: replay.StopDrained}}}, nil, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verdict(tt.sum, tt.err)
			var ce *codedError
			code := exitOK
			if errors.As(err, &ce) {
				code = ce.code
			}
			if code != tt.code || tt.msg != "" && !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("verdict = %v (code %d), want code %d mentioning %q", err, code, tt.code, tt.msg)
			}
		})
	}
}

func TestCheckTo(t *testing.T) {
	for _, tt := range []struct {
		from, to string
		ok       bool
	}{
		{"https://q/dlq", "", true},
		{"https://q/dlq", "https://q/other", true},
		{"https://q/dlq.fifo", "https://q/other.fifo", true},
		{"https://q/dlq", "https://q/other.fifo", false},
		{"https://q/dlq.fifo", "https://q/other", false},
	} {
		err := checkTo(tt.from, tt.to)
		if (err == nil) != tt.ok {
			t.Errorf("checkTo(%s, %s) = %v", tt.from, tt.to, err)
		}
	}
}

func TestDurationAndCut(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12 * time.Second: "12s", 4*time.Minute + 10*time.Second: "4m10s", 2*time.Hour + 5*time.Minute: "2h5m", 80 * time.Hour: "3d8h",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%s) = %q, want %q", d, got, want)
		}
	}
	if got := cut("a\n b  c", 10); got != "a b c" {
		t.Errorf("cut = %q", got)
	}
	if got := cut("ação-çãoção", 5); got != "ação…" {
		t.Errorf("cut = %q", got)
	}
	// Shown by printable.String, then cut: the width bounds what shows.
	if got := cut("a\x1b[2J\rb\u202e", 40); got != `a\x1b[2J b\u202e` {
		t.Errorf("cut = %q", got)
	}
	if got := cut("\x1b\x1b\x1b", 6); got != `\x1b\…` {
		t.Errorf("cut = %q", got)
	}
}
