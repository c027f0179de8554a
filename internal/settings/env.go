package settings

import (
	"strings"
	"time"
)

// The environment of the functions: each setting declared once, read by the
// functions (through a [Reader]), by the operator CLI (its flag defaults and
// bounds) and by the CDK construct (its prop defaults and synth-time
// validation). docs/CONFIGURATION.md's tables are generated from
// [Consumer] and [Replay] (a test fails when they drift).

// Settings the consumer and the replay function share.
var (
	IdempotencyTable = String{Env: "IDEMPOTENCY_TABLE", Required: true,
		Doc: "DynamoDB table of the consumer's idempotent receiver (`pk` string key, TTL `expiresAt`)"}
	ConsumerName = String{Env: "CONSUMER_NAME", Default: "invoice", MaxBytes: 64, Reject: KeySeparator,
		Doc: "the consumer's name: scopes its idempotency keys (`<consumer>#<key>`, the key by the route's `key`) and signs invalid-message metadata; 1..64 bytes, no `#`"}
	ServiceName = String{Env: "POWERTOOLS_SERVICE_NAME", DefaultDoc: "`CONSUMER_NAME`'s value", MaxBytes: 1024,
		Doc: "the `Lane` dimension of the metrics (the construct sets the lane's name)"}
	// The lane's contract on its consumer (docs/CONTRACT.md): the construct
	// sets them from Consumer.Key and Consumer.PayloadHash, so that a consumer in
	// any runtime reads the key and the payload hash the replay uses.
	KeyExpression = String{Env: "KEY_EXPRESSION", MaxBytes: 256,
		Doc: "JMESPath expression of the message's business key (the construct's `Consumer.Key`); the consumer keys its records `<CONSUMER_NAME>#<key>` by it"}
	PayloadHashExpression = String{Env: "PAYLOAD_HASH_EXPRESSION", MaxBytes: 256,
		Doc: "JMESPath expression of the part of the body the payload hash covers (the construct's `Consumer.PayloadHash`); unset: the whole body"}
	MetricsNamespace = String{Env: "POWERTOOLS_METRICS_NAMESPACE", Default: "Homing", MaxBytes: 255,
		Doc: "CloudWatch namespace of the metrics, written as EMF lines on stdout"}
)

// Settings of the consumer function (functions/consumer).
var (
	InvalidQueueURL = String{Env: "INVALID_QUEUE_URL", Required: true,
		Doc: "the lane's invalid queue, where a message that will never be valid goes with its reason"}
	TaxServiceURL = String{Env: "TAX_SERVICE_URL", Required: true,
		Doc: "base URL of the tax and invoice service"}
	Concurrency = Int{Env: "CONCURRENCY", Default: DefaultConcurrency, Min: 1, Max: 100,
		Doc: "records (standard) or message groups (FIFO) processed at once"}
	ConsumerDeadlineMargin = Duration{Env: "DEADLINE_MARGIN", Default: DefaultConsumerDeadlineMargin, Min: AboveZero,
		Doc: "no record starts with less time left in the invocation"}
	TaxBudget = Duration{Env: "TAX_BUDGET", Default: 10 * time.Second, Min: AboveZero,
		Doc: "total time for one record's tax calls, retries included (never past the deadline)"}
	RecordLifetime = Duration{Env: "RECORD_LIFETIME", Default: DefaultRecordLifetime, Min: 18 * 24 * time.Hour,
		Doc: "idempotency record lifetime; at least 432h (source 4 d + DLQ 14 d), so that a replay from the DLQ is still recognised"}
	MaxPayloadBytes = Int{Env: "MAX_PAYLOAD_BYTES", Default: DefaultMaxPayloadBytes, Min: 1, Max: MaxSourceMessageBytes,
		Doc: "larger bodies are invalid (`payload-too-large`); at most 983040, the source queue's size (SQS's 1 MiB less 64 KiB kept for our metadata)"}
	GroupOrder = String{Env: "GROUP_ORDER", MaxBytes: 8,
		Doc: "FIFO lanes: `hold` keeps each message group's order through failure (package fifo: a failed head waits in the source under a backoff, a head that can never succeed parks its group until `dlq groups release`), `skip` too but routes such a head alone and lets its group go on; unset: off (SQS's own order only)"}
	SourceQueueURL = String{Env: "SOURCE_QUEUE_URL", MaxBytes: 2048,
		Doc: "with `GROUP_ORDER`: the lane's source queue, where a failed head's visibility is set to its backoff"}
	ParkingQueueURL = String{Env: "PARKING_QUEUE_URL", MaxBytes: 2048,
		Doc: "with `GROUP_ORDER`: the lane's parking queue, where a parked group's records wait in order"}
	// ParksTable is [LedgerTable] as the consumer reads it: optional, for
	// its partition [GroupsPartition].
	ParksTable = String{Env: LedgerTable.Env, MaxBytes: 1024,
		Doc: "with `GROUP_ORDER` `hold`: the lane's replay ledger, whose partition `" + GroupsPartition + "` keeps the parked groups"}
	SourceRetention = Duration{Env: "SOURCE_RETENTION", Default: DefaultSourceRetention, Min: time.Minute, Max: 14 * 24 * time.Hour,
		Doc: "with `GROUP_ORDER`: the source queue's message retention; a failing head is parked (`expiring`) an eighth of it (at most 6h) before it would expire"}
	MaxReceiveCount = Int{Env: "MAX_RECEIVE_COUNT", Min: 0, Max: 1000, Unit: "deliveries",
		Doc: "the source queue's redrive `maxReceiveCount`: a failed message's failure record is written once, at this delivery; unset (0): at every failed delivery"}
	FailureRecords = String{Env: "FAILURE_RECORDS", Default: "on", MaxBytes: 3,
		Doc: "`on`: the consumer records why each dead letter failed in the idempotency table (docs/CONTRACT.md#failure-records); `off`: it does not"}
	MaxReceives = Int{Env: "MAX_RECEIVES", Default: DefaultMaxReceives, Min: 2, Max: 1000, Unit: "deliveries",
		Doc: "with `GROUP_ORDER`: a head delivered this often parks its group (`delivered-too-often`); below the source's `maxReceiveCount`, whose redrive is only the backstop"}
)

// Settings of the replay function (functions/replay).
var (
	ReplayRoutes = String{Env: "REPLAY_ROUTES", Required: true,
		Doc: "`[{\"name\",\"dlqUrl\",\"sourceUrl\",\"parkingUrl\",\"key\",\"payloadHash\",\"records\"}]`, one per lane: `key` is the JMESPath of the business key (`\"\"`: none, messages are decided by their message id), `payloadHash` the JMESPath of the hashed part (`\"\"`: the whole body), `records` whether the lane's consumer writes the completion records the canary, the breaker and the removal of dead letters already applied read (docs/CONTRACT.md; default false: they are off)"}
	LedgerTable = String{Env: "LEDGER_TABLE", Required: true,
		Doc: "replay ledger (`pk`/`sk` strings, TTL `expiresAt`)"}
	HealthURL = String{Env: "HEALTH_URL",
		Doc: "downstream base URL; `GET /health` must answer 2xx for a run to move anything"}
	MaxReplays = Int{Env: "MAX_REPLAYS", Default: DefaultMaxReplays, Min: 1, Max: 100,
		Doc: "replays before a message is parked as `replay-exhausted`"}
	BackoffBase = Duration{Env: "BACKOFF_BASE", Default: DefaultBackoffBase, Min: AboveZero,
		Doc: "backoff ceiling before the first replay, doubled per replay (exponential backoff with full jitter)"}
	BackoffMax = Duration{Env: "BACKOFF_MAX", Default: DefaultBackoffMax, Min: AboveZero,
		Doc: "cap of the backoff ceiling; at least `BACKOFF_BASE`"}
	ExpiryRescueWindow = Duration{Env: "EXPIRY_RESCUE_WINDOW", Default: DefaultExpiryRescueWindow, Min: AboveZero, Max: 14 * 24 * time.Hour,
		Doc: "park what would expire by the DLQ retention within this window (shorter than the DLQ retention)"}
	Rate = Float{Env: "RATE", Default: DefaultRate, Min: MinRate, Max: MaxRate, Unit: "messages per second",
		Doc: "messages sent per second; keep it under what the consumer completes (at most 3000: SQS FIFO batched throughput per action)"}
	MaxPerRun = Int{Env: "MAX_PER_RUN", Default: DefaultMaxPerRun, Min: 1,
		Doc: "messages moved per run"}
	CanaryLimit = Int{Env: "CANARY_LIMIT", Default: DefaultCanaryLimit, Min: 1,
		Doc: "replays per route while the previous run's replayed keys are not completed (the canary, on routes with `records`)"}
	RefillThreshold = Int{Env: "REFILL_THRESHOLD", Default: DefaultRefillThreshold, Min: 1,
		Doc: "DLQ growth since the previous run that holds the route"}
	ReplayDeadlineMargin = Duration{Env: "DEADLINE_MARGIN", Default: DefaultReplayDeadlineMargin, Min: AboveZero,
		Doc: "stop cleanly this long before the invocation deadline"}
	ArchiveBucket = String{Env: "ARCHIVE_BUCKET", MaxBytes: 63,
		Doc: "the lane's archive bucket: each run first archives the parking and invalid queues' messages near their retention (docs/OPERATIONS.md#the-archive); unset: no archive"}
	ArchiveInvalidQueueURL = String{Env: InvalidQueueURL.Env, MaxBytes: 2048,
		Doc: "with `ARCHIVE_BUCKET`: the lane's invalid queue, archived beside the routes' parking queues"}
	ArchiveMode = String{Env: "ARCHIVE_MODE", Default: ArchiveBeforeExpiry, MaxBytes: 16,
		Doc: "`" + ArchiveBeforeExpiry + "`: a message is archived `ARCHIVE_MARGIN` before its queue's retention ends; `" + ArchiveOnArrival + "`: at the first run that sees it"}
	ArchiveMargin = Duration{Env: "ARCHIVE_MARGIN", Default: DefaultArchiveMargin, Min: time.Hour, Max: 13 * 24 * time.Hour,
		Doc: "archive this long before the queue's retention ends; a queue that keeps messages less long is archived on arrival"}
	ArchiveBudget = Duration{Env: "ARCHIVE_BUDGET", Default: DefaultArchiveBudget, Min: time.Second, Max: 10 * time.Minute,
		Doc: "the archive's share of a run, before the replay; a message it receives and does not archive stays hidden while it looks, at most this long"}
	Workers = Int{Env: "WORKERS", Default: DefaultWorkers, Min: 1, Max: MaxWorkers,
		Doc: "receive loops per route, sharing the rate and the cap (FIFO: in parallel across message groups, in order within one)"}
)

// The values of [ArchiveMode].
const (
	ArchiveBeforeExpiry = "before-expiry"
	ArchiveOnArrival    = "on-arrival"
)

// Consumer lists the settings of a lane's consumer, in the order of its
// configuration table: those the construct sets from the lane, and the
// tuning the README's consumer reads.
var Consumer = []Setting{
	InvalidQueueURL,
	IdempotencyTable,
	setBy(ConsumerName, "the lane's `Consumer.Name` (default the lane's name)"),
	KeyExpression,
	PayloadHashExpression,
	Concurrency,
	ConsumerDeadlineMargin,
	GroupOrder,
	SourceQueueURL,
	ParkingQueueURL,
	ParksTable,
	SourceRetention,
	MaxReceives,
	MaxReceiveCount,
	FailureRecords,
	ServiceName,
	Note(MetricsNamespace, ": `RecordsProcessed`, `RecordsFailed`, `RecordsInvalid` (also by `Reason`), `DuplicatesAbsorbed`, `CompletionsUnrecorded`, `InDoubtTakeovers`, `RecordsFailed` by `ErrorClass`"),
}

// Replay lists the replay function's settings, in the order of its
// configuration table.
var Replay = []Setting{
	ReplayRoutes,
	LedgerTable,
	Note(IdempotencyTable, "; the canary gate reads its COMPLETED records"),
	ConsumerName,
	HealthURL,
	MaxReplays,
	BackoffBase,
	BackoffMax,
	ExpiryRescueWindow,
	Rate,
	MaxPerRun,
	CanaryLimit,
	RefillThreshold,
	ReplayDeadlineMargin,
	Workers,
	ArchiveBucket,
	ArchiveInvalidQueueURL,
	ArchiveMode,
	ArchiveMargin,
	ArchiveBudget,
	Note(ServiceName, ", beside `Route`"),
	Note(MetricsNamespace, ": `Replayed`, `Parked`, `Delayed`, `GateClosed`, `DeadLettered`, `Errors`; `Archived`, `ArchiveFailed` (by `Lane` alone)"),
}

// Note returns s with note added to its doc, for one function's table (a
// shared setting that means more to one function).
func Note(s Setting, note string) Setting { return noted{Setting: s, note: note} }

// setBy is s as a table lists it where the construct always sets it: by
// names what it sets it from, in the default's column.
func setBy(s Setting, by string) Setting { return noted{Setting: s, by: by} }

type noted struct {
	Setting
	note string
	by   string // the default column: what the construct sets it from
}

// Unwrap returns the declaration.
func (n noted) Unwrap() Setting { return n.Setting }

func (n noted) Row() Row {
	r := n.Setting.Row()
	if n.by != "" {
		r.Default = "set to " + n.by
	}
	if len(n.note) > 0 && !strings.ContainsRune(":,;", rune(n.note[0])) {
		r.Doc += " "
	}
	r.Doc += n.note
	return r
}
