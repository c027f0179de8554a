// Package emulatortest helps tests that run against the local AWS emulator
// (build tag e2e, run by `make e2e`). The SDK finds the emulator through
// AWS_ENDPOINT_URL like any other endpoint: nothing here branches on it.
package emulatortest
