// Package batchtest holds test doubles for a consumer built on package
// batch:
//
//   - [InvalidChannel], an in-memory batch.InvalidChannel that keeps the
//     records a batch.Processor rejects, each with its reason and detail,
//     and that can be told to fail;
//   - [Lane], a whole lane in memory on a manual clock: the source queue
//     and its redrive to the DLQ after MaxReceiveCount receives, the
//     invalid and parking queues, the event source mapping with partial
//     batch failures, and the replay engine, so that a test sees a
//     consumer and the replay together without an emulator. A FIFO lane
//     keeps SQS's group lock, so a consumer with [Lane.Keeper] keeps its
//     groups in order, and [Lane.Releaser] releases a parked group.
//
// InvalidChannel is safe for concurrent use, as batch.Processor calls its
// channel from the goroutines of the records; a Lane is driven by one test.
package batchtest
