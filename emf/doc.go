// Package emf writes CloudWatch Embedded Metric Format (EMF) lines: JSON
// log lines that CloudWatch Logs turns into metrics. A [Writer] writes a
// [Line] in one Write call, split over several lines when it holds more
// metrics than one may; a name or a value CloudWatch would reject is an
// error wrapping [ErrInvalid].
//
// A [Recorder] feeds a lane's alarms from a Go consumer on package batch:
// [Wrap] gives each invocation a [Tally], [CountOutcome] and [CountReceipt]
// count into it, and the Recorder writes the metrics of
// settings.ConsumerMetrics with the dimension Lane (and Reason, for invalid
// records) in the namespace and lane of [LoadConfig]. It imports only the
// standard library and settings.
//
// A consumer in another runtime writes the same lines (docs/OPERATIONS.md,
// "Feed the lane's alarms from your consumer"); the reasons are in
// docs/PACKAGES.md#emf.
package emf
