// Package publicapi holds no code: its test guards the boundary of the
// module's public packages, every package outside internal/ that is not a
// main (batch, invalid, idempotency and idempotency/idempotencytest, dynamo,
// replay and replay/replaytest).
//
// None of them, nor their unit tests and Examples, may depend on the sample
// domain (internal/sample: order, invoicing, tax, taxstub, consumer):
// another team imports them without the order-to-invoice lane. Nor may the
// mains that ship to every lane (functions/replay, cmd/dlq), nor their
// tests: they take the lane's key, payload hash and consumer scope from
// the lane's configuration. replay and
// invalid may not depend on aws-lambda-go: the engine and the codec run in
// the operator CLI as well as in Lambda.
//
// The test asks the go command on PATH (`go test` puts GOROOT/bin first)
// for every package's transitive dependencies with `go list -test -json`; it
// reads the module's source and needs no network.
package publicapi
