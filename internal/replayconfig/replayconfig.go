package replayconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/homingdlq/homing/internal/envconfig"
	"github.com/homingdlq/homing/internal/invoicing"
	"github.com/homingdlq/homing/internal/metrics"
	"github.com/homingdlq/homing/internal/tax"
	"github.com/homingdlq/homing/replay"
)

// Config is the replay function's configuration, from these environment
// variables (see [Load]):
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
//	POWERTOOLS_SERVICE_NAME       CONSUMER_NAME  the Lane dimension of the run's metrics: the lane's name
//	POWERTOOLS_METRICS_NAMESPACE  Homing         the CloudWatch namespace of the run's metrics
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
	Metrics            metrics.Config
}

// Load reads the configuration through getenv and validates it. The error
// lists every problem at once.
func Load(getenv func(string) string) (Config, error) {
	env := envconfig.New(getenv)
	var errs []error
	c := Config{
		LedgerTable:        env.String("LEDGER_TABLE", ""),
		IdempotencyTable:   env.String("IDEMPOTENCY_TABLE", ""),
		ConsumerName:       env.String("CONSUMER_NAME", "invoice"),
		HealthURL:          env.String("HEALTH_URL", ""),
		MaxReplays:         env.Int("MAX_REPLAYS", replay.DefaultMaxReplays),
		BackoffBase:        env.Duration("BACKOFF_BASE", replay.DefaultBackoffBase),
		BackoffMax:         env.Duration("BACKOFF_MAX", replay.DefaultBackoffMax),
		ExpiryRescueWindow: env.Duration("EXPIRY_RESCUE_WINDOW", replay.DefaultExpiryRescueWindow),
		Rate:               env.Float("RATE", replay.DefaultRate),
		MaxPerRun:          env.Int("MAX_PER_RUN", replay.DefaultMaxPerRun),
		CanaryLimit:        env.Int("CANARY_LIMIT", replay.DefaultCanaryLimit),
		RefillThreshold:    env.Int("REFILL_THRESHOLD", replay.DefaultRefillThreshold),
		DeadlineMargin:     env.Duration("DEADLINE_MARGIN", replay.DefaultDeadlineMargin),
	}
	c.Metrics = metrics.Load(env, c.ConsumerName)
	if v := getenv("REPLAY_ROUTES"); v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.Routes); err != nil {
			errs = append(errs, fmt.Errorf("REPLAY_ROUTES: not a JSON array of {\"name\",\"dlqUrl\",\"sourceUrl\",\"parkingUrl\"}: %w", err))
		}
	}
	if err := errors.Join(append(errs, env.Err(), c.Validate())...); err != nil {
		return Config{}, fmt.Errorf("replay configuration: %w", err)
	}
	return c, nil
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
	if !(c.Rate >= replay.MinRate && c.Rate <= replay.MaxRate) { // NaN fails both
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
	errs = append(errs, c.Metrics.Validate())
	return errors.Join(errs...)
}

// ErrAboveCap is wrapped by the error of [Config.WithinCaps].
var ErrAboveCap = errors.New("above the configured cap")

// WithinCaps refuses a request that asks for more than the configuration
// allows: a Max above MaxPerRun or a Rate above Rate (0 means the configured
// value and is always within). The replay function applies it to on-demand
// invocations, so that whoever may invoke the function cannot lift its caps;
// a larger run is an operator's `dlq replay --max N --rate R`, which asks for
// its own confirmation. The error wraps [ErrAboveCap] and names every field
// above its cap.
func (c Config) WithinCaps(r replay.Request) error {
	var errs []error
	if r.Max > c.MaxPerRun {
		errs = append(errs, fmt.Errorf("max %d: %w MAX_PER_RUN=%d (a larger run is an operator's dlq replay --max)", r.Max, ErrAboveCap, c.MaxPerRun))
	}
	if r.Rate > c.Rate {
		errs = append(errs, fmt.Errorf("rate %g: %w RATE=%g (a faster run is an operator's dlq replay --rate)", r.Rate, ErrAboveCap, c.Rate))
	}
	return errors.Join(errs...)
}

// Options returns the engine options the configuration sets: the policy,
// the rate and the limits. The caller adds the ports and hooks (Health,
// Completions, Logger, Metrics, Now, Sleep, OnProgress).
func (c Config) Options() replay.Options {
	return replay.Options{
		MaxReplays:         c.MaxReplays,
		BackoffBase:        c.BackoffBase,
		BackoffMax:         c.BackoffMax,
		ExpiryRescueWindow: c.ExpiryRescueWindow,
		Rate:               c.Rate,
		MaxPerRun:          c.MaxPerRun,
		CanaryLimit:        c.CanaryLimit,
		RefillThreshold:    c.RefillThreshold,
		DeadlineMargin:     c.DeadlineMargin,
		// Dead letters whose order the invoice consumer has completed with
		// the same payload are removed instead of replayed.
		PayloadHash: invoicing.PayloadHash,
	}
}

// Health returns the health probe of HealthURL (the tax service's
// /health), or nil when HealthURL is empty: no health gate.
func (c Config) Health() (func(context.Context) error, error) {
	if c.HealthURL == "" {
		return nil, nil
	}
	client, err := tax.New(c.HealthURL, nil, tax.Options{})
	if err != nil {
		return nil, fmt.Errorf("tax client for %s: %w", c.HealthURL, err)
	}
	return client.Healthy, nil
}
