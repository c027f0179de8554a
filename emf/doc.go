// Package emf feeds a lane's alarms from a Go consumer on package batch: a
// [Recorder] writes, once per invocation, the lane's metrics as CloudWatch
// Embedded Metric Format lines on stdout, with the dimension Lane (and
// Reason, for invalid records) in the namespace and lane of [LoadConfig].
// [Wrap] gives each invocation its tally; [CountOutcome] and
// [CountReceipt] count into it. A line CloudWatch would reject is an error
// (see Recorder.OnError). It imports only the standard library and
// homing's internal packages.
//
// A consumer in another runtime writes the same lines (docs/OPERATIONS.md,
// "Feed the lane's alarms from your consumer"); the reasons are in
// docs/PACKAGES.md#emf.
package emf
