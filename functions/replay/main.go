// Command replay is the replay Lambda: on an EventBridge schedule (or when
// an operator invokes it) it brings messages back from the dead-letter
// queues of its routes with internal/replay, and returns the run summary.
//
// It accepts two payloads:
//
//   - an EventBridge scheduled event ({"source":"aws.events","detail-type":
//     "Scheduled Event",...}): every route, with the configured defaults;
//   - an on-demand request, every field optional:
//     {"dryRun":true,"max":10,"rate":5,"routes":["orders"],
//     "filter":{"reasons":["dead-lettered"],"olderThan":"1h","orderIds":["ORD-1"]}}.
//     Unknown fields are an error, so that a misspelt "dryRun" never turns
//     into a real run.
//
// Configuration is read from the environment; see [Config].
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/internal/dynamo"
	"github.com/homingdlq/homing/internal/replay"
	"github.com/homingdlq/homing/internal/tax"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := LoadConfig(os.Getenv)
	if err != nil {
		return err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	var health func(context.Context) error
	if cfg.HealthURL != "" {
		taxClient, err := tax.New(cfg.HealthURL, nil, tax.Options{})
		if err != nil {
			return fmt.Errorf("tax client: %w", err)
		}
		health = taxClient.Healthy
	}
	var (
		queue = sqs.NewFromConfig(awsCfg)
		db    = dynamodb.NewFromConfig(awsCfg)
	)
	var (
		_ replay.Queue          = queue
		_ dynamo.LedgerAPI      = db
		_ dynamo.CompletionsAPI = db
	)
	h := newHandler(cfg, deps{
		queue:       queue,
		ledger:      dynamo.NewLedger(db, cfg.LedgerTable, nil),
		completions: dynamo.NewCompletions(db, cfg.IdempotencyTable, cfg.ConsumerName, nil),
		health:      health,
		logger:      lambdacontext.NewLogger(lambdacontext.WithFunctionARN()),
		metrics:     os.Stdout,
	})
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return nil
}

// deps are the adapters the handler is built from; tests pass fakes.
type deps struct {
	queue       replay.Queue
	ledger      replay.Ledger
	completions replay.Completions
	health      func(context.Context) error // nil: no health gate
	logger      *slog.Logger
	metrics     io.Writer
	now         func() time.Time
	sleep       func(context.Context, time.Duration) error
}

// handler turns an invocation into a replay run.
type handler struct {
	engine *replay.Engine
	routes []replay.Route
}

func newHandler(cfg Config, d deps) *handler {
	e := replay.New(d.queue, d.ledger, replay.Options{
		MaxReplays:         cfg.MaxReplays,
		BackoffBase:        cfg.BackoffBase,
		BackoffMax:         cfg.BackoffMax,
		ExpiryRescueWindow: cfg.ExpiryRescueWindow,
		Rate:               cfg.Rate,
		MaxPerRun:          cfg.MaxPerRun,
		CanaryLimit:        cfg.CanaryLimit,
		RefillThreshold:    cfg.RefillThreshold,
		DeadlineMargin:     cfg.DeadlineMargin,
		Health:             d.health,
		Completions:        d.completions,
		Logger:             d.logger,
		Metrics:            d.metrics,
		Now:                d.now,
		Sleep:              d.sleep,
	})
	return &handler{engine: e, routes: cfg.Routes}
}

// Invoke implements lambda.Handler, so that the handler sees the payload as
// it came (an empty one, or one with trailing data, included) and every
// malformed payload gets a clear error.
func (h *handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	s, err := h.Handle(ctx, payload)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Handle runs one invocation and returns the run summary. A malformed
// payload, or an unknown route, is an error and nothing runs. The summary
// of a run that hit errors is logged, and the error returned, so that the
// function's Errors metric counts it.
func (h *handler) Handle(ctx context.Context, payload json.RawMessage) (replay.Summary, error) {
	req, err := h.request(payload)
	if err != nil {
		return replay.Summary{}, err
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		req.RunID = lc.AwsRequestID
	}
	return h.engine.Run(ctx, req)
}

// onDemand is the payload of an operator's invocation.
type onDemand struct {
	DryRun bool          `json:"dryRun"`
	Max    int           `json:"max"`
	Rate   float64       `json:"rate"`
	Filter replay.Filter `json:"filter"`
	Routes []string      `json:"routes"`
}

// request decodes either payload into a replay request.
func (h *handler) request(payload json.RawMessage) (replay.Request, error) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return replay.Request{}, errors.New(`empty payload: send an EventBridge scheduled event or a request such as {"dryRun":true}`)
	}
	// Both shapes are JSON objects; "source" and "detail-type" tell an
	// EventBridge event from an on-demand request, which has neither.
	var event struct {
		Source     *string `json:"source"`
		DetailType *string `json:"detail-type"`
	}
	if err := json.Unmarshal(trimmed, &event); err != nil {
		return replay.Request{}, fmt.Errorf("payload is not a valid JSON object: %w", err)
	}
	if event.Source != nil || event.DetailType != nil {
		if src, dt := deref(event.Source), deref(event.DetailType); src != "aws.events" || dt != "Scheduled Event" {
			return replay.Request{}, fmt.Errorf("unsupported event: source %q, detail-type %q (want aws.events, Scheduled Event)", src, dt)
		}
		return replay.Request{Routes: h.routes}, nil
	}
	var in onDemand
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return replay.Request{}, fmt.Errorf("on-demand request: %w", err)
	}
	req := replay.Request{DryRun: in.DryRun, Max: in.Max, Rate: in.Rate, Filter: in.Filter, Routes: h.routes}
	if len(in.Routes) > 0 {
		req.Routes = nil
		var unknown []string
		for _, name := range in.Routes {
			i := slices.IndexFunc(h.routes, func(r replay.Route) bool { return r.Name == name })
			if i < 0 {
				unknown = append(unknown, name)
				continue
			}
			req.Routes = append(req.Routes, h.routes[i])
		}
		if len(unknown) > 0 {
			names := make([]string, len(h.routes))
			for i, r := range h.routes {
				names[i] = r.Name
			}
			return replay.Request{}, fmt.Errorf("on-demand request: unknown routes %q (configured: %q)", unknown, names)
		}
	}
	if err := req.Validate(); err != nil {
		return replay.Request{}, fmt.Errorf("on-demand request: %w", err)
	}
	return req, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Config is the replay function's configuration, from these environment
// variables:
//
//	REPLAY_ROUTES          required  JSON array of {"name","dlqUrl","sourceUrl","parkingUrl"}
//	LEDGER_TABLE           required  DynamoDB table of the replay ledger (pk, sk)
//	IDEMPOTENCY_TABLE      required  the consumer's idempotency table, read by the canary gate
//	CONSUMER_NAME          invoice   the consumer's idempotency scope
//	HEALTH_URL             (none)    base URL of the tax service; its /health gates the run
//	MAX_REPLAYS            3         replays of a message before it is parked
//	BACKOFF_BASE           5m        backoff ceiling before the first replay (doubles per replay)
//	BACKOFF_MAX            4h        cap of the backoff ceiling
//	EXPIRY_RESCUE_WINDOW   24h       park messages this close to DLQ expiry that cannot be replayed
//	RATE                   50        messages sent per second (0.1..3000)
//	MAX_PER_RUN            1000      messages moved per run
//	CANARY_LIMIT           5         replays per route while the previous run's orders are not completed
//	REFILL_THRESHOLD       100       DLQ growth since the previous run that holds the route
//	DEADLINE_MARGIN        5s        no batch starts with less time left
type Config struct {
	Routes             []replay.Route
	LedgerTable        string
	IdempotencyTable   string
	ConsumerName       string
	HealthURL          string
	MaxReplays         int
	BackoffBase        time.Duration
	BackoffMax         time.Duration
	ExpiryRescueWindow time.Duration
	Rate               float64
	MaxPerRun          int
	CanaryLimit        int
	RefillThreshold    int
	DeadlineMargin     time.Duration
}

// LoadConfig reads the configuration through getenv and validates it. The
// error lists every problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	var errs []error
	str := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	num := func(key string, def int) int { return parse(getenv, &errs, key, def, strconv.Atoi, "an integer") }
	dur := func(key string, def time.Duration) time.Duration {
		return parse(getenv, &errs, key, def, time.ParseDuration, "a duration like 5m or 4h")
	}
	c := Config{
		LedgerTable:        str("LEDGER_TABLE", ""),
		IdempotencyTable:   str("IDEMPOTENCY_TABLE", ""),
		ConsumerName:       str("CONSUMER_NAME", "invoice"),
		HealthURL:          str("HEALTH_URL", ""),
		MaxReplays:         num("MAX_REPLAYS", replay.DefaultMaxReplays),
		BackoffBase:        dur("BACKOFF_BASE", replay.DefaultBackoffBase),
		BackoffMax:         dur("BACKOFF_MAX", replay.DefaultBackoffMax),
		ExpiryRescueWindow: dur("EXPIRY_RESCUE_WINDOW", replay.DefaultExpiryRescueWindow),
		Rate:               parse(getenv, &errs, "RATE", replay.DefaultRate, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number"),
		MaxPerRun:          num("MAX_PER_RUN", replay.DefaultMaxPerRun),
		CanaryLimit:        num("CANARY_LIMIT", replay.DefaultCanaryLimit),
		RefillThreshold:    num("REFILL_THRESHOLD", replay.DefaultRefillThreshold),
		DeadlineMargin:     dur("DEADLINE_MARGIN", replay.DefaultDeadlineMargin),
	}
	if v := getenv("REPLAY_ROUTES"); v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.Routes); err != nil {
			errs = append(errs, fmt.Errorf("REPLAY_ROUTES: not a JSON array of {\"name\",\"dlqUrl\",\"sourceUrl\",\"parkingUrl\"}: %w", err))
		}
	}
	if err := errors.Join(append(errs, c.Validate())...); err != nil {
		return Config{}, fmt.Errorf("replay configuration: %w", err)
	}
	return c, nil
}

// parse reads key through getenv with conv, or returns def when it is
// unset; a value conv rejects is reported in errs as not being want.
func parse[T any](getenv func(string) string, errs *[]error, key string, def T, conv func(string) (T, error), want string) T {
	v := getenv(key)
	if v == "" {
		return def
	}
	t, err := conv(v)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s=%q: not %s", key, v, want))
	}
	return t
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	for _, f := range [...]struct{ key, value string }{
		{"LEDGER_TABLE", c.LedgerTable}, {"IDEMPOTENCY_TABLE", c.IdempotencyTable}, {"CONSUMER_NAME", c.ConsumerName},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.key))
		}
	}
	if len(c.Routes) == 0 {
		errs = append(errs, errors.New("REPLAY_ROUTES is required: at least one route"))
	} else if err := (replay.Request{Routes: c.Routes}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("REPLAY_ROUTES: %w", err))
	}
	if c.MaxReplays < 1 || c.MaxReplays > 100 {
		errs = append(errs, fmt.Errorf("MAX_REPLAYS=%d: want 1..100", c.MaxReplays))
	}
	if c.BackoffBase <= 0 || c.BackoffMax < c.BackoffBase {
		errs = append(errs, fmt.Errorf("BACKOFF_BASE=%s, BACKOFF_MAX=%s: want 0 < base <= max", c.BackoffBase, c.BackoffMax))
	}
	if c.ExpiryRescueWindow <= 0 || c.ExpiryRescueWindow > 14*24*time.Hour {
		errs = append(errs, fmt.Errorf("EXPIRY_RESCUE_WINDOW=%s: want > 0 and <= 336h (the longest retention)", c.ExpiryRescueWindow))
	}
	if c.Rate < replay.MinRate || c.Rate > replay.MaxRate {
		errs = append(errs, fmt.Errorf("RATE=%g: want %g..%g messages per second", c.Rate, replay.MinRate, replay.MaxRate))
	}
	for _, f := range [...]struct {
		key   string
		value int
	}{{"MAX_PER_RUN", c.MaxPerRun}, {"CANARY_LIMIT", c.CanaryLimit}, {"REFILL_THRESHOLD", c.RefillThreshold}} {
		if f.value < 1 {
			errs = append(errs, fmt.Errorf("%s=%d: want >= 1", f.key, f.value))
		}
	}
	if c.DeadlineMargin <= 0 {
		errs = append(errs, fmt.Errorf("DEADLINE_MARGIN=%s: want > 0", c.DeadlineMargin))
	}
	if c.HealthURL != "" {
		if _, err := tax.New(c.HealthURL, nil, tax.Options{}); err != nil {
			errs = append(errs, fmt.Errorf("HEALTH_URL: %w", err))
		}
	}
	return errors.Join(errs...)
}
