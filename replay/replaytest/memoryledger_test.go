package replaytest_test

import (
	"testing"
	"time"

	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

func TestMemoryLedgerContract(t *testing.T) {
	replaytest.RunLedger(t, replaytest.LedgerHarness{
		NewLedger: func(_ *testing.T, now func() time.Time) replay.Ledger { return replaytest.NewMemoryLedger(now) },
		Features:  replaytest.LedgerFeatures{ConcurrentMarks: true},
	})
}
