package settings_test

import (
	"testing"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
)

// TestGroupOrderDefaults: the consumer's LEDGER_TABLE is the replay's, and
// GROUP_ORDER takes what package fifo parses.
func TestGroupOrderDefaults(t *testing.T) {
	if settings.ParksTable.Env != settings.LedgerTable.Env || settings.ParksTable.Required {
		t.Errorf("the consumer's parks table is %s (required %t), want the replay's %s, optional", settings.ParksTable.Env, settings.ParksTable.Required, settings.LedgerTable.Env)
	}
	for _, v := range []string{"hold", "skip", ""} {
		if _, err := fifo.ParseOnError(v); err != nil || settings.GroupOrder.Check(v) != nil {
			t.Errorf("GROUP_ORDER=%q: fifo %v, settings %v", v, err, settings.GroupOrder.Check(v))
		}
	}
}
