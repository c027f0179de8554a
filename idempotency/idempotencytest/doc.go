// Package idempotencytest is the contract suite every idempotency.Store must
// pass: the in-memory store runs it in unit tests, the DynamoDB store on the
// emulator.
package idempotencytest
