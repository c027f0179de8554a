package replay

import "testing"

// A run's replays are failing on the DLQ signal when at least half of
// them, of at least minEvidence, came back, as the most any pass saw.
func TestWatchedFailing(t *testing.T) {
	tests := []struct {
		name                   string
		replayed, back, before int
		want                   bool
	}{
		{"none back", 10, 0, 0, false},
		{"fewer than half back", 10, 4, 0, false},
		{"half back", 10, 5, 0, true},
		{"all back", 10, 10, 0, true},
		{"half seen by an earlier pass", 10, 1, 5, true},
		{"two passes are not added", 10, 3, 4, false},
		{"a single replay back is no evidence", 1, 1, 0, false},
		{"two replays, one back", 2, 1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := watched{Return: Return{Replayed: tt.replayed, Back: tt.back}, before: tt.before}
			if got := w.failing(); got != tt.want {
				t.Fatalf("failing() = %v, want %v", got, tt.want)
			}
		})
	}
}
