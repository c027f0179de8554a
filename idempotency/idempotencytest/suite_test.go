package idempotencytest

import (
	"testing"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/suite"
)

// Every exported test function of the package is in Tests, once: a test
// left out of the table would never run.
func TestTestsListsEveryTestFunction(t *testing.T) {
	suite.CheckTable(t, "Harness", storeRules())
}

// The tests use keys of their own: they pass on one store shared by all.
func TestRunSharesOneStore(t *testing.T) {
	s := idempotency.NewMemoryStore()
	Run(t, Harness{NewStore: func(*testing.T) idempotency.Store { return s }, Features: Features{ConcurrentClaims: true}})
}

// A test that needs a feature the harness does not declare skips, naming
// the feature.
func TestUndeclaredFeatureSkips(t *testing.T) {
	var skipped bool
	t.Run("without ConcurrentClaims", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		testConcurrentClaimersOneWins(t, Harness{NewStore: func(*testing.T) idempotency.Store {
			t.Error("the store was made: the test ran without its feature")
			return idempotency.NewMemoryStore()
		}})
	})
	if !skipped {
		t.Fatal("testConcurrentClaimersOneWins did not skip without ConcurrentClaims")
	}
}
