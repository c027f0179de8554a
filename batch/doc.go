// Package batch processes an SQS batch delivered to Lambda one record at a
// time and reports partial batch failures, so that one bad record never makes
// SQS deliver the good ones again.
//
// A [Processor] wraps a per-record [Handler] and decides, for each record:
//
//   - nil error: success, the record is deleted by the event source mapping;
//   - an error that says the record is invalid (it has an
//     Invalid() (reason, detail string) method, reachable with errors.As): the
//     record is published to the [InvalidChannel] with its reason and then
//     counted as a success, so it does not burn delivery attempts and never
//     reaches the dead-letter queue; if publishing fails the record is a
//     transient failure instead, so nothing is lost;
//   - any other error, or a panic: transient failure, the record's message id
//     goes to batchItemFailures and SQS delivers it again (and, after
//     maxReceiveCount receives, moves it to the DLQ).
//
// The response always has a non-nil batchItemFailures list, because some
// pollers reject null. Records of standard queues run concurrently up to a
// bound. Records of FIFO queues (the event source ARN ends in ".fifo") run in
// order within their message group, and after a failure the later records of
// that group fail without running, which keeps the group's order. No record
// starts when the invocation has less than a safety margin left; records not
// started are reported as failures.
//
// The event source mapping must have ReportBatchItemFailures enabled, or
// Lambda ignores the response and treats the batch as all-successful.
//
// [InvalidQueue] is the InvalidChannel of a Lambda consumer (an SQS queue);
// batchtest.InvalidChannel is an in-memory one for a consumer's unit tests.
package batch
