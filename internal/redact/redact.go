// Package redact removes credentials from URLs before they are shown: in
// errors, logs, run summaries, the ledger and dlq's output. A configured
// URL (HEALTH_URL, TAX_SERVICE_URL, a queue URL) may carry a user name and
// password; homing uses them for the request and never repeats them.
package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Mask stands in for the user information of a URL.
const Mask = "REDACTED"

// URL returns raw with its user information (user name and password)
// replaced by [Mask]. A string that does not parse as a URL keeps nothing
// between "://" and the last "@" of its authority either, so a malformed
// URL cannot carry a credential through. It is pure.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if u.User == nil {
			if u.Opaque != "" { // "user:pass@host" parses as scheme "user"
				return maskAuthority("", raw)
			}
			return raw
		}
		u.User = url.User(Mask)
		return u.String()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return maskAuthority("", raw)
	}
	return maskAuthority(scheme+"://", rest)
}

// maskAuthority masks what comes before the last "@" of the authority of
// rest (up to its first '/', '?' or '#').
func maskAuthority(prefix, rest string) string {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return prefix + rest
	}
	return prefix + Mask + rest[at:]
}

// Parse parses raw as url.Parse does, but its error never repeats a
// credential: url.Parse's error quotes the whole input.
func Parse(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if !errors.As(err, &ue) {
			return nil, errors.New("not a URL")
		}
		inner := ue.Err
		if URL(raw) != raw {
			// The cause may quote part of the credentials (an invalid
			// escape in a password).
			inner = errors.New("invalid URL with user information")
		}
		return nil, &url.Error{Op: ue.Op, URL: URL(raw), Err: inner}
	}
	return u, nil
}
