package posting

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/idempotency"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/payment"
)

// Config is the consumer's configuration, from these environment variables
// (the first three and CONSUMER_NAME are the ones homing's deadletter
// construct wires from the lane's resources):
//
//	INVALID_QUEUE_URL   required  the lane's invalid queue
//	IDEMPOTENCY_TABLE   required  the lane's idempotency table
//	ENTRIES_TABLE       required  the ledger's table (see package ledger)
//	CONSUMER_NAME       ledger    scopes idempotency keys, signs invalid-message metadata (1..64 bytes, no '#')
//	CONCURRENCY         10        accounts (message groups) posted at once
//	DEADLINE_MARGIN     2s        no record starts with less time left
//	RECORD_LIFETIME     720h      how long an idempotency record lasts (>= 432h: source + DLQ retention)
//	MAX_PAYLOAD_BYTES   16384     larger bodies are invalid (payload-too-large)
type Config struct {
	InvalidQueueURL  string
	IdempotencyTable string
	EntriesTable     string
	ConsumerName     string
	Concurrency      int
	DeadlineMargin   time.Duration
	RecordLifetime   time.Duration
	MaxPayloadBytes  int
}

// LoadConfig reads the configuration through getenv and validates it; the
// error lists every problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	var errs []error
	str := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	num := func(key string, def int) int {
		v := getenv(key)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number", key, v))
		}
		return n
	}
	dur := func(key string, def time.Duration) time.Duration {
		v := getenv(key)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want a duration such as 2s or 720h", key, v))
		}
		return d
	}
	c := Config{
		InvalidQueueURL:  str("INVALID_QUEUE_URL", ""),
		IdempotencyTable: str("IDEMPOTENCY_TABLE", ""),
		EntriesTable:     str("ENTRIES_TABLE", ""),
		ConsumerName:     str("CONSUMER_NAME", "ledger"),
		Concurrency:      num("CONCURRENCY", batch.DefaultConcurrency),
		DeadlineMargin:   dur("DEADLINE_MARGIN", batch.DefaultDeadlineMargin),
		RecordLifetime:   dur("RECORD_LIFETIME", idempotency.DefaultLifetime),
		MaxPayloadBytes:  num("MAX_PAYLOAD_BYTES", payment.DefaultMaxBytes),
	}
	if err := errors.Join(errors.Join(errs...), c.Validate()); err != nil {
		return Config{}, fmt.Errorf("posting configuration: %w", err)
	}
	return c, nil
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	for _, f := range [...]struct{ key, value string }{
		{"INVALID_QUEUE_URL", c.InvalidQueueURL}, {"IDEMPOTENCY_TABLE", c.IdempotencyTable}, {"ENTRIES_TABLE", c.EntriesTable},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.key))
		}
	}
	if c.ConsumerName == "" || len(c.ConsumerName) > 64 || strings.Contains(c.ConsumerName, "#") {
		errs = append(errs, fmt.Errorf("CONSUMER_NAME=%q: want 1..64 bytes without '#' (it scopes idempotency keys)", c.ConsumerName))
	}
	if c.Concurrency < 1 || c.Concurrency > 100 {
		errs = append(errs, fmt.Errorf("CONCURRENCY=%d: want 1..100", c.Concurrency))
	}
	if c.DeadlineMargin <= 0 {
		errs = append(errs, fmt.Errorf("DEADLINE_MARGIN=%s: want > 0", c.DeadlineMargin))
	}
	if c.RecordLifetime < idempotency.MinLifetime {
		errs = append(errs, fmt.Errorf("RECORD_LIFETIME=%s: want >= %s, so that a replay from the DLQ is still recognised", c.RecordLifetime, idempotency.MinLifetime))
	}
	if c.MaxPayloadBytes < 1 || c.MaxPayloadBytes > 256<<10 {
		errs = append(errs, fmt.Errorf("MAX_PAYLOAD_BYTES=%d: want 1..%d", c.MaxPayloadBytes, 256<<10))
	}
	return errors.Join(errs...)
}

// Deps are the adapters the processor is built from; tests pass fakes.
type Deps struct {
	Sender batch.Sender      // sends to the invalid queue
	Store  idempotency.Store // the idempotency records
	Ledger ledger.Ledger
	Logger *slog.Logger     // default slog.Default()
	Now    func() time.Time // default time.Now
}

// NewProcessor returns the consumer: batch's processor over a [Handler],
// with the invalid queue of cfg. Its Process method is the Lambda handler.
func NewProcessor(cfg Config, d Deps) *batch.Processor {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	receiver := &idempotency.Receiver{
		Store:    d.Store,
		Scope:    cfg.ConsumerName,
		Lifetime: cfg.RecordLifetime,
		Now:      d.Now,
		OnError: func(err error, key string) {
			d.Logger.Warn("idempotency", slog.String("paymentId", key), slog.String("error", err.Error()))
		},
		// Posted but not recorded: the ledger still holds the payment's
		// marker, so a redelivery finds it; this line counts the gap.
		OnUnrecorded: func(key, result string, err error) {
			d.Logger.Error("payment posted but its idempotency record not completed", slog.String("event", idempotency.EventUnrecorded),
				slog.String("paymentId", key), slog.String("entry", result), slog.String("error", err.Error()))
		},
	}
	h := &Handler{Receiver: receiver, Ledger: d.Ledger, MaxBytes: cfg.MaxPayloadBytes}
	return batch.New(h.Handle, batch.NewInvalidQueue(d.Sender, cfg.InvalidQueueURL, cfg.ConsumerName, d.Now),
		batch.Options{Concurrency: cfg.Concurrency, DeadlineMargin: cfg.DeadlineMargin, Logger: d.Logger, Now: d.Now})
}
