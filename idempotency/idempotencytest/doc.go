// Package idempotencytest is the contract suite every idempotency.Store must
// pass, exported the way net/http/httptest is so that a team can hold its
// own store to the same rules: the in-memory store runs it in unit tests,
// the DynamoDB store (package dynamo) on the emulator.
//
// The suite is a table of named test functions, as watermill's
// pubsub/tests are: each rule is an exported function such as
// [TestReleaseFreesTheKey] taking the *testing.T and a [Harness], [Tests]
// lists them, and [Run] runs each as a subtest named after its function, so
// a failure names the rule and one rule runs alone:
//
//	func TestStoreContract(t *testing.T) {
//		idempotencytest.Run(t, idempotencytest.Harness{
//			NewStore: func(t *testing.T) idempotency.Store { return newStore(t) },
//			Features: idempotencytest.Features{ConcurrentClaims: true},
//		})
//	}
//
//	go test -run 'TestStoreContract/TestReleaseFreesTheKey'
//
// Each test derives its key from t.Name(), so no test reads another's
// records and the stores of one harness may share a table.
//
// [Features] declares what the implementation has, as watermill's
// tests.Features do: a test that needs a feature the harness does not
// declare (ConcurrentClaims, for the race of several claimers for one key)
// skips with the feature named, never passing silently.
//
// An Example has no *testing.T, so the package's runnable Example drives
// [Run] through testing.RunTests against idempotency.NewMemoryStore and
// prints the rules and the verdict; in your module, call Run from a test
// function as above.
package idempotencytest
