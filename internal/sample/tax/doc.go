// Package tax is the client for the tax and invoice service: the invoice
// consumer calls it to calculate the taxes of an order and issue its invoice.
//
// The client sorts every failure into one of the two lanes of the design:
//
//   - *RejectedError (HTTP 422): the service refused the order for good. The
//     caller publishes the message to the invalid queue and acknowledges it.
//     Match it with errors.As; it is returned wrapped with the order ID.
//   - Any other error is transient: the caller reports the record as failed
//     and SQS redrive takes over (and, after maxReceiveCount receives, the
//     dead-letter queue). No error of this package ever means "drop it".
//
// Across both lanes, an error of [Client.IssueInvoice] also says whether the
// service may have applied the call, with a NotApplied() bool method found
// with errors.As (the idempotent receiver's behaviour interface): true only
// when every attempt was answered with a status that refuses it (3xx, 4xx
// but 409, 5xx but 502 and 504) or never left; false when an answer was
// lost (a timeout, a reset after the request was written), or said nothing
// definite. The receiver then asks [Client.LookupInvoice] before it gives
// the order's claim back.
//
// # Wire contract
//
// The service lives under a base URL (absolute http or https, optionally with
// a path prefix: "https://tax.example/api" gives ".../api/invoices").
//
// Issue an invoice:
//
//	POST {baseURL}/invoices
//	Content-Type: application/json
//	Accept: application/json
//	Idempotency-Key: <orderId>
//
//	{"orderId":"ORD-2026-000123","taxId":"123.456.789-09","currency":"BRL","total":"99.80",
//	 "items":[{"sku":"SKU-1","quantity":2,"unitPrice":"49.90"}]}
//
// The body is exactly the JSON encoding of [InvoiceRequest]: the fields in
// that order, money as decimal strings (never JSON numbers), "items" always
// an array (never null). The same order always produces the same body and the
// same Idempotency-Key, on every attempt and every redelivery, so the service
// must treat a repeated key as the same request and answer with the invoice
// already issued.
//
// Responses:
//
//   - 200 or 201 with {"invoiceNumber":"INV-..."}: issued. Extra fields are
//     ignored. A body that is not a JSON object, or whose invoiceNumber is
//     missing or blank, is a protocol error and treated as transient.
//   - 422 with an optional {"message":"..."}: rejected for good; the message
//     (or, failing that, the raw body text), cut at [MaxDetailBytes], becomes
//     [RejectedError].Detail. Not retried.
//   - 408, 429 and every 5xx: transient, retried. A Retry-After header in
//     delta-seconds form ("Retry-After: 3") replaces the backoff delay before
//     the next attempt when it fits in the remaining budget; when it does not,
//     the client gives up at once instead of retrying earlier than told.
//     Other Retry-After forms are ignored.
//   - Any other status (400, 401, 403, 404, 409, other 2xx, 3xx...): not
//     retried in-process, because retrying will not help now, but reported as
//     a transient error naming the status, so the message takes the redrive
//     path and is never lost.
//
// Look up an invoice by Idempotency-Key, to resolve an in-doubt retry (the
// consumer died after calling, before recording the answer):
//
//	GET {baseURL}/invoices/{Idempotency-Key, path-escaped}
//	-> 200 {"invoiceNumber":"INV-..."} when that key was applied
//	-> 404 when it never was
//
// Other answers are retried or reported as for the POST; [Client.LookupInvoice]
// never reads a failure as "not applied".
//
// Health probe, for gates:
//
//	GET {baseURL}/health   -> any 2xx means healthy
//
// Of every response body at most 64 KiB is read; every body is closed. A
// body that fits is read to the end, so the connection can be reused.
//
// The service may see a request more often than the client counts attempts:
// because of the Idempotency-Key header, net/http itself resends a request
// once when a reused keep-alive connection fails before any response byte.
// The service must therefore be idempotent per key, as above.
//
// # Retries and time
//
// [Client.IssueInvoice] makes up to Options.MaxAttempts attempts, each bounded
// by Options.AttemptTimeout, separated by exponential backoff with full jitter
// (a random delay in [0, min(MaxDelay, BaseDelay*2^(n-1))) before attempt n+1).
// All attempts and waits fit in Options.Budget and never run past the
// deadline of the caller's context minus a safety margin of 500ms, which
// leaves the Lambda handler time to report the batch. A cancelled or expired
// context stops the call at once. Time is injectable (Options.Now,
// Options.Sleep, Options.Rand), so tests never wait.
package tax
