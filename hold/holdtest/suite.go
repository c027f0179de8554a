package holdtest

import (
	"testing"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/internal/suite"
)

// Harness is what the suite needs of a hold.Store implementation.
type Harness struct {
	// NewStore returns an empty store for one test: no hold and no held
	// record of another test is in it (a store on a shared table takes a
	// scope of its own per test), so a test can list every hold.
	NewStore func(t *testing.T) hold.Store
	// Features declares what the implementation has; the zero value
	// declares nothing, and the tests that need a feature skip, naming it.
	Features Features
}

// Features declares, as watermill's tests.Features do, the behaviours an
// implementation has beyond what every store must do. A test that needs an
// undeclared feature skips and names it, so a gap is declared, never passed
// silently.
type Features struct {
	// ConcurrentWrites: concurrent conditional writes are serialised, so of
	// several Begins racing for one group one makes the hold, and an End
	// racing an Append cannot both succeed. DynamoDB serialises conditional
	// writes to one item (and a transaction with them); moto's server does
	// not.
	ConcurrentWrites bool
}

// Test is one rule of the contract, a test function of its own; [Tests]
// lists them all.
type Test func(t *testing.T, h Harness)

// Tests returns the contract, one test per rule, in the order [Run] runs
// them. Each test takes a fresh store of its own, so any one runs alone.
func Tests() []Test {
	return []Test{
		TestBeginHoldsTheGroup,
		TestBeginReturnsTheStandingHold,
		TestConcurrentBeginsMakeOneHold,
		TestHoldsReturnsOnlyHeldGroups,
		TestAppendNeedsAHold,
		TestAppendKeepsSeqOrder,
		TestAppendOfAStoredSeqChangesNothing,
		TestAppendChangesTheVersion,
		TestNextReturnsAtMostN,
		TestCountCountsTheHeldRecords,
		TestRemoveForgetsAndIsIdempotent,
		TestUpdateIsConditionalOnTheVersion,
		TestUpdateOfAMissingHoldIsNotHeld,
		TestEndDeletesTheHold,
		TestEndAfterAnAppendConflicts,
		TestAHoldBegunAgainIsNotTheEndedOne,
		TestDrainRacingAppendsLosesNoRecord,
		TestListIsOrderedByGroup,
		TestHeldRecordRoundTrips,
		TestGroupsDoNotCollide,
	}
}

// Run runs every test of [Tests] against h as a subtest named after its
// function (go test -run 'HoldContract/TestEndAfterAnAppendConflicts').
func Run(t *testing.T, h Harness) {
	t.Helper()
	suite.Run(t, h, Tests())
}
