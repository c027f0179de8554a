package settings_test

import (
	"testing"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/settings"
)

// TestGroupOrderDefaults: the consumer's FIFO settings default to what
// package fifo's Keeper takes when its fields are zero, which settings
// cannot import; and the consumer's LEDGER_TABLE is the replay's.
func TestGroupOrderDefaults(t *testing.T) {
	if settings.SourceRetention.Default != fifo.DefaultRetention {
		t.Errorf("SOURCE_RETENTION defaults to %v, fifo.Keeper's Retention to %v", settings.SourceRetention.Default, fifo.DefaultRetention)
	}
	if settings.MaxReceives.Default != fifo.DefaultMaxReceives {
		t.Errorf("MAX_RECEIVES defaults to %d, fifo.Keeper's MaxReceives to %d", settings.MaxReceives.Default, fifo.DefaultMaxReceives)
	}
	if settings.ParksTable.Env != settings.LedgerTable.Env || settings.ParksTable.Required {
		t.Errorf("the consumer's parks table is %s (required %t), want the replay's %s, optional", settings.ParksTable.Env, settings.ParksTable.Required, settings.LedgerTable.Env)
	}
	for _, v := range []string{"hold", "skip", ""} {
		if _, err := fifo.ParseOnError(v); err != nil || settings.GroupOrder.Check(v) != nil {
			t.Errorf("GROUP_ORDER=%q: fifo %v, settings %v", v, err, settings.GroupOrder.Check(v))
		}
	}
}
