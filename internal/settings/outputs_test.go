package settings_test

import (
	"testing"

	"github.com/homingdlq/homing/internal/settings"
)

func TestOutputID(t *testing.T) {
	for _, c := range []struct{ lane, want string }{
		{"orders", "OrdersDeadLetterQueueUrl"},
		{"payments-ledger", "PaymentsLedgerDeadLetterQueueUrl"},
		{"x_1", "X1DeadLetterQueueUrl"},
		{"zahlungsausgänge", "ZahlungsausgNgeDeadLetterQueueUrl"},
	} {
		if got := settings.OutputID(c.lane, settings.OutputDeadLetterQueueURL); got != c.want {
			t.Errorf("OutputID(%q) = %q, want %q", c.lane, got, c.want)
		}
	}
}
