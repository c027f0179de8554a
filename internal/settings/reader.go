package settings

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Reader reads declared settings through getenv, collecting every malformed
// value so that one error lists them all; a malformed value reads as the
// setting's default, so that it is reported once. It parses; it does not
// check bounds (a configuration's Validate does, with each declaration's
// Check). It is not safe for concurrent use.
type Reader struct {
	getenv func(string) string
	errs   []error
}

// NewReader returns a Reader over getenv (os.Getenv in a main, a map in
// tests).
func NewReader(getenv func(string) string) *Reader { return &Reader{getenv: getenv} }

// String returns the value of s, or its Default when unset or empty.
func (r *Reader) String(s String) string {
	if v := r.getenv(s.Env); v != "" {
		return v
	}
	return s.Default
}

// StringOr returns the value of s, or def when unset or empty: for a
// default that is another setting's value (see String.DefaultDoc).
func (r *Reader) StringOr(s String, def string) string {
	if v := r.getenv(s.Env); v != "" {
		return v
	}
	return def
}

// Int returns s as an integer, or its Default when unset.
func (r *Reader) Int(s Int) int { return read(r, s.Env, s.Default, strconv.Atoi, "an integer") }

// Float returns s as a number, or its Default when unset.
func (r *Reader) Float(s Float) float64 {
	return read(r, s.Env, s.Default, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number")
}

// Duration returns s as a Go duration ("10s", "720h"), or its Default when
// unset.
func (r *Reader) Duration(s Duration) time.Duration {
	return read(r, s.Env, s.Default, time.ParseDuration, "a duration like 10s or 720h")
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
		return def // so that a check of the value reports nothing more
	}
	return t
}
