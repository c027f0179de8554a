// Package emf writes CloudWatch Embedded Metric Format (EMF) lines: JSON
// log lines that CloudWatch Logs turns into metrics, with no API call from
// the function. It is the one EMF writer of the toolkit (the consumer's
// metrics and the replay's run report both go through a [Writer]), and it
// imports nothing but the standard library and homing's settings (the
// names, which imports nothing else either).
//
// A [Writer] writes a [Line] (a namespace, one dimension set, metrics with
// their units, other properties) as one Write call per line, within the
// specification's bounds: more metrics than one line may hold are split
// over several lines, never dropped, and a name or a value that CloudWatch
// would reject is an error wrapping [ErrInvalid].
//
// A [Recorder] feeds the lane's alarms and dashboard from a Go consumer
// built on package batch. [Wrap] gives each invocation a [Tally];
// [CountOutcome] (batch.Options.OnOutcome) and [CountReceipt] (the
// idempotent receiver's outcome, from the record handler) count into it;
// when the invocation returns, the Recorder writes one line with the
// dimension Lane and the metrics of settings.ConsumerMetrics
// (RecordsProcessed, RecordsFailed, RecordsInvalid, DuplicatesAbsorbed,
// CompletionsUnrecorded, InDoubtTakeovers), and one line per invalid reason
// with the dimensions Lane and Reason. The namespace and the lane come from
// POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME ([LoadConfig]),
// the variables the construct sets for both functions of a lane.
//
// A consumer in another runtime feeds the same alarms by writing the same
// lines to its stdout (see docs/OPERATIONS.md, "Feed the lane's alarms from
// your consumer").
package emf
