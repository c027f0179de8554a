package envconfig_test

import (
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/envconfig"
)

func TestReader(t *testing.T) {
	env := map[string]string{"S": "x", "I": "7", "F": "2.5", "D": "90s", "BAD_I": "seven", "BAD_D": "soon"}
	r := envconfig.New(func(k string) string { return env[k] })
	if r.String("S", "d") != "x" || r.String("UNSET", "d") != "d" {
		t.Error("String")
	}
	if r.Int("I", 1) != 7 || r.Int("UNSET", 1) != 1 {
		t.Error("Int")
	}
	if r.Float("F", 1) != 2.5 || r.Duration("D", 0) != 90*time.Second || r.Duration("UNSET", time.Minute) != time.Minute {
		t.Error("Float or Duration")
	}
	if err := r.Err(); err != nil {
		t.Fatalf("no malformed value read yet: %v", err)
	}
	r.Int("BAD_I", 1)
	r.Duration("BAD_D", 0)
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), `BAD_I="seven": not an integer`) || !strings.Contains(err.Error(), `BAD_D="soon": not a duration`) {
		t.Fatalf("err = %v, want both malformed values", err)
	}
}
