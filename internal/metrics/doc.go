// Package metrics writes the lane's CloudWatch Embedded Metric Format (EMF)
// lines: structured log lines that CloudWatch Logs turns into metrics, with
// no API call from the function.
//
// A [Consumer] wraps the consumer's batch processor. For each invocation it
// puts a [Tally] in the context, which [Record] (the batch processor's
// OnOutcome hook) and [Idempotency] (the record handler's) count into, and
// when the batch is done it writes the tally: one line with the dimension
// Lane (records processed and failed, invalid records, duplicates absorbed,
// completions that could not be recorded, in-doubt takeovers) and one line
// per invalid reason seen, with the dimensions Lane and Reason (EMF gives a
// key one value per line, so each reason needs a line of its own).
//
// The namespace and the lane come from the variables that Powertools for
// AWS Lambda reads, POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME
// (see [Load]); the replay function reads them too, so that both functions
// of a lane publish under one namespace and one Lane value, and two lanes
// never merge.
package metrics
