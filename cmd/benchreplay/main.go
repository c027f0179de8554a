// Command benchreplay measures how fast dead letters go back to their source
// queue on the local emulator, side by side in one run (`make bench-replay`
// starts the emulator, runs it and stops the emulator):
//
//   - the replay engine, wired as the replay function and `dlq replay` wire
//     it (replay.New and Engine.Run with the real SQS client, the dynamo
//     ledger and completions on DynamoDB tables created for the run, the
//     configuration read by replay/handler), with 1 worker and with W;
//   - the naive mover of blog-post scripts: receive 1, send 1, delete 1;
//   - the raw SDK batch loop: receive 10 (no long poll), SendMessageBatch,
//     DeleteMessageBatch, with 1 worker and with W.
//
// Each contender gets fresh queues in every round, filled with the same N
// dead letters: valid order.created events with a producer's traceparent
// attribute, as SQS's redrive leaves them in a DLQ. Every contender runs on
// the bare emulator and through a TCP proxy (internal/delayproxy) that
// delays every client write, SQS and DynamoDB calls alike, by -delay
// (10 ms: about an in-region round trip). The medians of -rounds rounds
// are printed as Markdown tables, with each contender's API calls per 100
// messages (each a round trip) and the targets of the replay engine
// (issue 9) marked pass or fail; the exit status is 1 when a contender
// failed to move its messages, not when a target is missed.
//
// It refuses to run unless AWS_ENDPOINT_URL names a loopback address: it
// creates and deletes queues and tables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/homingdlq/homing/internal/delayproxy"
	"github.com/homingdlq/homing/replay"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchreplay:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	n        int           // messages per contender on the bare emulator
	nDelayed int           // messages per contender through the delay proxy
	workers  int           // W
	rounds   int           // rounds per profile; the table shows medians
	delay    time.Duration // added to every client write by the proxy
	only     string        // run only the contenders whose key contains this
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("benchreplay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 1000, "dead letters per contender and round on the bare emulator")
	fs.IntVar(&o.nDelayed, "n-delayed", 1000, "dead letters per contender and round through the delay proxy")
	fs.IntVar(&o.workers, "workers", 4, "W: the workers of the engine's and the raw loop's W-worker rows")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; every contender runs once per round and profile, the tables show medians")
	fs.DurationVar(&o.delay, "delay", 10*time.Millisecond, "delay the proxy adds to every client write (0: no proxied profile)")
	fs.StringVar(&o.only, "only", "", "run only the contenders whose key contains this (engine-1, engine-w, naive, raw-1, raw-w)")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("flags: %w", err)
	}
	var errs []error
	if o.n < 10 || o.nDelayed < 10 {
		errs = append(errs, fmt.Errorf("-n %d, -n-delayed %d: want at least 10 each", o.n, o.nDelayed))
	}
	if o.workers < 2 || o.workers > replay.MaxWorkers {
		errs = append(errs, fmt.Errorf("-workers %d: want 2..%d (the 1-worker rows always run; replay.MaxWorkers)", o.workers, replay.MaxWorkers))
	}
	if o.rounds < 1 {
		errs = append(errs, fmt.Errorf("-rounds %d: want at least 1", o.rounds))
	}
	if o.delay < 0 {
		errs = append(errs, fmt.Errorf("-delay %s: want >= 0", o.delay))
	}
	return o, errors.Join(errs...)
}

// loopback returns host:port of AWS_ENDPOINT_URL, or an error unless it
// names a loopback address.
func loopback(getenv func(string) string) (string, error) {
	raw := getenv("AWS_ENDPOINT_URL")
	if raw == "" {
		return "", errors.New("AWS_ENDPOINT_URL is not set: run `make bench-replay`, which starts the emulator")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("AWS_ENDPOINT_URL=%q: not a URL", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("AWS_ENDPOINT_URL=%q: not a loopback address; the benchmark creates and deletes queues and tables, so it runs on a local emulator only", raw)
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port), nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	upstream, err := loopback(getenv)
	if err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	// Each profile's clients count their calls; the setup's do not.
	counted := func(endpoint string) (aws.Config, *callCounter) {
		c := cfg.Copy()
		calls := countCalls(cfg.HTTPClient)
		c.HTTPClient = calls
		if endpoint != "" {
			c.BaseEndpoint = aws.String(endpoint)
		}
		return c, calls
	}
	bare, bareCalls := counted("")
	profiles := []profile{{name: "bare emulator", n: o.n, cfg: bare, calls: bareCalls}}
	if o.delay > 0 {
		proxy, err := delayproxy.Start(upstream, o.delay)
		if err != nil {
			return err
		}
		defer proxy.Close()
		delayed, delayedCalls := counted(proxy.URL())
		profiles = append(profiles, profile{name: fmt.Sprintf("every call +%s", o.delay), n: o.nDelayed, cfg: delayed, delay: o.delay, calls: delayedCalls})
	}
	b := &bench{
		setup:    newClients(cfg), // fills, checks and cleans up at full speed
		workers:  o.workers,
		progress: stderr,
		logger:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		runID:    time.Now().UTC().Format("150405"),
	}
	cs := contenders(o.workers, o.only)
	res, err := b.measure(ctx, profiles, cs, o.rounds)
	if err != nil {
		return err
	}
	return report(stdout, res, profiles, cs, o)
}
