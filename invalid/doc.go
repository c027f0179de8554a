// Package invalid is the codec of the Invalid Message Channel: the verdict
// ([Metadata]: reason, detail, source queue, original message id, time,
// consumer) that travels with a record sent to its own queue because it will
// never be valid.
//
// [Stamp] packs the verdict into one String attribute, [AttributeName],
// folding one of the producer's attributes into it when all ten are used;
// [Read] restores them. A producer's own attribute of that name is never
// decoded: it travels on as data. Stamp fails only when the producer has
// more than ten attributes; Read fails when the attribute is not what Stamp
// writes, and then returns nothing smuggled in it. Both are pure functions,
// safe for concurrent use, that never modify their argument. The package
// needs no Lambda types.
//
// The reasons are in docs/PACKAGES.md#invalid.
package invalid
