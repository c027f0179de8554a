// Package batch processes an SQS batch delivered to Lambda one record at a
// time and reports partial batch failures, so that one bad record never makes
// SQS deliver the good ones again.
//
// A [Processor] runs a [Handler] per record and decides by its result: nil
// is a success; an error with an Invalid() (reason, detail string) method
// ([Reject] makes one) sends the record to the [InvalidChannel] and
// acknowledges it, or fails it if the send fails; any other error, or a
// panic, is a batch item failure, which SQS delivers again and, after
// maxReceiveCount receives, moves to the DLQ. Standard queues run records
// concurrently up to a bound, FIFO queues each message group in order; no
// record starts with less than the deadline margin left. The event source
// mapping must enable ReportBatchItemFailures.
//
// [InvalidQueue] is the InvalidChannel on SQS; batchtest has one in memory.
// The reasons are in docs/PACKAGES.md#batch.
package batch
