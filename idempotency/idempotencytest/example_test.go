package idempotencytest_test

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/idempotency/idempotencytest"
)

// In your module the suite runs from a test function, against a store of
// yours per rule:
//
//	func TestStoreContract(t *testing.T) {
//		idempotencytest.Run(t, idempotencytest.Harness{
//			NewStore: func(t *testing.T) idempotency.Store { return newStore(t) },
//			Features: idempotencytest.Features{ConcurrentClaims: true},
//		})
//	}
//
// An Example has no *testing.T, so this one drives the same call through
// testing.RunTests (see runContract) against idempotency.NewMemoryStore, and
// prints the rules the suite checks and whether the store kept them all. A
// store that breaks a rule fails that rule's subtest, by name.
func ExampleRun() {
	var rules []string
	passed := runContract(idempotencytest.Harness{
		NewStore: func(t *testing.T) idempotency.Store {
			if r := strings.TrimPrefix(t.Name(), "TestStoreContract/"); !slices.Contains(rules, r) {
				rules = append(rules, r) // once, even when -cpu runs the suite again
			}
			return idempotency.NewMemoryStore()
		},
		Features: idempotencytest.Features{ConcurrentClaims: true},
	})
	for _, r := range rules {
		fmt.Println(r)
	}
	fmt.Println("passed:", passed)
	// Output:
	// TestFirstClaimWins
	// TestLiveLockIsNotClaimable
	// TestExpiredLockIsClaimable
	// TestTakeoverReturnsTheExpiredLock
	// TestFreshClaimReturnsNoRecord
	// TestTakeoverOfAnotherPayloadIsRefused
	// TestTakeoverOfAnotherPayloadAfterAVoidClaim
	// TestVoidClaimMustBeTheExpiredLockSeen
	// TestExpiredClaimFoundAppliedIsCompletedByItsToken
	// TestCompletedRecordReturnsItsResult
	// TestExpiredRecordIsClaimable
	// TestReleaseFreesTheKey
	// TestOnlyTheHolderCompletesOrReleases
	// TestAbsentKeyCannotBeCompletedOrReleased
	// TestConcurrentClaimersOneWins
	// TestHashVersionsCompareWithinAVersion
	// passed: true
}

// runContract runs idempotencytest.Run as the test TestStoreContract, once,
// whatever flags the enclosing `go test` was given (-run, -skip, -v, -count
// would otherwise filter it out or print around the Example's output), and
// reports whether it passed. A failure's report is printed, so the Example
// fails with it.
func runContract(h idempotencytest.Harness) bool {
	for name, value := range map[string]string{"test.run": "", "test.skip": "", "test.v": "false", "test.count": "1"} {
		f := flag.Lookup(name)
		if f == nil {
			continue
		}
		saved := f.Value.String()
		_ = f.Value.Set(value)
		defer func() { _ = f.Value.Set(saved) }()
	}
	all := func(string, string) (bool, error) { return true, nil }
	return testing.RunTests(all, []testing.InternalTest{{
		Name: "TestStoreContract",
		F:    func(t *testing.T) { idempotencytest.Run(t, h) },
	}})
}
