package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/internal/redact"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// Config is the replay function's configuration, from the variables of
// settings.Replay (docs/CONFIGURATION.md's "Replay configuration" table).
type Config struct {
	Routes           []replay.Route // REPLAY_ROUTES
	LedgerTable      string         // LEDGER_TABLE
	IdempotencyTable string         // IDEMPOTENCY_TABLE: the consumer's, read by the canary gate
	ConsumerName     string         // CONSUMER_NAME: the consumer's idempotency scope
	HealthURL        string         // HEALTH_URL: "" for no health gate
	// Engine holds the tuning the environment sets: the policy, the rate,
	// the per-run cap, the gates' limits, the deadline margin and the
	// workers per route. Its ports and hooks are unset: [New] and the
	// callers of [Config.Options] add them.
	Engine           replay.Options
	MetricsNamespace string // POWERTOOLS_METRICS_NAMESPACE
	Lane             string // POWERTOOLS_SERVICE_NAME: the Lane dimension of the run's metrics
	Archive          Archive
}

// Archive is the configuration of the lane's archive (package archive).
type Archive struct {
	Bucket     string        // ARCHIVE_BUCKET: "" for no archive
	InvalidURL string        // INVALID_QUEUE_URL: archived beside the routes' parking queues; "" for none
	Mode       string        // ARCHIVE_MODE
	Margin     time.Duration // ARCHIVE_MARGIN
	Budget     time.Duration // ARCHIVE_BUDGET
}

// LoadConfig reads the configuration through getenv and validates it. The
// error lists every problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	env := settings.NewReader(getenv)
	c := Config{
		LedgerTable:      env.String(settings.LedgerTable),
		IdempotencyTable: env.String(settings.IdempotencyTable),
		ConsumerName:     env.String(settings.ConsumerName),
		HealthURL:        env.String(settings.HealthURL),
		MetricsNamespace: env.String(settings.MetricsNamespace),
	}
	c.Lane = env.StringOr(settings.ServiceName, c.ConsumerName)
	c.Archive = Archive{
		Bucket:     env.String(settings.ArchiveBucket),
		InvalidURL: env.String(settings.ArchiveInvalidQueueURL),
		Mode:       env.String(settings.ArchiveMode),
		Margin:     env.Duration(settings.ArchiveMargin),
		Budget:     env.Duration(settings.ArchiveBudget),
	}
	c.Engine.MaxReplays = env.Int(settings.MaxReplays)
	c.Engine.BackoffBase = env.Duration(settings.BackoffBase)
	c.Engine.BackoffMax = env.Duration(settings.BackoffMax)
	c.Engine.ExpiryRescueWindow = env.Duration(settings.ExpiryRescueWindow)
	c.Engine.Rate = env.Float(settings.Rate)
	c.Engine.MaxPerRun = env.Int(settings.MaxPerRun)
	c.Engine.CanaryLimit = env.Int(settings.CanaryLimit)
	c.Engine.RefillThreshold = env.Int(settings.RefillThreshold)
	c.Engine.DeadlineMargin = env.Duration(settings.ReplayDeadlineMargin)
	c.Engine.Workers = env.Int(settings.Workers)
	var errs []error
	if v := getenv(settings.ReplayRoutes.Env); v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		err := dec.Decode(&c.Routes)
		if end := dec.InputOffset(); err == nil {
			// A second array (or anything) after the first must not be
			// dropped without a word: its routes would never run.
			if _, next := dec.Token(); next != io.EOF {
				err = fmt.Errorf("more after the array, from byte %d", end)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: not a JSON array of {\"name\",\"dlqUrl\",\"sourceUrl\",\"parkingUrl\",\"key\",\"payloadHash\",\"records\"}: %w", settings.ReplayRoutes.Env, err))
		}
	}
	if err := errors.Join(append(errs, env.Err(), c.Validate())...); err != nil {
		return Config{}, fmt.Errorf("replay configuration: %w", err)
	}
	return c, nil
}

// Validate reports every invalid field, in the words of the variables.
func (c Config) Validate() error {
	o := c.Engine
	errs := []error{
		settings.LedgerTable.Check(c.LedgerTable),
		settings.IdempotencyTable.Check(c.IdempotencyTable),
		settings.ConsumerName.Check(c.ConsumerName),
		settings.MaxReplays.Check(o.MaxReplays),
		settings.BackoffBase.Check(o.BackoffBase),
		settings.BackoffMax.Check(o.BackoffMax),
		settings.ExpiryRescueWindow.Check(o.ExpiryRescueWindow),
		settings.Rate.Check(o.Rate),
		settings.MaxPerRun.Check(o.MaxPerRun),
		settings.CanaryLimit.Check(o.CanaryLimit),
		settings.RefillThreshold.Check(o.RefillThreshold),
		settings.ReplayDeadlineMargin.Check(o.DeadlineMargin),
		settings.Workers.Check(o.Workers),
		emf.Config{Namespace: c.MetricsNamespace, Lane: c.Lane}.Validate(),
		settings.ArchiveBucket.Check(c.Archive.Bucket),
		settings.ArchiveInvalidQueueURL.Check(c.Archive.InvalidURL),
		settings.ArchiveMargin.Check(c.Archive.Margin),
		settings.ArchiveBudget.Check(c.Archive.Budget),
	}
	if m := c.Archive.Mode; m != settings.ArchiveBeforeExpiry && m != settings.ArchiveOnArrival {
		errs = append(errs, fmt.Errorf("%s=%q: want %s or %s", settings.ArchiveMode.Env, m, settings.ArchiveBeforeExpiry, settings.ArchiveOnArrival))
	}
	if len(c.Routes) == 0 {
		errs = append(errs, fmt.Errorf("%s is required: at least one route", settings.ReplayRoutes.Env))
	} else if err := (replay.Request{Routes: c.Routes}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", settings.ReplayRoutes.Env, err))
	}
	if o.BackoffMax < o.BackoffBase {
		errs = append(errs, fmt.Errorf("%s=%s, %s=%s: want base <= max", settings.BackoffBase.Env, settings.FormatDuration(o.BackoffBase),
			settings.BackoffMax.Env, settings.FormatDuration(o.BackoffMax)))
	}
	if c.HealthURL != "" {
		if _, err := healthURL(c.HealthURL); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", settings.HealthURL.Env, err))
		}
	}
	return errors.Join(errs...)
}

// Options returns the engine options the configuration sets (a copy of
// Engine). The caller adds the ports and hooks: Health, Completions,
// Logger, Now, Sleep, OnProgress. Consumer is the configuration's
// CONSUMER_NAME.
func (c Config) Options() replay.Options {
	o := c.Engine
	o.Consumer = c.ConsumerName
	return o
}

// ErrAboveCap is wrapped by the error of [Config.WithinCaps].
var ErrAboveCap = errors.New("above the configured cap")

// WithinCaps refuses a request that asks for more than the configuration
// allows: a Max above MAX_PER_RUN or a Rate above RATE (0 means the
// configured value and is always within). The replay function applies it to
// on-demand invocations, so that whoever may invoke the function cannot lift
// its caps; a larger run is an operator's `dlq replay --max N --rate R`,
// which asks for its own confirmation. The error wraps [ErrAboveCap] and
// names every field above its cap.
func (c Config) WithinCaps(r replay.Request) error {
	var errs []error
	if r.Max > c.Engine.MaxPerRun {
		errs = append(errs, fmt.Errorf("max %d: %w %s=%d (a larger run is an operator's dlq replay --max)",
			r.Max, ErrAboveCap, settings.MaxPerRun.Env, c.Engine.MaxPerRun))
	}
	if r.Rate > c.Engine.Rate {
		errs = append(errs, fmt.Errorf("rate %g: %w %s=%g (a faster run is an operator's dlq replay --rate)",
			r.Rate, ErrAboveCap, settings.Rate.Env, c.Engine.Rate))
	}
	return errors.Join(errs...)
}

// HealthTimeout bounds one health probe.
const HealthTimeout = 3 * time.Second

// Health returns the probe of HealthURL, or nil when HealthURL is empty: no
// health gate. The probe sends GET {HealthURL}/health once, within
// [HealthTimeout] (and ctx), through client (nil: http.DefaultClient), and
// returns nil for any 2xx answer, otherwise an error naming the status or
// the transport failure. It is safe for concurrent use.
func (c Config) Health(client *http.Client) (func(context.Context) error, error) {
	if c.HealthURL == "" {
		return nil, nil
	}
	target, err := healthURL(c.HealthURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", settings.HealthURL.Env, err)
	}
	// What the errors name: the URL without its credentials (Go's own
	// error of a failed request hides them too).
	shown := redact.URL(target)
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return fmt.Errorf("check health at %s: %w", shown, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			// Go's error names the URL again, with the user name.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Errorf("check health at %s: %w", shown, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("check health at %s: status %s", shown, resp.Status)
		}
		return nil
	}, nil
}

// healthURL is base's /health, or an error when base is not an absolute
// http or https URL without query or fragment.
func healthURL(base string) (string, error) {
	u, err := redact.Parse(base)
	switch {
	case err != nil:
		return "", fmt.Errorf("base URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("base URL %q: scheme must be http or https", redact.URL(base))
	case u.Host == "":
		return "", fmt.Errorf("base URL %q: must be absolute with a host", redact.URL(base))
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("base URL %q: must not have a query or fragment", redact.URL(base))
	}
	return u.JoinPath("health").String(), nil
}
