package holdtest

import (
	"testing"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/internal/suite"
)

// Every exported test function of the package is in Tests, once: a test
// left out of the table would never run.
func TestTestsListsEveryTestFunction(t *testing.T) {
	suite.CheckTable(t, "Harness", Tests())
}

func TestMemoryContract(t *testing.T) {
	Run(t, Harness{
		NewStore: func(*testing.T) hold.Store { return NewMemory() },
		Features: Features{ConcurrentWrites: true},
	})
}

// A test that needs a feature the harness does not declare skips, naming
// the feature, before it makes a store.
func TestUndeclaredFeatureSkips(t *testing.T) {
	for _, test := range []Test{TestConcurrentBeginsMakeOneHold, TestDrainRacingAppendsLosesNoRecord} {
		var skipped bool
		t.Run(suite.Name(test), func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			test(t, Harness{NewStore: func(*testing.T) hold.Store {
				t.Error("the store was made: the test ran without its feature")
				return NewMemory()
			}})
		})
		if !skipped {
			t.Errorf("%s did not skip without ConcurrentWrites", suite.Name(test))
		}
	}
}
