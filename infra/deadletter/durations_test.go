package deadletter

import "testing"

func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		seconds float64
		want    string
	}{
		{1296000, "15d"},
		{14 * 86400, "14d"},
		{4 * 3600, "4h"},
		{90, "90s"},
		{5400, "90m"},
		{60, "1m"},
		{1.5, "1500ms"},
		{0.5, "500ms"},
		{0, "0s"},
		{-30, "-30s"},
		{36 * 3600, "36h"},
		{0.0001, "0.0001s"},
	} {
		if got := human(tc.seconds); got != tc.want {
			t.Errorf("human(%v) = %q, want %q", tc.seconds, got, tc.want)
		}
	}
}
