// Package holdtest is the test kit of package hold: [Memory], a hold.Store
// in memory, and [Tests], the contract every hold.Store passes (Memory and
// dynamo's store on the emulator run it).
package holdtest
