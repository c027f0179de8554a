// Package idempotencytest is the contract suite every idempotency.Store must
// pass, exported the way net/http/httptest is so that a team can hold its
// own store to the same rules: the in-memory store runs it in unit tests,
// the DynamoDB store (package dynamo) on the emulator.
//
// [Run] takes the *testing.T of a test function and a constructor of fresh
// stores, and runs one named subtest per rule, so a failure names the rule
// and one rule runs alone (go test -run 'Contract/release_frees_the_key'):
//
//	func TestStoreContract(t *testing.T) {
//		idempotencytest.Run(t, func(t *testing.T) idempotency.Store { return newStore(t) })
//	}
//
// The store must be safe for concurrent use: one subtest races several
// claimers for one key and requires exactly one to win. An implementation
// known to lack a behaviour of its backend (an emulator's gap) declares it
// as a [Gap]; the subtests that need it are skipped with the gap named,
// never passed silently.
//
// An Example has no *testing.T, so the package's runnable Example drives
// [Run] through testing.RunTests against idempotency.NewMemoryStore and
// prints the rules and the verdict; in your module, call Run from a test
// function as above.
package idempotencytest
