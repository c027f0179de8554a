package settings_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/settings"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string // "" for no error
	}{
		{"int in range", settings.MaxReplays.Check(100), ""},
		{"int below", settings.MaxReplays.Check(0), "MAX_REPLAYS=0: want 1..100"},
		{"int above", settings.MaxReplays.Check(101), "MAX_REPLAYS=101: want 1..100"},
		{"int unbounded above", settings.MaxPerRun.Check(math.MaxInt32), ""},
		{"int at least", settings.MaxPerRun.Check(-1), "MAX_PER_RUN=-1: want >= 1"},
		{"float in range", settings.Rate.Check(0.1), ""},
		{"float above", settings.Rate.Check(3000.5), "RATE=3000.5: want 0.1..3000 messages per second"},
		{"float NaN", settings.Rate.Check(math.NaN()), "RATE=NaN: want 0.1..3000"},
		{"duration above zero", settings.BackoffBase.Check(0), "BACKOFF_BASE=0s: want > 0"},
		{"duration positive", settings.BackoffBase.Check(time.Nanosecond), ""},
		{"duration at least", settings.RecordLifetime.Check(431 * time.Hour), "RECORD_LIFETIME=431h: want >= 432h"},
		{"duration at most", settings.ExpiryRescueWindow.Check(337 * time.Hour), "EXPIRY_RESCUE_WINDOW=337h: want > 0 and <= 336h"},
		{"duration at the max", settings.ExpiryRescueWindow.Check(336 * time.Hour), ""},
		{"required", settings.LedgerTable.Check(""), "LEDGER_TABLE is required"},
		{"optional", settings.HealthURL.Check(""), ""},
		{"rejected character", settings.ConsumerName.Check("a#b"), `CONSUMER_NAME="a#b": want 1..64 bytes without '#'`},
		{"too long", settings.ConsumerName.Check(strings.Repeat("a", 65)), "want 1..64 bytes"},
		{"empty with a default", settings.ConsumerName.Check(""), `CONSUMER_NAME is empty (unset, it is "invoice")`},
		{"empty and optional", settings.ServiceName.Check(""), ""},
		{"at the length", settings.ConsumerName.Check(strings.Repeat("a", 64)), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			switch {
			case c.want == "" && c.err != nil:
				t.Fatalf("err = %v, want none", c.err)
			case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)):
				t.Fatalf("err = %v, want %q", c.err, c.want)
			}
		})
	}
}

// Every default is within its own bounds: a function that reads nothing
// from its environment starts.
func TestDefaultsAreValid(t *testing.T) {
	for _, list := range [][]settings.Setting{settings.Consumer, settings.Replay} {
		for _, s := range list {
			var err error
			switch s := unwrap(s).(type) {
			case settings.Int:
				err = s.Check(s.Default)
			case settings.Float:
				err = s.Check(s.Default)
			case settings.Duration:
				err = s.Check(s.Default)
			case settings.String:
				if !s.Required {
					err = s.Check(s.Default)
				}
			default:
				t.Fatalf("%T is not a declaration", s)
			}
			if err != nil {
				t.Errorf("default of %s: %v", s.Row().Env, err)
			}
		}
	}
	if err := settings.BackoffBase.Check(settings.BackoffMax.Default); err != nil || settings.BackoffBase.Default > settings.BackoffMax.Default {
		t.Errorf("BACKOFF_BASE's default above BACKOFF_MAX's")
	}
}

// unwrap returns the declaration of a table entry, noted or not.
func unwrap(s settings.Setting) settings.Setting {
	if u, ok := s.(interface{ Unwrap() settings.Setting }); ok {
		return u.Unwrap()
	}
	return s
}

func TestReader(t *testing.T) {
	env := map[string]string{"RATE": "2.5", "MAX_REPLAYS": "7", "BACKOFF_BASE": "90s", "LEDGER_TABLE": "l",
		"MAX_PER_RUN": "seven", "BACKOFF_MAX": "soon"}
	r := settings.NewReader(func(k string) string { return env[k] })
	if got := r.Float(settings.Rate); got != 2.5 {
		t.Errorf("RATE = %v", got)
	}
	if got := r.Int(settings.MaxReplays); got != 7 {
		t.Errorf("MAX_REPLAYS = %v", got)
	}
	if got := r.Duration(settings.BackoffBase); got != 90*time.Second {
		t.Errorf("BACKOFF_BASE = %v", got)
	}
	if got := r.String(settings.LedgerTable); got != "l" {
		t.Errorf("LEDGER_TABLE = %q", got)
	}
	if got := r.Int(settings.CanaryLimit); got != settings.CanaryLimit.Default {
		t.Errorf("unset CANARY_LIMIT = %v, want its default", got)
	}
	if got := r.String(settings.ConsumerName); got != "invoice" {
		t.Errorf("unset CONSUMER_NAME = %q, want its default", got)
	}
	if got := r.StringOr(settings.ServiceName, "lane"); got != "lane" {
		t.Errorf("unset POWERTOOLS_SERVICE_NAME = %q, want the given default", got)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("no malformed value read yet: %v", err)
	}
	if got := r.Int(settings.MaxPerRun); got != settings.MaxPerRun.Default {
		t.Errorf("malformed MAX_PER_RUN = %v, want its default", got)
	}
	r.Duration(settings.BackoffMax)
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), `MAX_PER_RUN="seven": not an integer`) || !strings.Contains(err.Error(), `BACKOFF_MAX="soon": not a duration`) {
		t.Fatalf("err = %v, want both malformed values", err)
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5m", 4 * time.Hour: "4h", 90 * time.Minute: "1h30m", 720 * time.Hour: "720h",
		2 * time.Second: "2s", 1500 * time.Millisecond: "1.5s", 0: "0s", time.Hour + time.Second: "1h0m1s",
	} {
		if got := settings.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(want); err != nil || back != d {
			t.Errorf("%q does not parse back to %v", want, d)
		}
	}
	for v, want := range map[float64]string{50: "50", 0.1: "0.1", 3000: "3000", 2.5: "2.5"} {
		if got := settings.FormatFloat(v); got != want {
			t.Errorf("FormatFloat(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestKeys(t *testing.T) {
	k := settings.ScopedKey("invoice", "ORD-1#2")
	if k != "invoice#ORD-1#2" {
		t.Fatalf("ScopedKey = %q", k)
	}
	if scope, id, ok := settings.SplitKey(k); !ok || scope != "invoice" || id != "ORD-1#2" {
		t.Fatalf("SplitKey = %q, %q, %v", scope, id, ok)
	}
	if _, _, ok := settings.SplitKey("plain"); ok {
		t.Fatal("a key without separator split")
	}
	if err := settings.ConsumerName.Check("in" + settings.KeySeparator + "voice"); err == nil {
		t.Fatal("a scope with the separator is accepted: its keys could collide")
	}
	for s, want := range map[string]bool{
		"https://sqs.eu-west-1.amazonaws.com/1/orders.fifo": true,
		"arn:aws:sqs:eu-west-1:1:orders.fifo":               true,
		"orders-dlq.fifo":                                   true,
		"https://sqs.eu-west-1.amazonaws.com/1/orders":      false,
		"orders.fifo-dlq":                                   false,
	} {
		if settings.IsFIFO(s) != want {
			t.Errorf("IsFIFO(%q) = %v", s, !want)
		}
	}
}
