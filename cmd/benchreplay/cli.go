package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/homingdlq/homing/internal/settings"
)

// The CLI contenders run the operator's path as operators run it: the
// built bin/dlq, a process of its own, started once per round with
//
//	dlq replay --outputs-file FILE --lane orders --yes -o json
//
// FILE names the round's queues and tables as `cdk deploy --outputs-file`
// names a lane's, and its replay function: a function created on the
// emulator (never invoked) whose environment is the one the engine
// contenders load in process ([replayEnv]), so the CLI reads its policy,
// rate, cap and workers with lambda:GetFunctionConfiguration as it reads a
// deployed lane's. Everything `dlq replay` does is measured: its start, the
// outputs file, the function's configuration, the DLQ's attributes, the
// engine's run and the run record. cmd/dlq is a main package: running its
// binary measures the shipped path without exporting (and so changing) it.
//
// Its calls reach the profile's network through a counting proxy of this
// process ([countingProxy]): one more loopback hop a call, which the
// in-process contenders do not pay.

// function creates rt's replay function with the replay environment of
// rt, and writes the outputs file that names it with rt's queues and
// tables.
func (b *bench) function(ctx context.Context, rt route) error {
	env, err := replayEnv(rt)
	if err != nil {
		return err
	}
	code, err := placeholderZip()
	if err != nil {
		return err
	}
	_, err = b.setup.fn.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String(rt.function),
		Runtime:      lambdatypes.RuntimeProvidedal2023,
		Handler:      aws.String("bootstrap"),
		Role:         aws.String("arn:aws:iam::000000000000:role/bench-replay"),
		Code:         &lambdatypes.FunctionCode{ZipFile: code},
		Environment:  &lambdatypes.Environment{Variables: env},
	})
	// A retried create whose first attempt was applied finds the function.
	if err != nil && !errors.As(err, new(*lambdatypes.ResourceConflictException)) {
		return fmt.Errorf("create function %s: %w", rt.function, err)
	}
	out, err := json.MarshalIndent(laneOutputs(rt), "", "  ")
	if err != nil {
		return fmt.Errorf("encode the outputs of %s: %w", rt.function, err)
	}
	if err := os.WriteFile(rt.outputs, out, 0o600); err != nil {
		return fmt.Errorf("write the outputs file: %w", err)
	}
	return nil
}

// laneOutputs are rt's resources as a lane's stack outputs, flat, as
// `make deploy-local` writes them.
func laneOutputs(rt route) map[string]string {
	out := map[string]string{}
	for key, v := range map[string]string{
		settings.OutputDeadLetterQueueURL:   rt.dlq,
		settings.OutputSourceQueueURL:       rt.source,
		settings.OutputParkingQueueURL:      rt.parking,
		settings.OutputLedgerTableName:      rt.ledger,
		settings.OutputIdempotencyTableName: rt.idempotency,
		settings.OutputReplayFunctionName:   rt.function,
	} {
		out[settings.OutputID(laneName, key)] = v
	}
	return out
}

// placeholderZip is the code of a function that is never invoked: a
// bootstrap that exits 1.
func placeholderZip() ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = w.Write([]byte("#!/bin/sh\necho 'benchreplay: the CLI reads this function configuration; it is never invoked' >&2\nexit 1\n"))
	}
	if err = errors.Join(err, zw.Close()); err != nil {
		return nil, fmt.Errorf("zip the placeholder bootstrap: %w", err)
	}
	return buf.Bytes(), nil
}

// deleteFunction deletes a round's replay function and outputs file, if
// they were made.
func (b *bench) deleteFunction(ctx context.Context, name, outputs string) error {
	var errs []error
	_, err := b.setup.fn.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String(name)})
	if err != nil && !errors.As(err, new(*lambdatypes.ResourceNotFoundException)) {
		errs = append(errs, fmt.Errorf("delete function %s: %w", name, err))
	}
	if err := os.Remove(outputs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// cliMover runs `dlq replay` (the binary dlq) on rt's lane: the replay
// function's environment says how many, how fast and with how many
// workers.
func cliMover(dlq string) func(ctx context.Context, mv mover, rt route) error {
	return func(ctx context.Context, mv mover, rt route) error {
		args := cliArgs(rt.outputs)
		cmd := exec.CommandContext(ctx, dlq, args...)
		cmd.Env = subprocessEnv(mv.environ, mv.endpoint)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		begin := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", dlq, strings.Join(args, " "), err, lastLines(stderr.String(), 5))
		}
		wall := time.Since(begin)
		// What the process spent around its engine's run: its start, the
		// outputs file, the function's configuration, the DLQ's attributes.
		var sum struct {
			DurationMS int64 `json:"durationMs"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			return fmt.Errorf("%s: its summary (-o json): %w", dlq, err)
		}
		run := time.Duration(sum.DurationMS) * time.Millisecond
		fmt.Fprintf(mv.progress, "  dlq replay: the process took %s, its engine run %s (the run's durationMs), the rest %s\n",
			wall.Round(time.Millisecond), run, (wall - run).Round(time.Millisecond))
		return nil
	}
}

// cliArgs are the arguments of the CLI contenders' `dlq replay`.
func cliArgs(outputs string) []string {
	return []string{"replay", "--outputs-file", outputs, "--lane", laneName, "--yes", "-o", "json"}
}

// subprocessEnv is environ with AWS_ENDPOINT_URL set to endpoint, without
// the service-specific endpoints and the variables that say where a lane
// is (the flags say it).
func subprocessEnv(environ []string, endpoint string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_ENDPOINT_URL") || strings.HasPrefix(k, "HOMING_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "AWS_ENDPOINT_URL="+endpoint)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// countingProxy is an HTTP reverse proxy on 127.0.0.1 that counts the API
// calls it forwards to its upstream, as a [callCounter] counts an SDK
// client's: a subprocess's calls, counted in this process.
type countingProxy struct {
	ln  net.Listener
	srv *http.Server
	tr  *http.Transport
}

// startCountingProxy forwards to the endpoint (an http:// URL), counting
// into calls. Close it with [countingProxy.Close].
func startCountingProxy(endpoint string, calls *callCounter) (*countingProxy, error) {
	target, err := url.Parse(endpoint)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("counting proxy to %q: not a URL", endpoint)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("counting proxy: %w", err)
	}
	// As many idle connections as a CLI run has calls in flight, so that
	// the proxy does not open a connection a call.
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute, DisableCompression: true}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the host the SDK signed
		},
		Transport: countingTransport{calls: calls, next: tr},
	}
	p := &countingProxy{ln: ln, srv: &http.Server{Handler: rp, ReadHeaderTimeout: time.Minute}, tr: tr}
	go func() { _ = p.srv.Serve(ln) }() // Serve returns http.ErrServerClosed on Close
	return p, nil
}

// URL is the proxy's address as an http:// URL, for AWS_ENDPOINT_URL.
func (p *countingProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy and closes its connections.
func (p *countingProxy) Close() {
	_ = p.srv.Close()
	p.tr.CloseIdleConnections()
}

// countingTransport counts each request into calls, then sends it.
type countingTransport struct {
	calls *callCounter
	next  http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.calls.count(r)
	return t.next.RoundTrip(r)
}
