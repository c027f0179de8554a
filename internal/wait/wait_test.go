package wait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/wait"
)

func TestSleep(t *testing.T) {
	if err := wait.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled at once", err)
	}
	if err := wait.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("zero duration on a done context: err = %v", err)
	}
}
