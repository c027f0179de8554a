// Package conformance reads a deployed CloudFormation stack back and compares
// the properties that carry our promises with its template: the source
// queue's redrive policy (dead-letter target and maxReceiveCount), the DLQ's
// redrive allow-policy, retention and visibility, the tables' TTL attribute,
// and the event source mapping's ReportBatchItemFailures, batch size and
// maximum concurrency.
//
// It exists because emulators drop properties silently (DESIGN.md, "Local
// emulation"). [Checker.Check] reports every difference as a [Finding]. A
// finding whose Fix is set is a known emulator gap with an emulator-only
// repair (today: the table TTL specification, which the emulator's
// CloudFormation does not apply); cmd/localcheck applies those repairs only
// when asked to, says so loudly, and checks again. Nothing here runs against
// AWS: the deploy workflow for AWS does not call it.
package conformance
