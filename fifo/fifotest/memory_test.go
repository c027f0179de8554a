package fifotest_test

import (
	"sync"
	"testing"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/fifo/fifotest"
)

func TestMemoryContract(t *testing.T) {
	fifotest.Tests(t, func(*testing.T) fifo.Store { return &fifotest.Memory{} })
}

// Counts from many goroutines at once all count (go test -race checks the
// locking).
func TestMemoryCountsConcurrently(t *testing.T) {
	m := &fifotest.Memory{}
	if _, err := m.Park(t.Context(), fifo.Park{Group: "g", Head: "m-1"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := m.Count(t.Context(), "g", fifo.Count{Parked: 1}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	parks, err := m.Parked(t.Context(), []string{"g"})
	if err != nil {
		t.Fatal(err)
	}
	if p := parks["g"]; p.Parked != 20 {
		t.Fatalf("park after 20 counts: %+v", p)
	}
}
