package redact_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/redact"
)

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://health.example/v1", "https://health.example/v1"},
		{"https://user:s3cret@health.example/v1", "https://REDACTED@health.example/v1"},
		{"https://t0ken@health.example", "https://REDACTED@health.example"},
		{"http://u:p%zz@host:80/x", "http://REDACTED@host:80/x"},
		{"http://u:p@ss word@host/x", "http://REDACTED@host/x"},
		{"u:s3cret@host/x", "REDACTED@host/x"},
		{"http://host/x@y", "http://host/x@y"},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := redact.URL(tc.in); got != tc.want {
				t.Fatalf("URL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseNeverRepeatsACredential(t *testing.T) {
	for _, in := range []string{"http://u:s3cret%zz@host", "http://u:s3cret@ho st", "http://u:s3cret@host:port", "ht tp://u:s3cret@host"} {
		t.Run(in, func(t *testing.T) {
			_, err := redact.Parse(in)
			if err == nil {
				t.Fatal("parsed; want an error")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error %q repeats the password", err)
			}
		})
	}
	u, err := redact.Parse("https://u:s3cret@host/p")
	if err != nil || u.User.Username() != "u" {
		t.Fatalf("Parse of a valid URL = %v, %v", u, err)
	}
}

func FuzzURL(f *testing.F) {
	for _, s := range []string{"https://u:p@h/x", "http://h", "u:p@h", "http://a@b@c/d", "%zz@", "http://[::1]:80/"} {
		f.Add(s, "s3cretpw")
	}
	f.Fuzz(func(t *testing.T, prefix, password string) {
		if len(password) < 6 || strings.ContainsAny(password, "@/?#%\\") || !validASCII(password) {
			return
		}
		raw := "https://user:" + password + "@" + prefix
		if !strings.ContainsFunc(password, notHex) || strings.Contains(prefix, password) || strings.Contains(strconv.Quote(prefix), password) {
			// A password of hex digits alone may be spelt again by the
			// escapes URL.String writes; or it is outside the user info.
			return // the password is also outside the user information
		}
		if other := redact.URL("https://user:" + strings.Repeat("~", len(password)) + "@" + prefix); strings.Contains(other, password) {
			return // the rest of the URL spells it (an escape beside the text: "# 0000X" shows as "#%200000X")
		}
		if strings.Contains(redact.URL(raw), password) {
			t.Fatalf("URL(%q) keeps the password", raw)
		}
		if _, err := redact.Parse(raw); err != nil && strings.Contains(err.Error(), password) {
			t.Fatalf("Parse(%q) error %q keeps the password", raw, err)
		}
	})
}

func notHex(r rune) bool { return !strings.ContainsRune("0123456789abcdefABCDEF", r) }

func validASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
