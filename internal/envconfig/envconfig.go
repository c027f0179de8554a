package envconfig

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Reader reads settings through getenv. It is not safe for concurrent use.
type Reader struct {
	getenv func(string) string
	errs   []error
}

// New returns a Reader over getenv (os.Getenv in a main, a map in tests).
func New(getenv func(string) string) *Reader { return &Reader{getenv: getenv} }

// String returns the value of key, or def when it is unset or empty.
func (r *Reader) String(key, def string) string {
	if v := r.getenv(key); v != "" {
		return v
	}
	return def
}

// Int returns key as an integer, or def when it is unset.
func (r *Reader) Int(key string, def int) int { return read(r, key, def, strconv.Atoi, "an integer") }

// Float returns key as a number, or def when it is unset.
func (r *Reader) Float(key string, def float64) float64 {
	return read(r, key, def, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number")
}

// Duration returns key as a Go duration ("10s", "720h"), or def when unset.
func (r *Reader) Duration(key string, def time.Duration) time.Duration {
	return read(r, key, def, time.ParseDuration, "a duration like 10s or 720h")
}

// Err returns every malformed value read so far, joined, or nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }

func read[T any](r *Reader, key string, def T, conv func(string) (T, error), want string) T {
	v := r.getenv(key)
	if v == "" {
		return def
	}
	t, err := conv(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: not %s", key, v, want))
	}
	return t
}
