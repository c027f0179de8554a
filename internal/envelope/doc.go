// Package envelope fits our metadata beside a producer's SQS message
// attributes without losing any of them.
//
// SQS allows at most [MaxAttributes] message attributes per message. When we
// forward a message (to the invalid queue, or back from the DLQ to its source)
// we keep the body byte for byte and every producer attribute, and add exactly
// one attribute of our own, holding a small JSON document. When the producer
// already used all ten slots, the producer attribute whose encoding grows
// least is folded into our attribute ("overflow") and [Unpack] restores it,
// so nothing is dropped and the message still has at most ten attributes.
//
// Our names are ours ([InvalidAttributeName], [ReplayAttributeName],
// [Reserved]): a producer's copy is kept as data under a [Neutral] name by
// whoever forwards it, never decoded as metadata; Unpack refuses an
// overflow section Pack could not have written ([ErrCorrupt]), so a forged
// one cannot inject attributes, reserved or not, into what we forward.
//
// Sizes: what Pack adds is bounded by [MetadataReserveBytes], so a source
// queue sized [MaxSourceMessageBytes] only accepts messages that still fit
// SQS's [MaxMessageBytes] once forwarded with our metadata.
package envelope
