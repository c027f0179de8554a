// Package holdtest is the test kit of package hold: [Memory], a hold.Store
// in memory, and [Tests], the contract every hold.Store passes (Memory in
// unit tests, dynamo's store on the emulator).
//
// The suite is a table of named test functions, as watermill's
// pubsub/tests are: each rule is an exported function such as
// [TestEndAfterAnAppendConflicts] taking the *testing.T and a [Harness],
// [Tests] lists them, and [Run] runs each as a subtest named after its
// function, so a failure names the rule and one rule runs alone:
//
//	func TestHoldStoreContract(t *testing.T) {
//		holdtest.Run(t, holdtest.Harness{
//			NewStore: func(t *testing.T) hold.Store { return newStore(t) },
//			Features: holdtest.Features{ConcurrentWrites: true},
//		})
//	}
//
//	go test -run 'TestHoldStoreContract/TestEndAfterAnAppendConflicts'
//
// Each test takes a store of its own from the harness, empty (a store on a
// shared table takes a scope of its own), so a test may list every hold.
// [Features] declares what the implementation has: a test that needs a
// feature the harness does not declare (ConcurrentWrites, for the races)
// skips with the feature named, never passing silently.
package holdtest
