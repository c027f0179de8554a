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

// In your module the suite runs from a test function, against a fresh store
// of yours per rule:
//
//	func TestStoreContract(t *testing.T) {
//		idempotencytest.Run(t, func(t *testing.T) idempotency.Store { return newStore(t) })
//	}
//
// An Example has no *testing.T, so this one drives the same call through
// testing.RunTests (see runContract) against idempotency.NewMemoryStore, and
// prints the rules the suite checks and whether the store kept them all. A
// store that breaks a rule fails that rule's subtest, by name.
func ExampleRun() {
	var rules []string
	passed := runContract(func(t *testing.T) idempotency.Store {
		if r := strings.TrimPrefix(t.Name(), "TestStoreContract/"); !slices.Contains(rules, r) {
			rules = append(rules, r) // once, even when -cpu runs the suite again
		}
		return idempotency.NewMemoryStore()
	})
	for _, r := range rules {
		fmt.Println(r)
	}
	fmt.Println("passed:", passed)
	// Output:
	// first_claim_wins
	// live_lock_is_not_claimable
	// expired_lock_is_claimable
	// takeover_returns_the_expired_lock
	// fresh_claim_returns_no_record
	// takeover_of_another_payload_is_refused
	// takeover_of_another_payload_after_a_void_claim
	// void_claim_must_be_the_expired_lock_seen
	// expired_claim_found_applied_is_completed_by_its_token
	// completed_record_returns_its_result
	// expired_record_is_claimable
	// release_frees_the_key
	// only_the_holder_completes_or_releases
	// absent_key_cannot_be_completed_or_released
	// concurrent_claimers:_exactly_one_wins
	// passed: true
}

// runContract runs idempotencytest.Run as the test TestStoreContract, once,
// whatever flags the enclosing `go test` was given (-run, -skip, -v, -count
// would otherwise filter it out or print around the Example's output), and
// reports whether it passed. A failure's report is printed, so the Example
// fails with it.
func runContract(newStore func(t *testing.T) idempotency.Store) bool {
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
		F:    func(t *testing.T) { idempotencytest.Run(t, newStore) },
	}})
}
