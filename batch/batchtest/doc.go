// Package batchtest holds a test double of package batch's port: an
// in-memory [InvalidChannel] that keeps the messages a batch.Processor
// rejects, each with its reason and detail, and that can be told to fail,
// so that a consumer's unit tests need no SQS client.
//
// It is safe for concurrent use, as batch.Processor calls its channel from
// the goroutines of the records.
package batchtest
