// Package emulatortest helps tests that run against the local AWS emulator
// (build tag e2e, run by `make e2e`). The SDK finds the emulator through
// AWS_ENDPOINT_URL like any other endpoint: nothing here branches on it.
//
// The contract suites run on every implementation of their service
// ([Endpoints], [OnEachEndpoint]): the queue suites on ministack, moto and
// LocalStack, the DynamoDB suites on ministack and moto, each listed by
// the Makefile in HOMING_SQS_ENDPOINTS and HOMING_DYNAMODB_ENDPOINTS.
package emulatortest
