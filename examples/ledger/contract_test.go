package ledger_test

import (
	"testing"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/ledger/ledgertest"
)

// The in-memory ledger passes the whole contract, a fresh ledger per test.
func TestMemoryContract(t *testing.T) {
	ledgertest.Run(t, ledgertest.Harness{
		NewLedger: func(*testing.T) ledger.Ledger { return &ledger.Memory{} },
		Features:  ledgertest.Features{ConcurrentTransactions: true},
	})
}
