package replay

import (
	"fmt"
	"slices"
	"testing"

	"github.com/homingdlq/homing/hold"
)

// heldHeads picks the held, unparked groups; over its bound, a window of
// them that wraps around, moved on by the run's id, so that runs reach
// every one.
func TestHeldHeads(t *testing.T) {
	listed := func(n int) []hold.Hold {
		var out []hold.Hold
		for i := range n {
			out = append(out, hold.Hold{Group: fmt.Sprintf("g-%02d", i), State: hold.Held})
		}
		return out
	}
	mixed := []hold.Hold{
		{Group: "a", State: hold.Held},
		{Group: "b", State: hold.Held, Parked: "invalid: bad"},
		{Group: "c", State: hold.Draining},
		{Group: "d", State: hold.Held},
	}
	for _, tc := range []struct {
		name   string
		listed []hold.Hold
		n      int
		want   int
	}{
		{"none", nil, 3, 0},
		{"held unparked only", mixed, 3, 2},
		{"all within the bound", listed(5), 5, 5},
		{"a window over it", listed(12), 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := heldHeads(tc.listed, "run-1", tc.n)
			if len(got) != tc.want {
				t.Fatalf("heldHeads = %v, want %d groups", got, tc.want)
			}
			if tc.name == "held unparked only" && !slices.Equal(got, []string{"a", "d"}) {
				t.Fatalf("heldHeads = %v, want a and d", got)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
				t.Fatalf("heldHeads = %v: a group twice", got)
			}
		})
	}
	// Over the bound, runs with other ids reach every group.
	seen := map[string]bool{}
	for i := range 40 {
		for _, g := range heldHeads(listed(12), fmt.Sprintf("run-%d", i), 5) {
			seen[g] = true
		}
	}
	if len(seen) != 12 {
		t.Fatalf("40 runs reached %d of 12 groups", len(seen))
	}
}
