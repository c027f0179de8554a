package consumer

import (
	"errors"
	"fmt"
	"time"

	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/internal/settings"
)

// Settings are the sample consumer's variables, in the order of its
// configuration table in docs/SAMPLE.md (a test fails when they drift).
var Settings = []settings.Setting{
	settings.InvalidQueueURL,
	settings.IdempotencyTable,
	settings.TaxServiceURL,
	settings.ConsumerName,
	settings.Concurrency,
	settings.ConsumerDeadlineMargin,
	settings.TaxBudget,
	settings.RecordLifetime,
	settings.MaxPayloadBytes,
	settings.MaxReceiveCount,
	settings.FailureRecords,
	settings.ServiceName,
	settings.MetricsNamespace,
}

// Config is the consumer's configuration, from the variables of
// [Settings].
type Config struct {
	InvalidQueueURL  string        // INVALID_QUEUE_URL
	IdempotencyTable string        // IDEMPOTENCY_TABLE
	TaxServiceURL    string        // TAX_SERVICE_URL
	ConsumerName     string        // CONSUMER_NAME: scopes the idempotency keys, signs invalid-message metadata
	Concurrency      int           // CONCURRENCY
	DeadlineMargin   time.Duration // DEADLINE_MARGIN
	TaxBudget        time.Duration // TAX_BUDGET
	RecordLifetime   time.Duration // RECORD_LIFETIME
	MaxPayloadBytes  int           // MAX_PAYLOAD_BYTES
	MaxReceiveCount  int           // MAX_RECEIVE_COUNT: the delivery at which a failure is recorded (0: each)
	FailureRecords   bool          // FAILURE_RECORDS: record why orders fail
	Metrics          emf.Config    // POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME (default CONSUMER_NAME)
}

// LoadConfig reads the configuration through getenv and validates it. The
// error lists every problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	env := settings.NewReader(getenv)
	c := Config{
		InvalidQueueURL:  env.String(settings.InvalidQueueURL),
		IdempotencyTable: env.String(settings.IdempotencyTable),
		TaxServiceURL:    env.String(settings.TaxServiceURL),
		ConsumerName:     env.String(settings.ConsumerName),
		Concurrency:      env.Int(settings.Concurrency),
		DeadlineMargin:   env.Duration(settings.ConsumerDeadlineMargin),
		TaxBudget:        env.Duration(settings.TaxBudget),
		RecordLifetime:   env.Duration(settings.RecordLifetime),
		MaxPayloadBytes:  env.Int(settings.MaxPayloadBytes),
		MaxReceiveCount:  env.Int(settings.MaxReceiveCount),
	}
	failures := env.String(settings.FailureRecords)
	c.FailureRecords = failures == "on"
	c.Metrics = emf.LoadConfig(getenv, c.ConsumerName)
	var onOff error
	if failures != "on" && failures != "off" {
		onOff = fmt.Errorf("%s=%q: want on or off", settings.FailureRecords.Env, failures)
	}
	if err := errors.Join(env.Err(), c.Validate(), onOff); err != nil {
		return Config{}, fmt.Errorf("consumer configuration: %w", err)
	}
	return c, nil
}

// Validate reports every invalid field, in the words of the variables.
func (c Config) Validate() error {
	errs := []error{
		settings.InvalidQueueURL.Check(c.InvalidQueueURL),
		settings.IdempotencyTable.Check(c.IdempotencyTable),
		settings.TaxServiceURL.Check(c.TaxServiceURL),
		settings.ConsumerName.Check(c.ConsumerName),
		settings.Concurrency.Check(c.Concurrency),
		settings.ConsumerDeadlineMargin.Check(c.DeadlineMargin),
		settings.TaxBudget.Check(c.TaxBudget),
		settings.RecordLifetime.Check(c.RecordLifetime),
		settings.MaxPayloadBytes.Check(c.MaxPayloadBytes),
		settings.MaxReceiveCount.Check(c.MaxReceiveCount),
		c.Metrics.Validate(),
	}
	return errors.Join(errs...)
}
