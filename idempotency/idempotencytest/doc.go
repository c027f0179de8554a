// Package idempotencytest is the contract suite every idempotency.Store must
// pass: run it against your own store as the in-memory and DynamoDB stores
// do. [Run] runs each rule of storeRules as a subtest named after it; a
// [Harness] builds the store and declares its [Features], and a test that
// needs an undeclared one skips, naming it:
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
// Each test derives its key from t.Name(), so stores may share a table.
// The reasons are in docs/PACKAGES.md#idempotencytest.
package idempotencytest
