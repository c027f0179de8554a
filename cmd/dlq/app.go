package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/homingdlq/homing/internal/printable"
)

// app is one execution of dlq: its streams, its environment, its flags,
// and how it reaches AWS (tests replace connect with in-memory adapters).
type app struct {
	stdin io.Reader
	// stdout and stderr are for people: execute puts printable writers
	// over the streams it is given, so that nothing dlq prints acts on a
	// terminal. jsonOut is stdout as given, for -o json's exact bytes; barOut
	// is stderr as given, for the progress bar on a terminal.
	stdout, stderr  io.Writer
	jsonOut, barOut io.Writer
	isTerminal      func(any) bool
	// connect builds the AWS adapters; log is dlq's logger, which the
	// SDK's own log lines go to (see connectAWS).
	connect func(ctx context.Context, g *globalFlags, log *slog.Logger) (*backend, error)
	now     func() time.Time        // default time.Now
	getenv  func(key string) string // default os.Getenv
	// sleep waits d or until ctx ends (its error then); default a timer.
	sleep func(ctx context.Context, d time.Duration) error

	flags globalFlags
}

// globalFlags are the root command's persistent flags, with the
// environment variables that stand in for them resolved.
type globalFlags struct {
	outputsFile string // --outputs-file, or HOMING_OUTPUTS
	stack       string // --stack, or HOMING_STACK
	lane        string // --lane, or HOMING_LANE
	// where each of the above came from: the flag or the variable (for messages)
	outputsFileFrom, stackFrom, laneFrom string

	region  string
	profile string
	output  string // table or json
	json    bool   // --json, the same as -o json
	verbose int    // -v: 1, -vv: 2 (see logger)

	dlqURL, sourceURL, parkingURL, invalidURL string
	ledgerTable, idempotencyTable             string
	archiveBucket                             string
}

// Output formats of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// jsonOutput reports whether the output is JSON.
func (g *globalFlags) jsonOutput() bool { return g.output == outputJSON }

type resourceFlag struct {
	name, key, usage string
	value            *string
	check            func(name, value string) error // what a value must be: the flag's, and its output's
}

func (g *globalFlags) resourceFlags() []resourceFlag {
	return []resourceFlag{
		{"dlq-url", outDLQ, "URL of the dead-letter queue", &g.dlqURL, checkQueueURL},
		{"source-url", outSource, "URL of the source queue (where replays go)", &g.sourceURL, checkQueueURL},
		{"parking-url", outParking, "URL of the parking queue", &g.parkingURL, checkQueueURL},
		{"invalid-url", outInvalid, "URL of the invalid-message queue", &g.invalidURL, checkQueueURL},
		{"ledger-table", outLedger, "DynamoDB table of the replay ledger (and of a FIFO lane's parked groups)", &g.ledgerTable, checkTableName},
		{"idempotency-table", outIdempotency, "DynamoDB table of the consumer's idempotency records", &g.idempotencyTable, checkTableName},
		{"archive-bucket", outArchive, "S3 bucket of the lane's archive", &g.archiveBucket, checkBucketName},
	}
}

// execute runs dlq with args and returns the exit code. Errors go to
// stderr, prefixed "dlq: ". What it prints for people goes through
// printable writers (see app).
func execute(ctx context.Context, args []string, a *app) int {
	a.jsonOut, a.barOut = a.stdout, a.stderr
	stdout, stderr := printable.NewWriter(a.stdout), printable.NewWriter(a.stderr)
	a.stdout, a.stderr = stdout, stderr
	code := a.execute(ctx, args)
	_ = stdout.Flush()
	_ = stderr.Flush()
	return code
}

func (a *app) execute(ctx context.Context, args []string) int {
	if a.now == nil {
		a.now = time.Now
	}
	if a.getenv == nil {
		a.getenv = os.Getenv
	}
	if a.sleep == nil {
		a.sleep = sleep
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
	if e.cause != nil && a.flags.verbose > 0 {
		fmt.Fprintln(a.stderr, "dlq: cause:", e.cause)
	}
	if e.code == exitUsage {
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return e.code
}

const rootLong = `dlq is the command line for the people who own a dead-letter lane: its DLQ
(transient failures, replayed on a schedule), its invalid queue (rejected by
the consumer: fix at the producer, never replayed as is) and its parking queue
(replays exhausted: needs an operator).

A DLQ needs an owner and a procedure: docs/OPERATIONS.md is the runbook, alarm
by alarm. Messages in a DLQ expire with its retention: look before they do.

Cautions:
  - dlq never browses a queue that has a RedrivePolicy (a source queue) unless
    --force is given: receiving from a source queue counts as a delivery
    attempt and pushes messages toward the DLQ.
  - inspect and peek receive messages and release them at once; they do not
    delete anything, but the messages are invisible for a few seconds.
  - replay moves messages with the scheduled replay's engine, gates and
    ledger; it asks for confirmation on a terminal unless --yes or --dry-run.
  - groups release lets a parked message group go on: its parked records go
    back to the source queue, in sequence. It asks for confirmation on a
    terminal unless --yes or --dry-run.
  - archive restore sends archived messages back to the parking queue; it
    asks for confirmation on a terminal unless --yes or --dry-run.

Where the lane is, first that applies:
  --outputs-file FILE   the stack outputs as ` + "`cdk deploy --outputs-file`" + ` writes them
                        ({"Stack":{"Key":"value"}}, with --stack NAME to pick a stack
                        of several) or flat ({"Key":"value"}); HOMING_OUTPUTS=FILE
  --stack NAME          the outputs of a deployed stack (CloudFormation
                        DescribeStacks); HOMING_STACK=NAME
  --lane NAME alone     the resources tagged homing:lane=NAME (Resource Groups
                        Tagging API), with their homing:role tags
  nothing               .local/outputs.json of the current directory when it
                        exists (the local stack of ` + "`make deploy-local`" + `), announced
                        on stderr with its absolute path
A stack may hold several lanes: each output is named <Lane><Key>
(MyLaneDeadLetterQueueUrl for lane my-lane). --lane NAME (or HOMING_LANE) picks
one; with one lane, it is picked without --lane. The resource flags
(--dlq-url...) override what was found, or stand alone. Flags win over the
environment variables. Every value found is checked as its flag is; a URL
with credentials (user:password@) is refused, and never printed.

AWS access is the SDK's default configuration: AWS_PROFILE or --profile,
AWS_REGION or --region, AWS_ENDPOINT_URL for an emulator. dlq checks its flags
and where the lane is before it looks for a region or credentials, and those
before its first AWS call.

` + exitCodesHelp

func (a *app) rootCommand() *cobra.Command {
	g := &a.flags
	root := &cobra.Command{
		Use:     "dlq",
		Short:   "Inspect, peek at, replay and audit a dead-letter lane, release its parked message groups, read its archive",
		Long:    rootLong,
		Version: version(),
		Example: `  dlq --stack MyStack --region eu-west-1 inspect
  dlq --outputs-file cdk-outputs.json --lane my-lane peek -n 5 --queue parking
  dlq --lane my-lane inspect                   # found by its tags
  dlq replay --dry-run --older-than 1h
  dlq replay --key KEY --yes -o json           # the messages of one business key
  dlq audit --key KEY                          # its history and completion record
  dlq audit --runs 5
  dlq groups                                   # the parked message groups of a FIFO lane
  dlq groups release GROUP                     # let one go on, its parked records in sequence
  dlq archive ls --key KEY                     # the archived messages of one business key`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.resolveFlags(cmd) },
	}
	root.SetVersionTemplate("dlq {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&g.outputsFile, "outputs-file", "", "read the stack outputs from `FILE` (cdk deploy --outputs-file, or flat); env "+envOutputs)
	pf.StringVar(&g.outputsFile, "stack-outputs", "", "the same as --outputs-file")
	_ = pf.MarkHidden("stack-outputs") // the flag's former name, kept for scripts
	pf.StringVar(&g.stack, "stack", "", "the CloudFormation stack `NAME`: its outputs, or its entry in --outputs-file; env "+envStack)
	pf.StringVar(&g.lane, "lane", "", "the lane `NAME` (needed when the outputs hold several; alone, find the lane by its tags); env "+envLane)
	pf.StringVar(&g.region, "region", "", "AWS region (default: AWS_REGION or the profile's)")
	pf.StringVar(&g.profile, "profile", "", "AWS shared-config profile (default: AWS_PROFILE)")
	pf.StringVarP(&g.output, "output", "o", outputTable, "output `FORMAT`: table, or json (stable camelCase fields)")
	pf.BoolVar(&g.json, "json", false, "the same as -o json")
	pf.CountVarP(&g.verbose, "verbose", "v", "log to stderr: once (-v) the replay engine's per-message lines and the cause of an AWS error, twice (-vv) the engine's and the AWS SDK's debug lines too")
	for _, f := range g.resourceFlags() {
		pf.StringVar(f.value, f.name, "", f.usage+" (default: the lane's "+f.key+" output)")
	}
	root.MarkFlagsMutuallyExclusive("outputs-file", "stack-outputs")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &codedError{code: exitUsage, err: err} })
	root.AddCommand(a.inspectCommand(), a.peekCommand(), a.replayCommand(), a.auditCommand(), a.groupsCommand(), a.archiveCommand())
	return root
}

// resolveFlags checks the global flags and fills in from the environment
// the ones not given, before any command reads a file or reaches AWS.
func (a *app) resolveFlags(cmd *cobra.Command) error {
	g := &a.flags
	fl := cmd.Flags()
	if g.json {
		if fl.Changed("output") && g.output != outputJSON {
			return usageError("--json and -o %s disagree: pass one of them", g.output)
		}
		g.output = outputJSON
	}
	if g.output != outputTable && g.output != outputJSON {
		return usageError("-o %q: want table or json", g.output)
	}
	fileSet := fl.Changed("outputs-file") || fl.Changed("stack-outputs")
	stackSet := fl.Changed("stack")
	switch {
	case fileSet && g.outputsFile == "":
		return usageError("--outputs-file \"\": want a file")
	case stackSet && g.stack == "":
		return usageError("--stack \"\": want a stack name")
	case fl.Changed("lane") && g.lane == "":
		return usageError("--lane \"\": want a lane name")
	}
	g.outputsFileFrom, g.stackFrom, g.laneFrom = "--outputs-file", "--stack", "--lane"
	if !fileSet && !stackSet { // the environment says where the lane is only when no flag does
		g.outputsFile, g.outputsFileFrom = a.getenv(envOutputs), envOutputs
		g.stack, g.stackFrom = a.getenv(envStack), envStack
	}
	if !fl.Changed("lane") {
		g.lane, g.laneFrom = a.getenv(envLane), envLane
	}
	for _, f := range g.resourceFlags() {
		if fl.Changed(f.name) {
			if err := f.check("--"+f.name, *f.value); err != nil {
				return &codedError{code: exitUsage, err: err}
			}
		}
	}
	return nil
}

// session is what a command works with: the adapters and the resources.
type session struct {
	*backend
	res *resources
}

// logger is dlq's logger, the replay engine's and the AWS SDK's (at
// debug level): warnings only; -v adds the engine's per-message lines
// (info), -vv the debug lines.
func (a *app) logger() *slog.Logger {
	level := slog.LevelWarn
	switch {
	case a.flags.verbose >= 2:
		level = slog.LevelDebug
	case a.flags.verbose == 1:
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

// show prints a report: JSON with -o json, else the table.
func show[T any](a *app, rep T, err error, table func(w io.Writer, rep T) error) error {
	if err != nil {
		return err
	}
	if a.flags.jsonOutput() {
		return a.printJSON(rep)
	}
	return table(a.stdout, rep)
}

// printJSON writes v as indented JSON to stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.jsonOut)
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

// sleep waits d, or until ctx ends: ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
