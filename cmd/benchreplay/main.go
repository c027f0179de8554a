// Command benchreplay measures how fast dead letters go back to their source
// queue on the local emulator, side by side in one run (`make bench-replay`
// builds bin/dlq, starts the emulator, runs it and stops the emulator):
//
//   - the replay engine as the replay function wires it (handler.LoadConfig
//     of the function's environment, handler.New over the real SQS client,
//     the dynamo ledger and completions on DynamoDB tables created for the
//     round, invoked with a scheduled event), with 1 worker and with W;
//   - `dlq replay`, the operator's path: the built bin/dlq, started as a
//     subprocess against the same kind of queues and tables, finding them
//     through an outputs file and its policy through a replay function
//     created on the emulator with the same environment, with 1 and W
//     workers (the function's WORKERS);
//   - the naive mover of blog-post scripts: receive 1, send 1, delete 1;
//   - the raw SDK batch loop: receive 10 (no long poll), SendMessageBatch,
//     DeleteMessageBatch, with 1 worker and with W.
//
// Each contender gets fresh queues in every round, filled with the same N
// dead letters: valid order.created events with a producer's traceparent
// attribute, as SQS's redrive leaves them in a DLQ. Every contender runs on
// the bare emulator and, for each of -delay's delays (10ms,50ms), through a
// TCP proxy (internal/tools/delayproxy) that delays every client write, SQS and
// DynamoDB calls alike, by that delay. The medians of -rounds rounds are
// printed as Markdown tables, with each contender's API calls per 100
// messages and the targets of the replay engine.
//
// The bare column is the emulator's ceiling for each contender: its calls
// cost the CPU of the emulator's one Python process, on the benchmark's own
// cores, not round trips. A delayed figure above half its own contender's
// bare figure is marked CPU-bound: the emulator's CPU, not the delay, held
// it, and it is printed but not judged. The rate targets are judged on the
// other delayed figures only (round trips dominate there); the calls target
// is judged in every column. The exit status is 1 when a contender failed
// to move its messages, not when a target is missed.
//
// It refuses to run unless AWS_ENDPOINT_URL names a loopback address: it
// creates and deletes queues, tables and functions.
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
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/delayproxy"
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
	n        int       // messages per contender on the bare emulator
	nDelayed int       // messages per contender through the delay proxy
	nNaive   int       // at most this many for the naive mover through the delay proxy
	workers  int       // W
	rounds   int       // rounds per profile; the table shows medians
	delays   durations // one delayed profile each, added to every client write by the proxy
	only     string    // run only the contenders whose key contains this
	dlq      string    // the dlq binary of the CLI contenders
}

// defaultDelays are the delayed profiles of a run without -delay: 10 ms is
// about an in-region round trip; at 50 ms every contender on a 2-core
// machine is far below its bare ceiling, so round trips dominate.
var defaultDelays = durations{10 * time.Millisecond, 50 * time.Millisecond}

// durations is a flag of comma-separated durations ("10ms,50ms").
type durations []time.Duration

func (d *durations) String() string {
	s := make([]string, len(*d))
	for i, v := range *d {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}

// Set replaces the list; "" and "0" leave it empty (no delayed profile).
func (d *durations) Set(v string) error {
	*d = nil
	if v == "" || v == "0" {
		return nil
	}
	for f := range strings.SplitSeq(v, ",") {
		x, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		*d = append(*d, x)
	}
	return nil
}

func parse(args []string, stderr io.Writer) (options, error) {
	o := options{delays: slices.Clone(defaultDelays)}
	fs := flag.NewFlagSet("benchreplay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 1000, "dead letters per contender and round on the bare emulator")
	fs.IntVar(&o.nDelayed, "n-delayed", 1000, "dead letters per contender and round through the delay proxy")
	fs.IntVar(&o.nNaive, "n-naive", 200, "at most this many dead letters for the naive mover through the delay proxy (it pays 3 round trips a message whatever N)")
	fs.IntVar(&o.workers, "workers", 4, "W: the workers of the W-worker rows (engine, dlq replay, raw loop)")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; every contender runs once per round and profile, the tables show medians")
	fs.Var(&o.delays, "delay", "delays the proxy adds to every client write, comma-separated: one column each (\"\" or 0: the bare emulator only)")
	fs.StringVar(&o.only, "only", "", "run only the contenders whose key contains this ("+strings.Join(contenderKeys(), ", ")+")")
	fs.StringVar(&o.dlq, "dlq", "bin/dlq", "the dlq binary of the dlq replay rows (built by make bin/dlq)")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("flags: %w", err)
	}
	var errs []error
	if o.n < 10 || o.nDelayed < 10 || o.nNaive < 10 {
		errs = append(errs, fmt.Errorf("-n %d, -n-delayed %d, -n-naive %d: want at least 10 each", o.n, o.nDelayed, o.nNaive))
	}
	if o.workers < 2 || o.workers > settings.MaxWorkers {
		errs = append(errs, fmt.Errorf("-workers %d: want 2..%d (the 1-worker rows always run; WORKERS' bound)", o.workers, settings.MaxWorkers))
	}
	if o.rounds < 1 {
		errs = append(errs, fmt.Errorf("-rounds %d: want at least 1", o.rounds))
	}
	for i, d := range o.delays {
		if d <= 0 || slices.Contains(o.delays[:i], d) {
			errs = append(errs, fmt.Errorf("-delay %s: want distinct delays above 0", &o.delays))
			break
		}
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
	cs := contenders(o.workers, o.only, o.dlq)
	if len(cs) == 0 {
		return fmt.Errorf("-only %q: no contender's key contains it (%s)", o.only, strings.Join(contenderKeys(), ", "))
	}
	cli := slices.ContainsFunc(cs, func(c contender) bool { return c.cli })
	if cli {
		if _, err := os.Stat(o.dlq); err != nil {
			return fmt.Errorf("-dlq %s: %w (make bin/dlq builds it)", o.dlq, err)
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	// Each profile's clients count their calls; the setup's do not. A
	// subprocess (dlq replay) reaches the profile's endpoint through a
	// counting proxy of this process, into the same counter.
	newProfile := func(name string, n int, delay time.Duration, endpoint string) (profile, error) {
		c := cfg.Copy()
		calls := countCalls(cfg.HTTPClient)
		c.HTTPClient = calls
		c.BaseEndpoint = aws.String(endpoint)
		p := profile{name: name, n: n, cfg: c, delay: delay, calls: calls}
		if delay > 0 {
			p.naiveMax = o.nNaive
		}
		if cli {
			proxy, err := startCountingProxy(endpoint, calls)
			if err != nil {
				return p, err
			}
			p.subprocess = proxy
		}
		return p, nil
	}
	bare, err := newProfile("bare emulator", o.n, 0, getenv("AWS_ENDPOINT_URL"))
	if err != nil {
		return err
	}
	profiles := []profile{bare}
	defer func() {
		for _, p := range profiles {
			p.close()
		}
	}()
	for _, d := range o.delays {
		proxy, err := delayproxy.Start(upstream, d)
		if err != nil {
			return err
		}
		defer proxy.Close()
		p, err := newProfile(fmt.Sprintf("every call +%s", d), o.nDelayed, d, proxy.URL())
		if err != nil {
			return err
		}
		profiles = append(profiles, p)
	}
	dir, err := os.MkdirTemp("", "benchreplay-")
	if err != nil {
		return fmt.Errorf("temporary directory for the outputs files: %w", err)
	}
	defer os.RemoveAll(dir)
	b := &bench{
		setup:    newSetup(cfg), // fills, checks and cleans up at full speed
		workers:  o.workers,
		progress: stderr,
		logger:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		runID:    time.Now().UTC().Format("150405"),
		dir:      dir,
		environ:  os.Environ(),
	}
	info := runInfo{before: loadAverage()}
	begin := time.Now()
	res, err := b.measure(ctx, profiles, cs, o.rounds)
	if err != nil {
		return err
	}
	info.elapsed = time.Since(begin)
	info.after = loadAverage()
	return report(stdout, res, profiles, cs, o, info)
}

// loadAverage is the machine's load averages over 1, 5 and 15 minutes
// (Linux's /proc/loadavg), or "" where there is none: other work on the
// machine shares the emulator's cores.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
