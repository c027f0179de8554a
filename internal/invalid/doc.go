// Package invalid is the Invalid Message Channel: it publishes a record that
// will never be valid to its own SQS queue, with the reason, so that it can be
// fixed at the source instead of burning delivery attempts and polluting the
// dead-letter queue.
//
// The body is sent unchanged and every producer attribute is kept. Our
// metadata (reason, detail, source queue, original message id, time, consumer)
// travels in one String attribute named [AttributeName], packed by
// internal/envelope so that the message never exceeds SQS's ten attributes:
// when the producer already used all ten, one is folded into our attribute
// and [Read] restores it. A producer's own attribute called [AttributeName]
// (an earlier verdict sent back, or a forgery) is never decoded: it is kept
// as data under "homing-invalid.prev". Every metadata field is bounded
// ([MaxDetailBytes] and the others), so a message the source queue accepted
// always fits the invalid queue.
//
// For a FIFO invalid queue the message keeps the source's MessageGroupId (or
// uses the consumer name when the source is a standard queue), and its
// deduplication id is derived from the source queue and message id, so a
// record that is published twice (for example when the acknowledgement after
// publishing is lost) is stored once.
package invalid
