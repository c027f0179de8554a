// Package envelope fits our metadata beside a producer's SQS message
// attributes without losing any of them.
//
// SQS allows at most [MaxAttributes] message attributes per message. When we
// forward a message (to the invalid queue, or back from the DLQ to its source)
// we keep the body byte for byte and every producer attribute, and add exactly
// one attribute of our own, holding a small JSON document. When the producer
// already used all ten slots, the producer attributes that sort last by name
// are folded into our attribute ("overflow") and [Unpack] restores them, so
// nothing is dropped and the message still has at most ten attributes.
package envelope
