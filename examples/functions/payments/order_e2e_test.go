//go:build e2e

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

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
