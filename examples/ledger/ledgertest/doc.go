// Package ledgertest is the contract suite every ledger.Ledger passes: the
// in-memory ledger runs it in unit tests, the DynamoDB table on the
// emulators (make e2e).
//
// The suite is a table of named test functions, as watermill's
// pubsub/tests are: each rule is an exported function such as
// [TestAppendAgainAddsNothing] taking the *testing.T and a [Harness],
// [Tests] lists them, and [Run] runs each as a subtest named after its
// function, so a failure names the rule and one rule runs alone:
//
//	func TestMemoryContract(t *testing.T) {
//		ledgertest.Run(t, ledgertest.Harness{
//			NewLedger: func(*testing.T) ledger.Ledger { return &ledger.Memory{} },
//			Features:  ledgertest.Features{ConcurrentTransactions: true},
//		})
//	}
//
//	go test -run 'TestMemoryContract/TestAppendAgainAddsNothing'
//
// Each test derives its account and payment ids from t.Name(), so no test
// reads another's entries and the ledgers of one harness may share a table.
//
// [Features] declares what the implementation has, as watermill's
// tests.Features do: a test that needs a feature the harness does not
// declare (ConcurrentTransactions, for appends racing on one account)
// skips with the feature named, never passing silently.
package ledgertest
