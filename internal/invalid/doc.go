// Package invalid is the Invalid Message Channel: it publishes a record that
// will never be valid to its own SQS queue, with the reason, so that it can be
// fixed at the source instead of burning delivery attempts and polluting the
// dead-letter queue.
//
// The body is sent unchanged and every producer attribute is kept. Our
// metadata (reason, detail, source queue, original message id, time, consumer)
// travels in one String attribute named [AttributeName], packed by
// internal/envelope so that the message never exceeds SQS's ten attributes:
// when the producer already used all ten, the one that sorts last by name is
// folded into our attribute and [Read] restores it.
//
// For a FIFO invalid queue the message keeps the source's MessageGroupId (or
// uses the consumer name when the source is a standard queue), and its
// deduplication id is derived from the source queue and message id, so a
// record that is published twice (for example when the acknowledgement after
// publishing is lost) is stored once.
package invalid
