package settings

// The lane's CloudWatch metric and dimension names, declared once: the
// functions write them as Embedded Metric Format lines (package emf for the
// consumer, the replay engine for the replay) and the construct's alarms
// and dashboard (infra/deadletter) watch them, in the namespace
// [MetricsNamespace] with the Lane dimension from [ServiceName]. Alarms
// name them: never rename one, only add.

// The dimensions.
const (
	// DimensionLane is the lane's service name (POWERTOOLS_SERVICE_NAME):
	// every metric of a lane carries it, so two lanes never merge.
	DimensionLane = "Lane"
	// DimensionReason is the invalid reason of [MetricRecordsInvalid]'s
	// lines by reason.
	DimensionReason = "Reason"
	// DimensionRoute is the replay route of the replay's metrics.
	DimensionRoute = "Route"
	// DimensionErrorClass is the failure class of [MetricRecordsFailed]'s
	// lines by class: an invocation's top classes, the rest "other".
	DimensionErrorClass = "ErrorClass"
)

// The consumer's metrics, per invocation, all of unit Count, with the
// dimension Lane (and RecordsInvalid also with Lane and Reason).
const (
	// MetricRecordsProcessed: records the invocation received, whatever
	// their outcome.
	MetricRecordsProcessed = "RecordsProcessed"
	// MetricRecordsFailed: records reported back to SQS as batch item
	// failures (a transient failure, a panic, not started before the
	// deadline, or blocked behind a failed record of their FIFO group).
	MetricRecordsFailed = "RecordsFailed"
	// MetricRecordsInvalid: records sent to the invalid queue.
	MetricRecordsInvalid = "RecordsInvalid"
	// MetricDuplicatesAbsorbed: records whose key had completed before with
	// the same payload, acknowledged without running the effect again.
	MetricDuplicatesAbsorbed = "DuplicatesAbsorbed"
	// MetricCompletionsUnrecorded: effects that happened but whose
	// completion could not be recorded (a redelivery would run them again).
	MetricCompletionsUnrecorded = "CompletionsUnrecorded"
	// MetricInDoubtTakeovers: records that took over an expired claim, or
	// resolved an ambiguous failure, and completed.
	MetricInDoubtTakeovers = "InDoubtTakeovers"
)

// ConsumerMetrics lists the consumer's metrics in the order of their line.
var ConsumerMetrics = []string{
	MetricRecordsProcessed, MetricRecordsFailed, MetricRecordsInvalid,
	MetricDuplicatesAbsorbed, MetricCompletionsUnrecorded, MetricInDoubtTakeovers,
}

// The replay's metrics, one line per route and run, with the dimensions
// Lane and Route (Route alone without a lane): counts, and the two expiry
// figures in seconds.
const (
	MetricReplayed     = "Replayed"
	MetricParked       = "Parked"
	MetricDelayed      = "Delayed"
	MetricGateClosed   = "GateClosed"
	MetricDeadLettered = "DeadLettered"
	MetricErrors       = "Errors"
	// MetricRunCompleted is 1 for every run: the heartbeat an alarm watches.
	MetricRunCompleted   = "RunCompleted"
	MetricInRescueWindow = "InRescueWindow"
	// MetricRecordsMissing is 1 while a route whose consumer should write
	// completion records consumes its replays without writing them (the
	// consumer scope or the key expression is wrong, or the consumer does
	// not write homing's records): the replay no longer holds it at the
	// canary, and says so.
	MetricRecordsMissing = "RecordsMissing"
	// MetricOldestDeadLetterAge is the age of the oldest dead letter a run
	// examined, in seconds; absent when it examined none.
	MetricOldestDeadLetterAge = "OldestDeadLetterAgeSeconds"
	// MetricSecondsToExpiry is how long that dead letter has left before
	// the DLQ's retention drops it; absent when unknown.
	MetricSecondsToExpiry = "SecondsToExpiry"
)

// The archive's metrics, one line per run, with the dimension Lane alone,
// of unit Count (the run's log line has them per queue).
const (
	// MetricArchived: messages written to the archive and deleted from
	// their queue.
	MetricArchived = "Archived"
	// MetricArchiveFailed: messages whose write or delete failed, and
	// receives that failed; each message is left in its queue.
	MetricArchiveFailed = "ArchiveFailed"
)
