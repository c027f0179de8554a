package ledgertest

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/homingdlq/homing/examples/ledger"
)

// Harness is what the suite needs of a ledger.Ledger implementation.
type Harness struct {
	// NewLedger returns a ledger for one test. It may share its backend
	// (one table) between tests: each test uses accounts and payments of
	// its own.
	NewLedger func(t *testing.T) ledger.Ledger
	// Features declares what the implementation has; the zero value
	// declares nothing, and the tests that need a feature skip, naming it.
	Features Features
}

// Features declares, as watermill's tests.Features do, the behaviours an
// implementation has beyond what every ledger must do. A test that needs an
// undeclared feature skips and names it, so a gap is declared, never passed
// silently.
type Features struct {
	// ConcurrentTransactions: concurrent appends to one account are
	// isolated from each other, so appends racing for the account's head
	// each end with a sequence number of their own or with ErrContended,
	// and the entries never skip or repeat a number. DynamoDB isolates
	// TransactWriteItems (serializable; a conflicting one is canceled);
	// moto's server does not. No test checks that a gap of it is still
	// there: a race not seen in one run does not show it closed.
	ConcurrentTransactions bool
}

// Test is one rule of the contract, a test function of its own; [Tests]
// lists them all.
type Test func(t *testing.T, h Harness)

// Tests returns the contract, one test per rule, in the order [Run] runs
// them. Each test derives its ids from t.Name(), so any one runs alone and
// none reads another's entries.
func Tests() []Test {
	return []Test{
		TestAppendsNumberEntriesInSequence,
		TestAppendAgainAddsNothing,
		TestLookupFindsTheAppendedEntry,
		TestFrozenAccountWritesNothing,
		TestConcurrentAppendsNeverSkipOrRepeat,
	}
}

// Run runs every test of [Tests] against h as a subtest named after its
// function (go test -run 'MemoryContract/TestAppendAgainAddsNothing').
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, test := range Tests() {
		t.Run(testName(test), func(t *testing.T) { test(t, h) })
	}
}

// testName is the name of test's function, under which [Run] runs it
// ("TestAppendAgainAddsNothing").
func testName(test Test) string {
	name := runtime.FuncForPC(reflect.ValueOf(test).Pointer()).Name()
	return name[strings.LastIndex(name, ".")+1:]
}

// needs skips t unless the harness declares the feature named.
func needs(t *testing.T, declared bool, feature string) {
	t.Helper()
	if !declared {
		t.Skipf("needs Features.%s, which the harness does not declare", feature)
	}
}
