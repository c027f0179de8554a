package ledgertest

import (
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/suite"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

func TestMemoryLedgerContract(t *testing.T) {
	Run(t, Harness{
		NewLedger: func(_ *testing.T, now func() time.Time) replay.Ledger { return replaytest.NewMemoryLedger(now) },
		Features:  Features{ConcurrentMarks: true},
	})
}

// Every test function of the contract is in its table, once: a test left
// out of the table would never run.
func TestTableListsEveryTestFunction(t *testing.T) {
	suite.CheckTable(t, "Harness", rules())
}

// The tests of message records use keys of their own: they pass on one
// ledger shared by all of them (testRunsComeBackLatestFirst needs it empty).
func TestLedgerTestsShareOneLedger(t *testing.T) {
	now := time.Now
	shared := replaytest.NewMemoryLedger(func() time.Time { return now() })
	h := Harness{
		NewLedger: func(_ *testing.T, clock func() time.Time) replay.Ledger {
			now = clock
			return shared
		},
		Features: Features{ConcurrentMarks: true},
	}
	for _, test := range rules() {
		if suite.Name(test) == "testRunsComeBackLatestFirst" {
			continue
		}
		t.Run(suite.Name(test), func(t *testing.T) { test(t, h) })
	}
}

// A test that needs a feature the harness does not declare skips, naming
// the feature, before it touches the implementation.
func TestUndeclaredFeatureSkips(t *testing.T) {
	var skipped bool
	t.Run("ConcurrentMarks", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		testConcurrentIntentsOneWins(t, Harness{NewLedger: func(*testing.T, func() time.Time) replay.Ledger {
			t.Error("the ledger was made: the test ran without its feature")
			return replaytest.NewMemoryLedger(nil)
		}})
	})
	if !skipped {
		t.Error("the test that needs ConcurrentMarks did not skip without it")
	}
}
