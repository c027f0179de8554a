package deadletter

import "testing"

// TestGroupOrderInEffect: hold by default on a FIFO lane, nothing on a
// standard one or with off.
func TestGroupOrderInEffect(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		prop *string
		fifo bool
		want string
	}{
		{nil, true, GroupOrderHold},
		{s(GroupOrderSkip), true, GroupOrderSkip},
		{s(GroupOrderOff), true, ""},
		{nil, false, ""},
		{s(GroupOrderOff), false, ""},
	} {
		if got := groupOrder(tc.prop, tc.fifo); got != tc.want {
			t.Errorf("groupOrder(%q, fifo %v) = %q, want %q", deref(tc.prop), tc.fifo, got, tc.want)
		}
	}
}
