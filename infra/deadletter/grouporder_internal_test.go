package deadletter

import (
	"slices"
	"testing"
)

// TestHoldKeyPatterns: a consumer name is spelled literally in the
// LeadingKeys patterns, so that a name with an IAM wildcard in it grants
// no other scope's hold items.
func TestHoldKeyPatterns(t *testing.T) {
	for _, tc := range []struct {
		scope string
		want  []string
	}{
		{"payments", []string{"payments#holds", "payments#hold#*"}},
		{"a*b?$c", []string{"a${*}b${?}${$}c#holds", "a${*}b${?}${$}c#hold#*"}},
	} {
		if got := holdKeyPatterns(tc.scope); !slices.Equal(got, tc.want) {
			t.Errorf("holdKeyPatterns(%q) = %q, want %q", tc.scope, got, tc.want)
		}
	}
}

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
