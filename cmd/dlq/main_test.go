package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/replay"
)

func TestUsageAndResourceErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		raw    bool // without the fixture's --stack-outputs
		code   int
		stderr []string
	}{
		{"unknown flag", []string{"inspect", "--bogus"}, false, exitUsage, []string{"unknown flag: --bogus", "dlq inspect --help"}},
		{"unknown command", []string{"drain"}, false, exitUsage, []string{`unknown command "drain"`}},
		{"positional argument", []string{"inspect", "now"}, false, exitUsage, []string{"takes no arguments"}},
		{"stack and outputs file", []string{"--stack", "Homing", "inspect"}, false, exitUsage, []string{"stack", "stack-outputs", "none of the others"}},
		{"order and runs", []string{"audit", "--order", "ORD-1", "--runs", "3"}, false, exitUsage, []string{"none of the others"}},
		{"health url and no gate", []string{"replay", "--dry-run", "--health-url", "http://x", "--no-health-gate"}, false, exitUsage, []string{"none of the others"}},
		{"bad duration", []string{"replay", "--dry-run", "--older-than", "soon"}, false, exitUsage, []string{`invalid argument "soon"`, "--older-than"}},
		{"negative duration", []string{"replay", "--dry-run", "--older-than", "-1h"}, false, exitUsage, []string{"--older-than -1h0m0s: want a positive duration"}},
		{"negative max", []string{"replay", "--dry-run", "--max", "-1"}, false, exitUsage, []string{"--max -1"}},
		{"rate out of range", []string{"replay", "--dry-run", "--rate", "0.01"}, false, exitUsage, []string{"--rate 0.01"}},
		{"unknown queue", []string{"peek", "--queue", "source"}, false, exitUsage, []string{`--queue "source": want dlq, parking or invalid`}},
		{"unknown from", []string{"replay", "--dry-run", "--from", "source"}, false, exitUsage, []string{`--from "source"`}},
		{"parking without reset", []string{"replay", "--dry-run", "--from", "parking"}, false, exitUsage, []string{"--from parking needs --reset-count"}},
		{"reset on the DLQ", []string{"replay", "--dry-run", "--reset-count"}, false, exitUsage, []string{"--reset-count works only with --from parking|invalid"}},
		{"sample zero", []string{"inspect", "--sample", "0"}, false, exitUsage, []string{"--sample 0"}},
		{"runs zero", []string{"audit", "--runs", "0"}, false, exitUsage, []string{"--runs 0"}},
		{"missing outputs file given", []string{"--stack-outputs", "/nonexistent/outputs.json", "inspect"}, true, exitError,
			[]string{"read /nonexistent/outputs.json: no such file — run `make deploy-local`, or pass --stack NAME"}},
		{"missing default outputs file", []string{"inspect"}, true, exitError,
			[]string{"no DeadLetterQueueUrl: read .local/outputs.json: no such file — run `make deploy-local`, or pass --stack NAME or --dlq-url"}},
		{"unknown stack", []string{"--stack", "Nope", "inspect"}, true, exitError, []string{"read the outputs of stack Nope", "does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var r result
			if tt.raw {
				r = f.runRaw(tt.args...)
			} else {
				r = f.run(tt.args...)
			}
			r.want(t, tt.code, tt.stderr...)
			if n := f.callsOf("ReceiveMessage") + f.callsOf("SendMessageBatch"); n != 0 {
				t.Fatalf("%d SQS receive/send calls for a rejected command", n)
			}
		})
	}
}

// Without the default outputs file, explicit flags are enough; --stack reads
// the outputs through CloudFormation.
func TestResourcesFromFlagsAndStack(t *testing.T) {
	f := newFixture(t)
	r := f.runRaw("--json", "--dlq-url", f.dlq, "inspect")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); len(rep.Queues) != 1 || rep.Queues[0].URL != f.dlq {
		t.Fatalf("report = %+v", rep)
	}
	r = f.runRaw("--json", "--stack", "Homing", "inspect")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); len(rep.Queues) != 3 {
		t.Fatalf("report = %+v", rep)
	}
	// A flag overrides an output.
	r = f.run("--json", "--dlq-url", f.parking, "inspect")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); rep.Queues[0].URL != f.parking {
		t.Fatalf("report = %+v", rep)
	}
	// An output the file lacks is named with its flag.
	delete(f.outputs, outLedger)
	f.writeOutputs()
	f.run("audit", "--runs", "1").want(t, exitError, "no LedgerTableName: "+f.file+" has no output LedgerTableName — pass --ledger-table")
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
}
