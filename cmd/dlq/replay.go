package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// defaultRouteName is the lane's route name when neither the replay
// function's configuration nor the lane names it (infra/deadletter.DefaultRouteName).
const defaultRouteName = settings.DefaultRouteName

// replayFlags are the flags of dlq replay.
type replayFlags struct {
	from, to, route, function string
	healthURL, consumer       string
	noHealth, resetCount      bool
	dryRun, yes, force        bool
	toOtherAccount            bool // --to may name a queue outside the account and region replayed from
	// whether the flags were given: they override the function's values
	consumerSet, healthSet, functionSet bool
	toSet, routeSet                     bool
	max                                 int
	rate                                float64
	reasons, keys, orders               []string
	errorClasses                        []string // --error
	messageIDs                          []string // --message-id
	olderThan                           time.Duration
}

func (a *app) replayCommand() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay dead letters now, with filters, a cap and a rate, through the scheduled replay's engine",
		Long: `replay runs one replay now with the engine of the scheduled replay function
(replay): the same decisions (replay, wait for backoff, park when
replays are exhausted or the message nears expiry), the same ledger (exactly
once in effect), the same gates (health of the downstream; canary: the keys
the previous run replayed must have completed; refill: the DLQ must not be
refilling). The policy (max replays, backoff, expiry rescue window), the
health URL, the lane's route (its business key, payload hash, and whether its
consumer writes completion records) and the consumer's scope (CONSUMER_NAME)
are read from the replay function's configuration
(lambda:GetFunctionConfiguration on --replay-function, default the
ReplayFunctionName output), so an on-demand run decides as the scheduled one
does; --replay-function "" uses the engine's defaults and a route without a
key or completion records (messages are decided by their message id).

Filters (--reason, --older-than, --key, --error, --message-id) select
messages; the others are skipped and left in place. --order is an alias of --key. --error CLASS
(repeatable, or a comma list) selects the messages whose failure record has
that error class, as dlq inspect counts them ("unknown": no record): the
engine reads the consumer's records (CONSUMER_NAME's, in the lane's
idempotency table) by each message's own id. --dry-run --error CLASS shows
what a replay of one class would move. --max caps the
messages moved, --rate spaces the sends. --dry-run decides and reports but
moves and writes nothing.

--from parking|invalid replays from the parking or invalid queue instead of
the DLQ (to the source queue, or --to). Parked messages exhausted their
replays: --from parking needs --reset-count, which restarts their replay count
(the metadata's and the ledger's) so they get the full number of replays
again. Invalid messages are never replayed as is after a producer fix (the
producer sends corrected messages); --from invalid is for messages the
consumer rejected wrongly, after the consumer is fixed.

--to URL sends replays to another queue of the same type (FIFO or standard)
instead of the source queue. It must be in the account and region of the
queue replayed from, unless --to-other-account; the confirmation then names
the account and region replays go to.

Replays go where the lane's replay function sends them: its route of the
DLQ in REPLAY_ROUTES names the source and parking queues. A source or
parking queue of an outputs file, a stack, the tags or a resource flag that
names another queue is refused, naming both (--to sends elsewhere on
purpose). Without such a route, they are the lane's resources. Either way
they must be in the account and region of the queue replayed from.

Every flag is checked before the first AWS call, and so are the lane's
resources when an outputs file or the resource flags name them.

A run that is not a dry run writes its summary to the ledger, where the next
scheduled run reads it for its gates. On a terminal it asks for confirmation
unless --yes; without a terminal it needs --yes. Progress goes to stderr: a bar
when stderr is a terminal, else one line per route when its pass ends. -o json
prints the engine's run summary.`,
		Example: `  dlq replay --dry-run
  dlq replay --older-than 2h --max 100 --rate 10
  dlq replay --key KEY-1 --key KEY-2 --yes     # the messages of two business keys
  dlq replay --error http-503 --dry-run       # what a replay of one error class would move
  dlq replay --error http-503,timeout --yes
  dlq replay --reason dead-lettered -o json --yes > summary.json
  dlq replay --from parking --reset-count --reason replay-exhausted
  dlq replay --from invalid --reason REASON --to https://sqs.us-east-1.amazonaws.com/123456789012/my-lane-retry`,
		RunE: runE(func(cmd *cobra.Command) error {
			f.consumerSet = cmd.Flags().Changed("consumer")
			f.healthSet = cmd.Flags().Changed("health-url")
			f.functionSet = cmd.Flags().Changed("replay-function")
			f.toSet = cmd.Flags().Changed("to")
			f.routeSet = cmd.Flags().Changed("route")
			return a.replay(cmd.Context(), f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", roleDLQ, "the queue to replay from: dlq, parking or invalid")
	fl.StringVar(&f.to, "to", "", "send replays to this queue URL instead of the source queue (same type: FIFO or standard; same account and region)")
	fl.BoolVar(&f.toOtherAccount, "to-other-account", false, "let --to name a queue in another account or region than the queue replayed from")
	fl.StringVar(&f.route, "route", "", fmt.Sprintf("route name in the run summary (default: the replay function's route of the DLQ, or the lane's name, or %q)", settings.DefaultRouteName))
	fl.StringVar(&f.function, "replay-function", "", `read the policy and the health URL from this function (default: the ReplayFunctionName output; "" for the engine's defaults)`)
	fl.BoolVar(&f.dryRun, "dry-run", false, "decide and report; move and write nothing")
	fl.IntVar(&f.max, "max", 0, "move at most this many messages (default: the function's MAX_PER_RUN)")
	fl.Float64Var(&f.rate, "rate", 0, fmt.Sprintf("send at most this many messages per second, %s..%s (default: the function's %s)",
		settings.FormatFloat(settings.Rate.Min), settings.FormatFloat(settings.Rate.Max), settings.Rate.Env))
	fl.StringArrayVar(&f.reasons, "reason", nil, "only messages with this reason (repeatable): dead-lettered, replay-exhausted, expiry-rescue, or an invalid reason")
	fl.DurationVar(&f.olderThan, "older-than", 0, "only messages first dead-lettered at least this long ago (e.g. 90m, 24h)")
	fl.StringArrayVar(&f.keys, "key", nil, "only the messages of this business key (repeatable; the key is the lane's route's key expression of the body)")
	fl.StringArrayVar(&f.orders, "order", nil, "alias of --key")
	fl.StringSliceVar(&f.errorClasses, "error", nil, `only messages whose failure record has this error class (repeatable, or a comma list; "unknown": no record), as dlq inspect counts them`)
	fl.StringArrayVar(&f.messageIDs, "message-id", nil, "only the message of this id in the queue replayed from (repeatable), as dlq peek shows it")
	fl.BoolVar(&f.resetCount, "reset-count", false, "restart the replay count of the messages (only with --from parking|invalid)")
	fl.StringVar(&f.healthURL, "health-url", "", "base URL of the downstream service whose /health gates the run (default: the function's HEALTH_URL)")
	fl.BoolVar(&f.noHealth, "no-health-gate", false, "skip the health gate (when the downstream's /health is not reachable from here)")
	fl.StringVar(&f.consumer, "consumer", "", "the consumer's idempotency scope for the canary gate (default: the replay function's "+settings.ConsumerName.Env+")")
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	fl.BoolVar(&f.force, "force", false, "replay from a queue even if it has a RedrivePolicy (burns delivery attempts)")
	cmd.MarkFlagsMutuallyExclusive("health-url", "no-health-gate")
	return cmd
}

// check validates the flags that need no resource.
func (f *replayFlags) check() error {
	var errs []string
	if _, ok := roleOutputs[f.from]; !ok {
		errs = append(errs, fmt.Sprintf("--from %q: want dlq, parking or invalid", f.from))
	}
	if f.from == roleParking && !f.resetCount {
		errs = append(errs, "--from parking needs --reset-count: parked messages exhausted their replays and would only be parked again")
	}
	if f.resetCount && f.from == roleDLQ {
		errs = append(errs, "--reset-count works only with --from parking|invalid: on the DLQ it would lift the bound on replays")
	}
	if f.max < 0 {
		errs = append(errs, fmt.Sprintf("--max %d: want >= 0", f.max))
	}
	if f.rate != 0 && settings.Rate.Check(f.rate) != nil {
		errs = append(errs, fmt.Sprintf("--rate %g: want %s", f.rate, settings.Rate.Want()))
	}
	if f.olderThan < 0 {
		errs = append(errs, fmt.Sprintf("--older-than %s: want a positive duration", f.olderThan))
	}
	if f.functionSet && f.function != "" && !isFunctionName(f.function) {
		errs = append(errs, fmt.Sprintf(`--replay-function %q: not a Lambda function (want its name, ARN or partial ARN, with a qualifier or without; "" for the engine's defaults)`, f.function))
	}
	if f.toSet {
		if err := checkQueueURL("--to", f.to); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if f.toOtherAccount && !f.toSet {
		errs = append(errs, "--to-other-account works only with --to: the lane's own queues are in its DLQ's account and region")
	}
	if f.consumerSet {
		if err := checkConsumer(f.consumer); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if f.healthSet {
		if f.healthURL == "" {
			errs = append(errs, `--health-url "": want the downstream's base URL (--no-health-gate skips the gate)`)
		} else if _, err := (handler.Config{HealthURL: f.healthURL}).Health(nil); err != nil {
			errs = append(errs, fmt.Sprintf("--health-url: %v", cmp.Or(errors.Unwrap(err), err)))
		}
	}
	if f.routeSet && (f.route == "" || len(f.route) > settings.MaxRouteNameBytes) {
		errs = append(errs, fmt.Sprintf("--route %q: want 1..%d bytes", f.route, settings.MaxRouteNameBytes))
	}
	errs = append(errs, checkValues("key", f.keys, 0)...)
	errs = append(errs, checkValues("order", f.orders, 0)...)
	errs = append(errs, checkValues("reason", f.reasons, replay.MaxKeyID)...)
	errs = append(errs, checkValues("message-id", f.messageIDs, replay.MaxKeyID)...)
	if len(f.messageIDs) > replay.MaxFilterValues {
		errs = append(errs, fmt.Sprintf("--message-id: %d ids, want at most %d", len(f.messageIDs), replay.MaxFilterValues))
	}
	if n := len(keysOf(f.keys, f.orders)); n > replay.MaxFilterValues {
		errs = append(errs, fmt.Sprintf("--key: %d keys, want at most %d", n, replay.MaxFilterValues))
	}
	if len(f.reasons) > replay.MaxFilterValues {
		errs = append(errs, fmt.Sprintf("--reason: %d reasons, want at most %d", len(f.reasons), replay.MaxFilterValues))
	}
	for _, c := range f.errorClasses {
		if !settings.ValidFailureClass(c) {
			errs = append(errs, fmt.Sprintf("--error %s: want an error class, 1..64 bytes of a-z, 0-9 and - (as dlq inspect shows them)", shown(c)))
		}
	}
	if len(f.errorClasses) > replay.MaxFilterValues {
		errs = append(errs, fmt.Sprintf("--error: %d classes, want at most %d", len(f.errorClasses), replay.MaxFilterValues))
	}
	if len(errs) > 0 {
		return usageError("%s", strings.Join(errs, "; "))
	}
	return nil
}

// functionNamePattern is the pattern of lambda:GetFunctionConfiguration's
// FunctionName: a name, an ARN or a partial ARN, with a qualifier or
// without.
var functionNamePattern = regexp.MustCompile(`^(arn:(aws[a-zA-Z-]*)?:lambda:)?([a-z]{2}(-gov)?-[a-z]+-\d{1}:)?(\d{12}:)?(function:)?([a-zA-Z0-9-_.]+)(:(\$LATEST|[a-zA-Z0-9-_]+))?$`)

// isFunctionName reports whether v is a FunctionName that
// lambda:GetFunctionConfiguration takes: the pattern, 1..170 characters.
func isFunctionName(v string) bool { return len(v) <= 170 && functionNamePattern.MatchString(v) }

// checkValues checks the values of a repeatable filter flag: none empty,
// and none over most bytes unless most is 0 (a key may be of any length:
// the request bounds the keys in all).
func checkValues(flag string, values []string, most int) []string {
	var errs []string
	for _, v := range values {
		switch {
		case v == "":
			errs = append(errs, fmt.Sprintf("--%s \"\": want a value", flag))
		case most > 0 && len(v) > most:
			errs = append(errs, fmt.Sprintf("--%s: a value of %d bytes, want 1..%d", flag, len(v), most))
		}
	}
	return errs
}

// need is what a replay needs of the lane's resources, checked before any
// AWS call when they are known without one (see open): the queue it
// replays from, the one it sends to (the source queue, or --to: of the
// same type, and not the queue replayed from), the parking queue and the
// tables; the queues it sends to within the account and region of the
// queue replayed from (destination).
func (f *replayFlags) need(r *resources) error {
	from, err := r.get(roleOutputs[f.from])
	if err != nil {
		return err
	}
	if f.to != "" {
		if f.to == from {
			return usageError("--to %s is the queue replayed from (--from %s): replays go to another queue", f.to, f.from)
		}
		if err := checkTo(from, f.to); err != nil {
			return err
		}
	}
	keys := []string{outDLQ, outParking, outLedger, outIdempotency}
	if f.to == "" {
		keys = append(keys, outSource)
	}
	if err := needs(keys...)(r); err != nil {
		return err
	}
	_, _, err = f.destination(r, from, laneConfig{})
	return err
}

// checkTo refuses a --to queue of another type than the queue replayed from.
func checkTo(from, to string) error {
	fifo := func(u string) string {
		if settings.IsFIFO(u) {
			return "FIFO"
		}
		return "standard"
	}
	if to != "" && fifo(from) != fifo(to) {
		return usageError("--to %s is a %s queue but %s is a %s queue: replays go to a queue of the same type", to, fifo(to), from, fifo(from))
	}
	return nil
}

func (a *app) replay(ctx context.Context, f replayFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	s, err := a.open(ctx, f.need)
	if err != nil {
		return err
	}
	cfg, err := a.replayConfig(ctx, s, f)
	if err != nil {
		return err
	}
	rt := cfg.Routes[0]
	if _, err := browsable(ctx, s.queue, rt.DLQURL, "replay from", f.force); err != nil {
		return err
	}
	if f.to != "" {
		if _, err := attributes(ctx, s.queue, f.to); err != nil {
			return fmt.Errorf("--to: %w", err)
		}
	}
	req := replay.Request{
		Routes: cfg.Routes, DryRun: f.dryRun, Max: f.max, Rate: f.rate, ResetCount: f.resetCount,
		Filter: replay.Filter{Reasons: f.reasons, OlderThan: f.olderThan, Keys: keysOf(f.keys, f.orders), ErrorClasses: f.errorClasses, MessageIDs: f.messageIDs},
		RunID:  runID(a.now()),
	}
	if err := req.Validate(); err != nil {
		return &codedError{code: exitUsage, err: err}
	}
	if err := a.confirm(req, cfg, f.yes); err != nil {
		return err
	}
	sum, err := a.runEngine(ctx, s, cfg, req)
	if err != nil && sum.RunID == "" {
		return err
	}
	if a.flags.jsonOutput() {
		if err := a.printJSON(sum); err != nil {
			return err
		}
	} else if err := writeSummary(a.stdout, sum); err != nil {
		return err
	}
	return err
}

// runEngine runs req with the engine of cfg, as the replay function would,
// with a progress bar on stderr. Its error is the run's verdict, or, with
// an empty summary, why it did not run.
func (a *app) runEngine(ctx context.Context, s *session, cfg handler.Config, req replay.Request) (replay.Summary, error) {
	opts := cfg.Options()
	var err error
	if opts.Health, err = cfg.Health(nil); err != nil {
		return replay.Summary{}, err
	}
	opts.Completions = s.completions(cfg.IdempotencyTable, cfg.ConsumerName)
	opts.Failures = s.failures(cfg.IdempotencyTable, cfg.ConsumerName).Classes
	opts.Logger, opts.Now = a.logger(), a.now
	bar := a.progress()
	opts.OnProgress = bar.update
	sum, runErr := replay.New(s.queue, s.ledger(cfg.LedgerTable), opts).Run(ctx, req)
	bar.finish()
	if errors.Is(runErr, replay.ErrInvalidRequest) {
		return replay.Summary{}, &codedError{code: exitUsage, err: runErr}
	}
	return sum, verdict(sum, runErr)
}

// replayConfig builds the run's configuration: the replay function's
// environment when there is a function to read, with the route and the
// tables of the resources and the flags on top. Load validates it as the
// function does.
func (a *app) replayConfig(ctx context.Context, s *session, f replayFlags) (handler.Config, error) {
	dlq, err := s.res.get(outDLQ)
	if err != nil {
		return handler.Config{}, err
	}
	lc, err := s.laneConfig(ctx, f.function, f.functionSet, dlq)
	if err != nil {
		return handler.Config{}, fmt.Errorf("%w — "+`pass --replay-function NAME, or --replay-function "" for the engine's default policy`, err)
	}
	fn, env := lc.function, lc.env
	rt := laneRoute(lc, cmp.Or(s.res.lane, defaultRouteName), dlq)
	if len(keysOf(f.keys, f.orders)) > 0 && rt.Key == "" {
		return handler.Config{}, usageError("--key: the lane's route names no key expression (REPLAY_ROUTES of the replay function %q), so no message has a key to match", fn)
	}
	if f.route != "" {
		rt.Name = f.route
	}
	if f.from != roleDLQ {
		// Its own route name, so that the scheduled run's refill gate does
		// not compare the DLQ with this queue.
		rt.Name += "/" + f.from
		if rt.DLQURL, err = s.roleURL("from", f.from); err != nil {
			return handler.Config{}, err
		}
		rt.Invalid = f.from == roleInvalid
	}
	if err := checkTo(rt.DLQURL, f.to); err != nil {
		return handler.Config{}, err
	}
	if rt.SourceURL, rt.ParkingURL, err = f.destination(s.res, rt.DLQURL, lc); err != nil {
		return handler.Config{}, err
	}
	if err := s.tables(env, rt); err != nil {
		return handler.Config{}, err
	}
	b, _ := json.Marshal([]replay.Route{rt})
	env[settings.ReplayRoutes.Env] = string(b)
	if f.consumerSet {
		env[settings.ConsumerName.Env] = f.consumer
	}
	switch {
	case f.noHealth:
		env[settings.HealthURL.Env] = ""
	case f.healthSet:
		env[settings.HealthURL.Env] = f.healthURL
	}
	cfg, err := handler.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		if fn != "" {
			return cfg, fmt.Errorf("the configuration of replay function %s with the flags: %w", fn, err)
		}
		return cfg, &codedError{code: exitUsage, err: err}
	}
	return cfg, nil
}

// tables sets the run's tables in env: the ledger and the idempotency
// table are the replay function's, and the lane's resources (outputs and
// flags) that name others are refused, as a table ARN outside the DLQ's
// account and region is (a run reads its seal key and its history there).
func (s *session) tables(env map[string]string, rt replay.Route) error {
	for _, k := range []struct{ env, out string }{{settings.LedgerTable.Env, outLedger}, {settings.IdempotencyTable.Env, outIdempotency}} {
		found, err := s.res.get(k.out)
		fn := env[k.env] // the replay function's own, when it was read
		switch {
		case err != nil && fn == "":
			return err
		case err != nil:
			found = fn
		case fn != "" && tableName(fn) != tableName(found):
			return fmt.Errorf("%s names table %s, but the lane's replay function uses %s (%s): refusing a run on another table — fix the outputs, or pass --%s %s",
				s.res.origin(k.out), shown(found), shown(fn), k.env, s.res.flags[k.out], shown(fn))
		}
		if err := tableWithin(found, rt.DLQURL); err != nil {
			return fmt.Errorf("%s: %w", s.res.origin(k.out), err)
		}
		env[k.env] = found
	}
	return nil
}

// laneRoute is the lane's route of the replay function's configuration lc
// as a run of f starts from it: its name (lane's when lc names none), and
// what the engine must know of the lane's messages (key, payload hash,
// records).
func laneRoute(lc laneConfig, lane, dlq string) replay.Route {
	rt := replay.Route{Name: lane, DLQURL: dlq}
	if lc.named {
		rt.Name = lc.route.Name
	}
	if lc.found {
		rt.Key = lc.route.Key
		rt.PayloadHash = lc.route.PayloadHash
		rt.Records = lc.route.Records
	}
	return rt
}

// runID names a CLI run apart from the function's (Lambda request ids).
func runID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "dlq-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// confirm asks before a run that moves messages: on a terminal, a y/N
// question that names the account and region replays go to; without one,
// --yes is required. Replays to another account or region than the queue
// replayed from's (--to-other-account) are announced on stderr even so.
func (a *app) confirm(req replay.Request, cfg handler.Config, yes bool) error {
	rt := req.Routes[0]
	dest, home := placeOf(rt.SourceURL), placeOf(rt.DLQURL)
	where := dest.String()
	if !dest.within(home) {
		where += ", not the " + home.String() + " of the queue replayed from"
		if !req.DryRun {
			fmt.Fprintf(a.stderr, "dlq: replays go to %s in %s (--to-other-account)\n", rt.SourceURL, where)
		}
	}
	if req.DryRun || yes {
		return nil
	}
	if !a.isTerminal(a.stdin) {
		return refused("not moving messages without confirmation: stdin is not a terminal — pass --yes (or --dry-run)")
	}
	limit := "the default cap"
	if req.Max > 0 {
		limit = fmt.Sprintf("at most %d", req.Max)
	}
	fmt.Fprintf(a.stderr, "Replay %s messages from %s to %s (%s; parking %s; max replays %d, filter %s)? [y/N] ",
		limit, rt.DLQURL, rt.SourceURL, where, rt.ParkingURL, cfg.Engine.MaxReplays, filterText(req.Filter))
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	if answer := strings.ToLower(strings.TrimSpace(line)); answer != "y" && answer != "yes" {
		return refused("replay not confirmed: nothing moved")
	}
	return nil
}

func filterText(f replay.Filter) string {
	var parts []string
	if len(f.Reasons) > 0 {
		parts = append(parts, "reason "+strings.Join(f.Reasons, ","))
	}
	if f.OlderThan > 0 {
		parts = append(parts, "older than "+f.OlderThan.String())
	}
	if len(f.Keys) > 0 {
		parts = append(parts, "keys "+strings.Join(f.Keys, ","))
	}
	if len(f.ErrorClasses) > 0 {
		parts = append(parts, "error class "+strings.Join(f.ErrorClasses, ","))
	}
	if len(f.MessageIDs) > 0 {
		parts = append(parts, fmt.Sprintf("%d message id(s)", len(f.MessageIDs)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// verdict is the exit status of a finished run: exitIncomplete when it hit
// errors or when closed gates held every route.
func verdict(s replay.Summary, runErr error) error {
	switch {
	case runErr != nil:
		return &codedError{code: exitIncomplete, err: fmt.Errorf("replay run %s finished with an error: %w", s.RunID, runErr)}
	case s.Total.Errors > 0:
		return &codedError{code: exitIncomplete, err: fmt.Errorf("replay run %s: %d message(s) failed; run `dlq peek` and `dlq audit --runs 1`, then retry", s.RunID, s.Total.Errors)}
	case len(s.Routes) > 0 && !slices.ContainsFunc(s.Routes, func(r replay.RouteSummary) bool { return r.StopReason != replay.StopGate }):
		return &codedError{code: exitIncomplete, err: fmt.Errorf("replay run %s: closed gates held every route (%s); nothing moved", s.RunID, gatesText(s))}
	}
	return nil
}

// gatesText lists the gate decisions of a run: "health=open canary=limited(5)".
func gatesText(s replay.Summary) string {
	parts := gateParts(nil, "", s.Gates)
	for _, r := range s.Routes {
		prefix := ""
		if len(s.Routes) > 1 {
			prefix = printable.String(r.Route) + "/"
		}
		parts = gateParts(parts, prefix, r.Gates)
	}
	return strings.Join(parts, " ")
}

// gateList lists gate decisions: "health=open canary=skipped".
func gateList(gates []replay.Gate) string { return strings.Join(gateParts(nil, "", gates), " ") }

// gateParts appends each gate's decision to parts, its name prefixed.
func gateParts(parts []string, prefix string, gates []replay.Gate) []string {
	for _, g := range gates {
		p := prefix + g.Name + "=" + string(g.Decision)
		if g.Decision == replay.GateLimited {
			p += fmt.Sprintf("(%d)", g.Limit)
		}
		parts = append(parts, p)
	}
	return parts
}

func parkedText(p map[string]int) string {
	if len(p) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, fmt.Sprintf("%d %s", p[k], printable.String(k)))
	}
	return strings.Join(parts, ", ")
}

// writeSummary prints a run summary as a table.
func writeSummary(w io.Writer, s replay.Summary) error {
	kind := "run"
	if s.DryRun {
		kind = "dry run (nothing moved, nothing written)"
	}
	fmt.Fprintf(w, "Replay %s %s: %s, max %d, rate %g/s, filter %s\n", kind, s.RunID, duration(time.Duration(s.DurationMS)*time.Millisecond), s.Max, s.Rate, filterPtrText(s.Filter))
	fmt.Fprintf(w, "Gates: %s\n", gatesText(s))
	for _, r := range s.Routes {
		for _, g := range slices.Concat(s.Gates, r.Gates) {
			if g.Decision == replay.GateClosed || g.Decision == replay.GateLimited || g.Name == replay.GateSeal && g.Detail != "" {
				fmt.Fprintf(w, "  %s %s: %s\n", g.Name, g.Decision, printable.String(g.Detail))
			}
		}
	}
	for _, r := range s.Routes {
		if len(r.BackClasses) > 0 {
			fmt.Fprintf(w, "  %s: replays back in the DLQ by error class: %s\n", printable.String(r.Route), backText(r.BackClasses))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tDEPTH\tEXAMINED\tREPLAYED\tPARKED\tDELAYED\tSKIPPED\tDEFERRED\tBLOCKED\tRECOVERED\tAPPLIED\tERRORS\tSTOP")
	for _, r := range s.Routes {
		stop := string(r.StopReason)
		if r.Error != "" {
			stop += ": " + printable.String(r.Error)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", printable.String(r.Route), r.Depth, r.Examined, r.Replayed, parkedText(r.Parked),
			r.Delayed, r.Skipped, r.Deferred, r.Blocked, r.Recovered, r.Applied, r.Errors, stop)
	}
	return tw.Flush()
}

// backText lists classes, the most messages first: "19 http-503, 1 panic".
func backText(classes map[string]int) string {
	names := slices.SortedFunc(maps.Keys(classes), func(a, b string) int { return cmp.Or(cmp.Compare(classes[b], classes[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, c := range names {
		parts[i] = fmt.Sprintf("%d %s", classes[c], printable.String(c))
	}
	return strings.Join(parts, ", ")
}

func filterPtrText(f *replay.Filter) string {
	if f == nil {
		return "none"
	}
	return filterText(*f)
}
