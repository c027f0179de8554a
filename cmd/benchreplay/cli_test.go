package main

import (
	"archive/zip"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/handler"
)

// The outputs file names the round's resources as a deployed lane's
// outputs do, under the lane the CLI is given.
func TestLaneOutputs(t *testing.T) {
	rt := route{dlq: "d", source: "s", parking: "p", ledger: "l", idempotency: "i", function: "f"}
	got := laneOutputs(rt)
	want := map[string]string{
		"OrdersDeadLetterQueueUrl":   "d",
		"OrdersSourceQueueUrl":       "s",
		"OrdersParkingQueueUrl":      "p",
		"OrdersLedgerTableName":      "l",
		"OrdersIdempotencyTableName": "i",
		"OrdersReplayFunctionName":   "f",
	}
	if len(got) != len(want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("output %s = %q, want %q", k, got[k], v)
		}
	}
	if args := strings.Join(cliArgs("/tmp/o.json"), " "); args != "replay --outputs-file /tmp/o.json --lane orders --yes -o json" {
		t.Errorf("args %s", args)
	}
}

// The CLI and the engine read one environment: the CLI's from the
// function, the engine's in process.
func TestReplayEnv(t *testing.T) {
	env, err := replayEnv(route{dlq: "d", source: "s", parking: "p", ledger: "l", idempotency: "i", n: 1000, workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"MAX_PER_RUN": "1000", "WORKERS": "4", "BACKOFF_BASE": "1ms", "RATE": "3000", "LEDGER_TABLE": "l", "IDEMPOTENCY_TABLE": "i"} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if !strings.Contains(env["REPLAY_ROUTES"], `"orders"`) {
		t.Errorf("REPLAY_ROUTES %s, want the route orders", env["REPLAY_ROUTES"])
	}
	if _, ok := env["HEALTH_URL"]; ok {
		t.Error("a health URL: the engine's contenders run without a health gate")
	}
}

func TestSubprocessEnv(t *testing.T) {
	got := subprocessEnv([]string{
		"PATH=/bin", "AWS_ENDPOINT_URL=http://127.0.0.1:4566", "AWS_ENDPOINT_URL_SQS=http://x", "HOMING_STACK=Homing", "AWS_REGION=us-east-1",
	}, "http://127.0.0.1:40000")
	want := []string{"PATH=/bin", "AWS_REGION=us-east-1", "AWS_ENDPOINT_URL=http://127.0.0.1:40000"}
	if !slices.Equal(got, want) {
		t.Errorf("env %q, want %q", got, want)
	}
}

func TestPlaceholderZip(t *testing.T) {
	b, err := placeholderZip()
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil || len(zr.File) != 1 || zr.File[0].Name != "bootstrap" || zr.File[0].Mode()&0o111 == 0 {
		t.Errorf("zip %v, %v: want one executable bootstrap", zr, err)
	}
}

// The engine contender's environment loads as the function's does, and its
// invocation is the schedule's: a run of the one route.
func TestEngineInvocation(t *testing.T) {
	env, err := replayEnv(route{dlq: "http://127.0.0.1:4566/000000000000/d", source: "http://127.0.0.1:4566/000000000000/s",
		parking: "http://127.0.0.1:4566/000000000000/p", ledger: "l", idempotency: "i", n: 1000, workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := handler.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Options().Workers != 4 {
		t.Errorf("workers %d, want 4", cfg.Options().Workers)
	}
	req, err := cfg.ParseInvocation([]byte(scheduledEvent))
	if err != nil || len(req.Routes) != 1 || req.Routes[0].Name != laneName || req.DryRun {
		t.Errorf("invocation %+v, %v: want a run of route %s", req, err, laneName)
	}
}
