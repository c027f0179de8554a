package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
)

// app is one execution of dlq: its streams, its flags, and how it reaches
// AWS (tests replace connect with in-memory adapters).
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	isTerminal     func(any) bool
	connect        func(context.Context, *globalFlags) (*backend, error)
	now            func() time.Time // default time.Now

	flags globalFlags
}

// globalFlags are the root command's persistent flags.
type globalFlags struct {
	outputsFile    string
	outputsFileSet bool
	stack          string
	region         string
	profile        string
	json           bool
	verbose        bool

	dlqURL, sourceURL, parkingURL, invalidURL string
	ledgerTable, idempotencyTable             string
}

type resourceFlag struct {
	name, key, usage string
	value            *string
}

func (g *globalFlags) resourceFlags() []resourceFlag {
	return []resourceFlag{
		{"dlq-url", outDLQ, "URL of the dead-letter queue", &g.dlqURL},
		{"source-url", outSource, "URL of the source queue (where replays go)", &g.sourceURL},
		{"parking-url", outParking, "URL of the parking queue", &g.parkingURL},
		{"invalid-url", outInvalid, "URL of the invalid-message queue", &g.invalidURL},
		{"ledger-table", outLedger, "DynamoDB table of the replay ledger", &g.ledgerTable},
		{"idempotency-table", outIdempotency, "DynamoDB table of the consumer's idempotency records", &g.idempotencyTable},
	}
}

// execute runs dlq with args and returns the exit code. Errors go to
// stderr, prefixed "dlq: ".
func execute(ctx context.Context, args []string, a *app) int {
	if a.now == nil {
		a.now = time.Now
	}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var e *codedError
	if !errors.As(err, &e) {
		// Only cobra's own errors arrive untyped (every RunE types its
		// errors): unknown commands and flags, bad values, flag groups.
		e = &codedError{code: exitUsage, err: err}
	}
	fmt.Fprintln(a.stderr, "dlq:", e.err)
	if e.code == exitUsage {
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return e.code
}

const rootLong = `dlq is the command line for the people who own the dead-letter lane of the
order consumer: the DLQ (transient failures, replayed on a schedule), the
invalid queue (rejected by the consumer: fix at the producer, never replayed
as is) and the parking queue (replays exhausted: needs an operator).

A DLQ needs an owner and a procedure: docs/OPERATIONS.md is the runbook, alarm
by alarm. Messages in a DLQ expire with its retention: look before they do.

Cautions:
  - dlq never browses a queue that has a RedrivePolicy (a source queue) unless
    --force is given: receiving from a source queue counts as a delivery
    attempt and pushes orders toward the DLQ.
  - inspect and peek receive messages and release them at once; they do not
    delete anything, but the messages are invisible for a few seconds.
  - replay moves messages with the scheduled replay's engine, gates and
    ledger; it asks for confirmation on a terminal unless --yes or --dry-run.

Resources come from the stack outputs: --stack-outputs FILE (default
.local/outputs.json, written by ` + "`make deploy-local`" + `), or --stack NAME
(CloudFormation DescribeStacks), with the resource flags (--dlq-url...) on top.
AWS access is the SDK's default configuration: AWS_PROFILE or --profile,
AWS_REGION or --region, AWS_ENDPOINT_URL for an emulator.

` + exitCodesHelp

func (a *app) rootCommand() *cobra.Command {
	g := &a.flags
	root := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect, peek at, replay and audit the dead-letter lane of the order consumer",
		Long:  rootLong,
		Example: `  dlq inspect                                  # the local stack (.local/outputs.json)
  dlq --stack Homing --region eu-west-1 inspect
  dlq peek -n 5 --queue parking
  dlq replay --dry-run --older-than 1h
  dlq replay --order ORD-2026-000123 --yes --json
  dlq audit --order ORD-2026-000123
  dlq audit --runs 5`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			g.outputsFileSet = cmd.Flags().Changed("stack-outputs")
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.outputsFile, "stack-outputs", defaultOutputsFile, "`FILE` of flat stack outputs, as make deploy-local writes it")
	pf.StringVar(&g.stack, "stack", "", "read the outputs of the CloudFormation stack `NAME` instead of a file")
	pf.StringVar(&g.region, "region", "", "AWS region (default: AWS_REGION or the profile's)")
	pf.StringVar(&g.profile, "profile", "", "AWS shared-config profile (default: AWS_PROFILE)")
	pf.BoolVar(&g.json, "json", false, "print JSON (stable camelCase fields) instead of tables")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log the replay engine's per-message lines to stderr")
	for _, f := range g.resourceFlags() {
		pf.StringVar(f.value, f.name, "", f.usage+" (default: the "+f.key+" output)")
	}
	root.MarkFlagsMutuallyExclusive("stack", "stack-outputs")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &codedError{code: exitUsage, err: err} })
	root.AddCommand(a.inspectCommand(), a.peekCommand(), a.replayCommand(), a.auditCommand())
	return root
}

// session is what a command works with: the adapters and the resources.
type session struct {
	*backend
	res *resources
}

// open connects to AWS and reads the resources.
func (a *app) open(ctx context.Context) (*session, error) {
	b, err := a.connect(ctx, &a.flags)
	if err != nil {
		return nil, err
	}
	res, err := a.loadResources(ctx, b)
	if err != nil {
		return nil, err
	}
	return &session{backend: b, res: res}, nil
}

// logger is the engine's logger: warnings only, unless --verbose.
func (a *app) logger() *slog.Logger {
	level := slog.LevelWarn
	if a.flags.verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

// show prints a report: JSON with --json, else the table.
func show[T any](a *app, rep T, err error, table func(w io.Writer, rep T) error) error {
	if err != nil {
		return err
	}
	if a.flags.json {
		return a.printJSON(rep)
	}
	return table(a.stdout, rep)
}

// printJSON writes v as indented JSON to stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// runE wraps a command's work: positional arguments are a usage error,
// and an error without an exit code is an operational one.
func runE(f func(cmd *cobra.Command) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError("%s takes no arguments, got %q", cmd.CommandPath(), args)
		}
		return typed(f(cmd))
	}
}
