// Package taxstub is a local stand-in for the tax and invoice service, so the
// consumer lane runs end to end without a real downstream. It speaks the wire
// contract of internal/sample/tax and adds an admin API for tests and the demo:
//
//	POST /invoices        issue an invoice: 201 {"invoiceNumber":"INV-000001"}; 422 when
//	                      the orderId contains "REJECT"; 503 while down (or by chance while flaky)
//	                      and always for an orderId that contains "DOWN"
//	GET  /invoices/{key}  look up by Idempotency-Key (path-escaped): 200 {"invoiceNumber":...}
//	                      with the last invoice issued for that key, 404 when never applied,
//	                      503 while down (or by chance while flaky)
//	GET  /health          200 while up or flaky, 503 while down
//	POST /admin/mode      {"mode":"up"} | {"mode":"down"} | {"mode":"flaky","errorRate":0.3},
//	                      optional "latencyMs" added to every call, optional "dedupe":true
//	GET  /admin/invoices  {"<orderId>": <invoices issued>, ...}
//	GET  /admin/calls     {"<orderId>": <accepted invoice calls>, ...}
//	POST /admin/reset     forget every invoice, back to mode up without latency or dedupe
//
// By default it does not deduplicate by Idempotency-Key: every accepted call
// issues a new invoice and counts it, so a test that finds one invoice per
// order proves that our consumer called once, not that the stub absorbed a
// second call. With "dedupe":true it behaves as real invoice services do: a
// repeated Idempotency-Key (the header; the orderId when absent) answers the
// invoice already issued, and /admin/calls still counts every call.
package taxstub
