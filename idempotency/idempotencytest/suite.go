package idempotencytest

import (
	"testing"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/suite"
)

// Harness is what the suite needs of an idempotency.Store implementation.
type Harness struct {
	// NewStore returns a store for one test. It may share its backend (one
	// table) between tests: each test uses a key of its own.
	NewStore func(t *testing.T) idempotency.Store
	// Features declares what the implementation has; the zero value
	// declares nothing, and the tests that need a feature skip, naming it.
	Features Features
}

// Features declares, as watermill's tests.Features do, the behaviours an
// implementation has beyond what every store must do. A test that needs an
// undeclared feature skips and names it, so a gap is declared, never passed
// silently.
type Features struct {
	// ConcurrentClaims: concurrent claims of one key are serialised, so of
	// several claimers racing for one key exactly one wins. DynamoDB
	// serialises conditional writes to one item; moto's server does not.
	// No test checks that a gap of it is still there: a race not seen in
	// one run does not show it closed.
	ConcurrentClaims bool
}

// storeRule is one rule of the contract, a test function of its own; storeRules
// lists them all.
type storeRule func(t *testing.T, h Harness)

// storeRules returns the contract, one test per rule, in the order [Run] runs
// them. Each test derives its key from t.Name(), so any one runs alone and
// none reads another's records.
func storeRules() []storeRule {
	return []storeRule{
		testFirstClaimWins,
		testLiveLockIsNotClaimable,
		testExpiredLockIsClaimable,
		testTakeoverReturnsTheExpiredLock,
		testFreshClaimReturnsNoRecord,
		testTakeoverOfAnotherPayloadIsRefused,
		testTakeoverOfAnotherPayloadAfterAVoidClaim,
		testVoidClaimMustBeTheExpiredLockSeen,
		testExpiredClaimFoundAppliedIsCompletedByItsToken,
		testCompletedRecordReturnsItsResult,
		testExpiredRecordIsClaimable,
		testReleaseFreesTheKey,
		testOnlyTheHolderCompletesOrReleases,
		testAbsentKeyCannotBeCompletedOrReleased,
		testConcurrentClaimersOneWins,
		testHashVersionsCompareWithinAVersion,
	}
}

// Run runs every test of storeRules against h as a subtest named after its
// function (go test -run 'StoreContract/TestReleaseFreesTheKey').
func Run(t *testing.T, h Harness) {
	t.Helper()
	suite.Run(t, h, storeRules())
}
