package posting

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/settings"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/payment"
)

// The example's own settings, declared once as homing's settings are; the
// rest are homing's (settings.InvalidQueueURL and the others), read the
// same way.
var (
	// EntriesTable is the ledger's table.
	EntriesTable = settings.String{Env: "ENTRIES_TABLE", Required: true,
		Doc: "DynamoDB table of the ledger entries (`pk`/`sk` strings; see package ledger)"}
	// InvalidQueueURL is homing's, said of payments.
	InvalidQueueURL = withDoc(settings.InvalidQueueURL, "the lane's invalid queue: rejected payments, with their reason")
	// ConsumerName is homing's, with this lane's default.
	ConsumerName = withDoc(withDefault(settings.ConsumerName, "ledger"),
		"the consumer's name: scopes its idempotency keys (`<consumer>#<paymentId>`) and signs invalid-message metadata; 1..64 bytes, no `#`")
	// MaxPayloadBytes bounds a payment message, far below homing's bound.
	MaxPayloadBytes = settings.Int{Env: "MAX_PAYLOAD_BYTES", Default: payment.DefaultMaxBytes, Min: 1, Max: 256 << 10,
		Doc: "larger bodies are invalid (`payload-too-large`)"}
)

func withDefault(s settings.String, def string) settings.String {
	s.Default = def
	return s
}

func withDoc(s settings.String, doc string) settings.String {
	s.Doc = doc
	return s
}

// Settings lists the consumer's settings, in the order of its README table.
var Settings = []settings.Setting{
	InvalidQueueURL, settings.IdempotencyTable, EntriesTable, ConsumerName, settings.Concurrency,
	settings.ConsumerDeadlineMargin, settings.RecordLifetime, MaxPayloadBytes, settings.GroupOrder, settings.SourceQueueURL, settings.ParkingQueueURL,
	settings.ParksTable, settings.SourceRetention, settings.MaxReceives, settings.MaxReceiveCount, settings.FailureRecords,
}

// Config is the consumer's configuration, read from the environment
// variables of [Settings]. INVALID_QUEUE_URL, IDEMPOTENCY_TABLE and
// CONSUMER_NAME are the ones homing's deadletter construct wires from the
// lane's resources; ENTRIES_TABLE is the example stack's.
type Config struct {
	InvalidQueueURL  string
	IdempotencyTable string
	EntriesTable     string
	ConsumerName     string
	Concurrency      int
	DeadlineMargin   time.Duration
	RecordLifetime   time.Duration
	MaxPayloadBytes  int
	// GroupOrder is "hold" or "skip" when the lane keeps each account's
	// order through failure (package fifo; the construct sets it on a FIFO
	// lane), "" when it does not. The construct sets the rest with it: the
	// lane's source and parking queues, its ledger (whose partition of
	// parks the consumer uses with "hold"), the source's retention and the
	// deliveries that park a head.
	GroupOrder      string
	SourceQueueURL  string
	ParkingQueueURL string
	LedgerTable     string
	SourceRetention time.Duration
	MaxReceives     int
	// MaxReceiveCount is the source's redrive maxReceiveCount (the
	// construct sets it): a failure is recorded at the last delivery before
	// the redrive, or the park; 0 records every failed delivery.
	MaxReceiveCount int
	// FailureRecords is FAILURE_RECORDS=on: the consumer records why each
	// payment failed, for dlq (homing's docs/CONTRACT.md#failure-records).
	FailureRecords bool
}

// LoadConfig reads the configuration through getenv and validates it; the
// error lists every problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	env := settings.NewReader(getenv)
	c := Config{
		InvalidQueueURL:  env.String(InvalidQueueURL),
		IdempotencyTable: env.String(settings.IdempotencyTable),
		EntriesTable:     env.String(EntriesTable),
		ConsumerName:     env.String(ConsumerName),
		Concurrency:      env.Int(settings.Concurrency),
		DeadlineMargin:   env.Duration(settings.ConsumerDeadlineMargin),
		RecordLifetime:   env.Duration(settings.RecordLifetime),
		MaxPayloadBytes:  env.Int(MaxPayloadBytes),
		GroupOrder:       env.String(settings.GroupOrder),
		SourceQueueURL:   env.String(settings.SourceQueueURL),
		ParkingQueueURL:  env.String(settings.ParkingQueueURL),
		LedgerTable:      env.String(settings.ParksTable),
		SourceRetention:  env.Duration(settings.SourceRetention),
		MaxReceives:      env.Int(settings.MaxReceives),
		MaxReceiveCount:  env.Int(settings.MaxReceiveCount),
	}
	failures := env.String(settings.FailureRecords)
	c.FailureRecords = failures == "on"
	var onOff error
	if failures != "on" && failures != "off" {
		onOff = fmt.Errorf("%s=%q: want on or off", settings.FailureRecords.Env, failures)
	}
	if err := errors.Join(env.Err(), c.Validate(), onOff); err != nil {
		return Config{}, fmt.Errorf("posting configuration: %w", err)
	}
	return c, nil
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	return errors.Join(
		InvalidQueueURL.Check(c.InvalidQueueURL),
		settings.IdempotencyTable.Check(c.IdempotencyTable),
		EntriesTable.Check(c.EntriesTable),
		ConsumerName.Check(c.ConsumerName),
		settings.Concurrency.Check(c.Concurrency),
		settings.ConsumerDeadlineMargin.Check(c.DeadlineMargin),
		settings.RecordLifetime.Check(c.RecordLifetime),
		MaxPayloadBytes.Check(c.MaxPayloadBytes),
		settings.MaxReceiveCount.Check(c.MaxReceiveCount),
		c.checkGroups(),
	)
}

func (c Config) checkGroups() error {
	if c.GroupOrder == "" {
		return nil
	}
	order, err := fifo.ParseOnError(c.GroupOrder)
	if err != nil {
		return fmt.Errorf("%s: %w", settings.GroupOrder.Env, err)
	}
	errs := []error{settings.SourceRetention.Check(c.SourceRetention), settings.MaxReceives.Check(c.MaxReceives)}
	if c.SourceQueueURL == "" || c.ParkingQueueURL == "" {
		errs = append(errs, fmt.Errorf("%s is set, so %s and %s are required", settings.GroupOrder.Env, settings.SourceQueueURL.Env, settings.ParkingQueueURL.Env))
	}
	if order == fifo.Hold && c.LedgerTable == "" {
		errs = append(errs, fmt.Errorf("%s is %s, so %s is required (its parks)", settings.GroupOrder.Env, order, settings.ParksTable.Env))
	}
	return errors.Join(errs...)
}

// Deps are the adapters the processor is built from; tests pass fakes.
type Deps struct {
	Sender batch.Sender      // sends to the invalid queue
	Store  idempotency.Store // the idempotency records
	Ledger ledger.Ledger
	// Queue sets a failed head's visibility and parks records, Parks keeps
	// the accounts' parks (with GroupOrder "hold"): both when
	// cfg.GroupOrder is set.
	Queue fifo.Queue
	Parks fifo.Store
	// Failures records why payments failed (with cfg.FailureRecords: the
	// lane's dynamo.FailureLog); nil records none.
	Failures batch.FailureLog
	Logger   *slog.Logger     // default slog.Default()
	Now      func() time.Time // default time.Now
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
	opts := batch.Options{Concurrency: cfg.Concurrency, DeadlineMargin: cfg.DeadlineMargin, Logger: d.Logger, Now: d.Now,
		OnOutcome: emf.CountOutcome[batch.Outcome], // the lane's metrics, when Process runs under emf.Wrap
		Failures:  d.Failures, MaxReceiveCount: cfg.MaxReceiveCount}
	if cfg.GroupOrder != "" {
		opts.Groups = &fifo.Keeper{Store: d.Parks, Queue: d.Queue, SourceURL: cfg.SourceQueueURL, ParkingURL: cfg.ParkingQueueURL,
			OnError: fifo.OnError(cfg.GroupOrder), Retention: cfg.SourceRetention, MaxReceives: cfg.MaxReceives}
	}
	return batch.New(h.Handle, batch.NewInvalidQueue(d.Sender, cfg.InvalidQueueURL, cfg.ConsumerName, d.Now), opts)
}
