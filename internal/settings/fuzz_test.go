package settings_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/settings"
)

// FuzzReader reads one fuzzed value as every declared setting of both
// functions (settings.Consumer, settings.Replay). Properties:
//   - a value that does not parse is reported (Err names the variable and
//     quotes the value) and reads as the setting's default;
//   - a value that parses reads back the same when written in the form the
//     functions' tables and the construct write (strconv.Itoa,
//     FormatFloat, FormatDuration): the round trip;
//   - Check accepts exactly the values within the declaration's bounds
//     (NaN never), so a configuration that validates is bounded;
//   - the empty value is the default, and never an error.
func FuzzReader(f *testing.F) {
	for _, s := range []string{"", "0", "1", "-1", "+7", "100", "101", "2147483648", "9223372036854775808", "0x10", "1_000",
		"0.1", "3000", "3e3", "1e400", "NaN", "-Inf", "inf", "0x1p-2", "10s", "1h30m", "720h", ".5s", "1h1h", "-5m", "2562047h47m16.854775807s",
		"2562048h", "1µs", "5 m", "invoice", "a#b", strings.Repeat("a", 65), "https://tax.example/v1", "\x00"} {
		f.Add(s)
	}
	var all []settings.Setting
	for _, list := range [][]settings.Setting{settings.Consumer, settings.Replay} {
		for _, s := range list {
			all = append(all, unwrap(s))
		}
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, s := range all {
			env := func(key string) string {
				if key == s.Row().Env {
					return v
				}
				return ""
			}
			r := settings.NewReader(env)
			var refused bool
			switch s := s.(type) {
			case settings.Int:
				got := r.Int(s)
				refused = checkRead(t, r, s.Env, v, got == s.Default)
				if !refused && v != "" {
					if back := settings.NewReader(func(string) string { return strconv.Itoa(got) }).Int(s); back != got {
						t.Fatalf("%s=%q read %d, written back %d", s.Env, v, got, back)
					}
				}
				if within := got >= s.Min && (s.Max == 0 || got <= s.Max); (s.Check(got) == nil) != within {
					t.Fatalf("%s: Check(%d) = %v, within %d..%d = %v", s.Env, got, s.Check(got), s.Min, s.Max, within)
				}
			case settings.Float:
				got := r.Float(s)
				refused = checkRead(t, r, s.Env, v, got == s.Default)
				if !refused && v != "" {
					back := settings.NewReader(func(string) string { return settings.FormatFloat(got) }).Float(s)
					if back != got && !(math.IsNaN(back) && math.IsNaN(got)) {
						t.Fatalf("%s=%q read %v, written back %v", s.Env, v, got, back)
					}
				}
				if within := got >= s.Min && got <= s.Max; (s.Check(got) == nil) != within {
					t.Fatalf("%s: Check(%v) = %v, within %v..%v = %v", s.Env, got, s.Check(got), s.Min, s.Max, within)
				}
			case settings.Duration:
				got := r.Duration(s)
				refused = checkRead(t, r, s.Env, v, got == s.Default)
				if !refused && v != "" {
					if back := settings.NewReader(func(string) string { return settings.FormatDuration(got) }).Duration(s); back != got {
						t.Fatalf("%s=%q read %v, written back as %q, read %v", s.Env, v, got, settings.FormatDuration(got), back)
					}
				}
				if within := got >= s.Min && (s.Max == 0 || got <= s.Max); (s.Check(got) == nil) != within {
					t.Fatalf("%s: Check(%v) = %v, within %v..%v = %v", s.Env, got, s.Check(got), s.Min, s.Max, within)
				}
			case settings.String:
				got := r.String(s)
				if r.Err() != nil || v != "" && got != v || v == "" && got != s.Default {
					t.Fatalf("%s=%q read %q (%v)", s.Env, v, got, r.Err())
				}
				within := !(got == "" && (s.Required || s.Default != "")) && (s.MaxBytes == 0 || len(got) <= s.MaxBytes) && !(s.Reject != "" && strings.ContainsAny(got, s.Reject))
				if (s.Check(got) == nil) != within {
					t.Fatalf("%s: Check(%q) = %v, want accepted %v", s.Env, got, s.Check(got), within)
				}
			default:
				t.Fatalf("%s: a declaration of type %T", s.Row().Env, s)
			}
			if refused && v == "" {
				t.Fatalf("%s: the empty value refused", s.Row().Env)
			}
		}
	})
}

// checkRead checks what a Reader says of the value v of env: nothing, or
// an error naming the variable and quoting the value, when the value read
// is then the default (isDefault). It reports whether v was refused.
func checkRead(t *testing.T, r *settings.Reader, env, v string, isDefault bool) bool {
	t.Helper()
	err := r.Err()
	if err == nil {
		return false
	}
	if !isDefault || !strings.Contains(err.Error(), env+"="+strconv.Quote(v)) {
		t.Fatalf("%s=%q refused with %v (the value read is the default: %v)", env, v, err, isDefault)
	}
	return true
}
