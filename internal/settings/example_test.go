package settings_test

import (
	"errors"
	"fmt"

	"github.com/homingdlq/homing/internal/settings"
)

// A function reads its declared settings through a Reader, then checks each
// value against its declaration: one error lists every problem.
func ExampleReader() {
	env := map[string]string{"RATE": "5000", "MAX_REPLAYS": "three"}
	r := settings.NewReader(func(k string) string { return env[k] })
	rate := r.Float(settings.Rate)
	maxPerRun := r.Int(settings.MaxPerRun) // unset: its default
	r.Int(settings.MaxReplays)
	fmt.Println(maxPerRun)
	fmt.Println(errors.Join(r.Err(), settings.Rate.Check(rate)))
	// Output:
	// 100000
	// MAX_REPLAYS="three": not an integer
	// RATE=5000: want 0.1..3000 messages per second
}
