package batch

import (
	"errors"
	"fmt"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/payload"
)

// Config is a consumer's configuration as the construct sets it in the
// function's environment (docs/CONFIGURATION.md#consumer-configuration).
type Config struct {
	Consumer         string       // CONSUMER_NAME: scopes the idempotency keys
	Key              payload.Key  // KEY_EXPRESSION: the business key
	Hash             payload.Hash // PAYLOAD_HASH_EXPRESSION: the hashed part ("" the whole body)
	IdempotencyTable string       // IDEMPOTENCY_TABLE
	InvalidQueueURL  string       // INVALID_QUEUE_URL
	// Options has Concurrency (CONCURRENCY), DeadlineMargin
	// (DEADLINE_MARGIN) and MaxReceiveCount (MAX_RECEIVE_COUNT) set; on a FIFO lane with GROUP_ORDER, Groups too,
	// but for its Store and Queue, which the caller sets.
	Options Options
	// ParksTable (LEDGER_TABLE) holds the parked groups with GROUP_ORDER
	// "hold": the table of Options.Groups.Store.
	ParksTable string
	// FailureRecords (FAILURE_RECORDS, default "on") says whether the
	// consumer sets Options.Failures, on IdempotencyTable.
	FailureRecords bool
}

// consumerName is CONSUMER_NAME as every lane's construct sets it: no default.
var consumerName = func() settings.String {
	s := settings.ConsumerName
	s.Default, s.Required = "", true
	return s
}()

// LoadConfig reads the consumer's configuration through getenv (os.Getenv)
// and checks it; the error names every malformed or missing variable.
func LoadConfig(getenv func(string) string) (Config, error) {
	env := settings.NewReader(getenv)
	c := Config{
		Consumer:         env.String(consumerName),
		IdempotencyTable: env.String(settings.IdempotencyTable),
		InvalidQueueURL:  env.String(settings.InvalidQueueURL),
		Options: Options{Concurrency: env.Int(settings.Concurrency), DeadlineMargin: env.Duration(settings.ConsumerDeadlineMargin),
			MaxReceiveCount: env.Int(settings.MaxReceiveCount)},
		ParksTable: env.String(settings.ParksTable),
	}
	failures := env.String(settings.FailureRecords)
	c.FailureRecords = failures == "on"
	key, keyErr := payload.NewKey(env.String(settings.KeyExpression))
	hash, hashErr := payload.NewHash(env.String(settings.PayloadHashExpression))
	c.Key, c.Hash = key, hash
	errs := []error{env.Err(), named(settings.KeyExpression.Env, keyErr), named(settings.PayloadHashExpression.Env, hashErr),
		consumerName.Check(c.Consumer), settings.IdempotencyTable.Check(c.IdempotencyTable),
		settings.InvalidQueueURL.Check(c.InvalidQueueURL), settings.Concurrency.Check(c.Options.Concurrency),
		settings.ConsumerDeadlineMargin.Check(c.Options.DeadlineMargin), settings.MaxReceiveCount.Check(c.Options.MaxReceiveCount)}
	if failures != "on" && failures != "off" {
		errs = append(errs, fmt.Errorf("%s=%q: want on or off", settings.FailureRecords.Env, failures))
	}
	if order := env.String(settings.GroupOrder); order != "" {
		errs = append(errs, c.groups(env, order))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("batch: consumer configuration: %w", err)
	}
	return c, nil
}

// groups sets Options.Groups from GROUP_ORDER and the variables it needs.
func (c *Config) groups(env *settings.Reader, order string) error {
	onError, err := fifo.ParseOnError(order)
	if err != nil {
		return fmt.Errorf("%s: %w", settings.GroupOrder.Env, err)
	}
	k := &fifo.Keeper{OnError: onError, SourceURL: env.String(settings.SourceQueueURL), ParkingURL: env.String(settings.ParkingQueueURL),
		Retention: env.Duration(settings.SourceRetention), MaxReceives: env.Int(settings.MaxReceives)}
	c.Options.Groups = k
	errs := []error{settings.SourceRetention.Check(k.Retention), settings.MaxReceives.Check(k.MaxReceives)}
	if k.SourceURL == "" || k.ParkingURL == "" {
		errs = append(errs, fmt.Errorf("%s is set, so %s and %s are required", settings.GroupOrder.Env, settings.SourceQueueURL.Env, settings.ParkingQueueURL.Env))
	}
	if onError == fifo.Hold && c.ParksTable == "" {
		errs = append(errs, fmt.Errorf("%s is %s, so %s is required (its parks)", settings.GroupOrder.Env, onError, settings.ParksTable.Env))
	}
	return errors.Join(errs...)
}

// named prefixes err, when there is one, with the variable it is about.
func named(env string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", env, err)
}
