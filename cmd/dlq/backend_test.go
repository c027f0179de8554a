package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// awsEnv gives the test an AWS environment with no credentials, no
// region, no shared config files and no lane of dlq's environment
// (HOMING_OUTPUTS, which make e2e sets, included), in a working directory of
// its own (no local stack's outputs): the SDK's default chain ends at the
// EC2 metadata service, here a local server that answers 404 to
// everything (a machine that is not an EC2 instance, behind a proxy that
// answers), which makes the SDK's metadata client warn that it falls back
// to IMDSv1. Every AWS service endpoint is a server that fails the test
// if called. It returns the count of requests the metadata service got.
func awsEnv(t *testing.T, region string) *atomic.Int32 {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "HOMING_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	t.Chdir(t.TempDir())
	var asked atomic.Int32
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(imds.Close)
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("an AWS service was called: %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(service.Close)
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	t.Setenv("AWS_ENDPOINT_URL", service.URL)
	if region != "" {
		t.Setenv("AWS_REGION", region)
	}
	return &asked
}

// stderrOf runs f with the process's stderr captured: where the SDK's
// default logger writes.
func stderrOf(t *testing.T, f func()) string {
	t.Helper()
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = file
	defer func() { os.Stderr = saved }()
	f()
	b, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runAWS runs dlq as main does, on the real AWS configuration.
func runAWS(t *testing.T, args ...string) (stderr, processStderr string, code int) {
	t.Helper()
	var out, errs bytes.Buffer
	processStderr = stderrOf(t, func() {
		code = execute(context.Background(), args, &app{
			stdin: strings.NewReader(""), stdout: &out, stderr: &errs,
			isTerminal: func(any) bool { return false }, connect: connectAWS,
		})
	})
	return errs.String(), processStderr, code
}

// Without credentials: one line that says what to set, nothing from the
// SDK on stderr, the metadata service asked all the same (an operator on
// EC2 gets the instance's role); -v adds the SDK's chain of errors, -vv
// the SDK's own log lines, at debug level.
func TestNoCredentials(t *testing.T) {
	const dlq = "https://sqs.us-east-1.amazonaws.com/123456789012/q"
	const line = "dlq: no AWS credentials: set AWS_PROFILE (or pass --profile) to a profile that has them, " +
		"or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (-v shows why)\n"
	t.Run("one line", func(t *testing.T) {
		asked := awsEnv(t, "us-east-1")
		stderr, process, code := runAWS(t, "--dlq-url", dlq, "inspect")
		if code != exitError || stderr != line {
			t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and:\n%s", code, stderr, exitError, line)
		}
		if process != "" {
			t.Fatalf("the process's stderr has:\n%s", process)
		}
		if asked.Load() == 0 {
			t.Fatal("the EC2 metadata service was not asked for credentials")
		}
	})
	t.Run("-v: the cause", func(t *testing.T) {
		awsEnv(t, "us-east-1")
		stderr, process, code := runAWS(t, "-v", "--dlq-url", dlq, "inspect")
		first, cause, _ := strings.Cut(stderr, "\n")
		if code != exitError || first+"\n" != line || !strings.HasPrefix(cause, "dlq: cause: ") || !strings.Contains(cause, "EC2 IMDS") ||
			strings.Contains(stderr, "IMDSv1") || process != "" {
			t.Fatalf("exit %d, stderr:\n%s\nprocess's stderr:\n%s", code, stderr, process)
		}
	})
	t.Run("-vv: the SDK's log", func(t *testing.T) {
		awsEnv(t, "us-east-1")
		stderr, process, code := runAWS(t, "-vv", "--dlq-url", dlq, "inspect")
		if code != exitError || !strings.Contains(stderr, "level=DEBUG") || !strings.Contains(stderr, "falling back to IMDSv1") ||
			!strings.Contains(stderr, "source=aws-sdk sdkLevel=WARN") || process != "" {
			t.Fatalf("exit %d, stderr:\n%s\nprocess's stderr:\n%s", code, stderr, process)
		}
	})
	t.Run("a profile", func(t *testing.T) {
		awsEnv(t, "us-east-1")
		if err := os.WriteFile(os.Getenv("AWS_CONFIG_FILE"), []byte("[profile ops]\nregion = us-east-1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_PROFILE", "ops")
		stderr, _, code := runAWS(t, "--dlq-url", dlq, "inspect")
		want := "dlq: no AWS credentials from profile ops: sign in (`aws sso login --profile ops` for an SSO profile) or check its keys, " +
			"or pick another profile with --profile or AWS_PROFILE (-v shows why)\n"
		if code != exitError || stderr != want {
			t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
		}
	})
	t.Run("no such profile", func(t *testing.T) {
		awsEnv(t, "us-east-1")
		stderr, _, code := runAWS(t, "--profile", "nope", "--dlq-url", dlq, "inspect")
		if code != exitUsage || !strings.HasPrefix(stderr, "dlq: no AWS profile nope in the shared config files: check --profile and AWS_PROFILE, "+
			"or create it with `aws configure --profile nope` (-v shows why)\n") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})
	t.Run("no region", func(t *testing.T) {
		asked := awsEnv(t, "")
		stderr, process, code := runAWS(t, "--dlq-url", dlq, "inspect")
		if code != exitUsage || !strings.HasPrefix(stderr, "dlq: no AWS region: pass --region REGION, or set AWS_REGION (or the region of your AWS profile)\n") || process != "" {
			t.Fatalf("exit %d, stderr:\n%s\nprocess's stderr:\n%s", code, stderr, process)
		}
		if asked.Load() != 0 {
			t.Fatal("credentials were looked for without a region")
		}
	})
}
