package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// Hostile text as a producer (a body, an attribute, the invalid lane's
// metadata it can forge), a ledger record or a park written from one, or an
// endpoint (a health status line, an error message) can get to dlq, in
// forms SQS accepts: controls reach a body as JSON escapes that the key
// expression decodes, C1 controls, bidi overrides and carriage returns as
// they are.
const (
	clearScreen = "\x1b[2J"
	windowTitle = "\x1b]0;pwned\x07"
	hyperlink   = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
	c1CSI       = "\u009b31m"
	rtlOverride = "\u202e"
	hostile     = clearScreen + windowTitle + hyperlink + "\r" + c1CSI + rtlOverride
	// hostileShown is hostile as dlq shows it.
	hostileShown = `\x1b[2J\x1b]0;pwned\x07\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\\\x0d\u009b31m\u202e`
)

// hostileDeadLetter puts in the DLQ a message whose key (by the lane's
// key expression, orderId), body, attribute and invalid reason carry
// hostile, the key and reason decoded from JSON escapes.
func (f *fixture) hostileDeadLetter() { f.hostileIn(f.dlq) }

// hostileInvalid puts the same message in the invalid queue, where the
// verdict's reason is the message's reason (on the DLQ it is the
// producer's attribute, not shown as a reason).
func (f *fixture) hostileInvalid() { f.hostileIn(f.invalid) }

func (f *fixture) hostileIn(queue string) {
	f.t.Helper()
	attrs, err := envelope.Pack(map[string]types.MessageAttributeValue{
		"note": {DataType: aws.String("String"), StringValue: aws.String("a\rFAKE" + c1CSI + rtlOverride)},
	}, invalid.AttributeName, invalid.Metadata{Reason: hostile, Detail: windowTitle})
	if err != nil {
		f.t.Fatal(err)
	}
	f.send(queue, hostileBody, nil, attrs)
	f.clock.Advance(time.Hour)
}

// hostileBody carries hostile in its orderId, controls as JSON escapes.
const hostileBody = `{"orderId":"K\u001b[2J\u001b]0;pwned\u0007\u001b]8;;https://evil.example/\u001b\\click\u001b]8;;\u001b\\\r` + c1CSI + rtlOverride + `",` + "\r" + `"x":"` + c1CSI + rtlOverride + `"}`

// hostileHealth serves a health endpoint whose status line carries
// hostile and a byte of invalid UTF-8, as Go's HTTP client takes it; it
// returns the base URL.
func hostileHealth(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			r := bufio.NewReader(c)
			for line, err := r.ReadString('\n'); err == nil && line != "\r\n"; line, err = r.ReadString('\n') {
			}
			_, _ = c.Write([]byte("HTTP/1.1 503 Down" + hostile + "\xff\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			_ = c.Close()
		}
	}()
	return "http://" + l.Addr().String()
}

// TestHumanOutputShowsControlsEscaped runs each command on hostile text:
// in the table, nothing a terminal acts on reaches stdout or stderr but
// the layout's line feeds (and the progress bar's carriage returns on a
// terminal), and the text is shown escaped; with -o json it comes back as
// it was.
func TestHumanOutputShowsControlsEscaped(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fixture) []string // the arguments
		code  int
		tty   bool     // stderr is a terminal: the progress bar draws, with carriage returns
		shown []string // in stdout or stderr, as dlq shows hostile text
		json  func(t *testing.T, r result)
	}{
		{
			name: "peek: key, reason, body, attribute",
			setup: func(f *fixture) []string {
				f.hostileInvalid()
				return []string{"peek", "--queue", "invalid", "--width", "1000"}
			},
			shown: []string{" K" + hostileShown + "\n", " " + hostileShown + "\n", ` note=a FAKE\u009b31m\u202e` + "\n",
				`{"orderId":"K\\u001b[2J`, ` "x":"\u009b31m\u202e"}`, `"detail":"\u001b]0;pwned\u0007"`},
			json: func(t *testing.T, r result) {
				m := decode[peekReport](t, r).Messages[0]
				if m.Key != "K"+hostile || m.Reason != hostile || m.Body != hostileBody || m.Attributes["note"] != "a\rFAKE"+c1CSI+rtlOverride || m.Invalid.Detail != windowTitle {
					t.Fatalf("message = %+v", m)
				}
			},
		},
		{
			name: "inspect: the reason table and the routes of the last run",
			setup: func(f *fixture) []string {
				f.hostileInvalid()
				f.putRun(replay.Summary{RunID: "run-1", StartedAt: f.clock.Now(), Routes: []replay.RouteSummary{{
					Route: "orders" + rtlOverride, Gates: []replay.Gate{{Name: "canary", Decision: replay.GateOpen}},
					BreakerSignal: windowTitle, RecordsMissing: true, RecordsMissingDetail: hostile,
				}}})
				return []string{"inspect", "--queue", "invalid"}
			},
			shown: []string{hostileShown + "  1", `orders\u202e  `, `closed (\x1b]0;pwned\x07)`, `Route orders\u202e: ` + hostileShown},
			json: func(t *testing.T, r result) {
				rep := decode[inspectReport](t, r)
				if rep.Sample.ByReason[hostile] != 1 || rep.Routes[0].Route != "orders"+rtlOverride || rep.Routes[0].Detail != hostile {
					t.Fatalf("report = %+v", rep)
				}
			},
		},
		{
			name: "replay: the health endpoint's status line, the route in the progress lines",
			setup: func(f *fixture) []string {
				f.hostileDeadLetter()
				return []string{"replay", "--dry-run", "--route", "orders" + windowTitle, "--health-url", hostileHealth(f.t)}
			},
			code:  exitIncomplete,
			shown: []string{`status 503 Down` + hostileShown + "\n", `orders\x1b]0;pwned\x07  1`, `route orders\x1b]0;pwned\x07: examined`},
			json: func(t *testing.T, r result) {
				s := decode[replay.Summary](t, r)
				if !strings.HasSuffix(s.Gates[0].Detail, "status 503 Down"+hostile) || s.Routes[0].Route != "orders"+windowTitle {
					t.Fatalf("summary = %+v", s)
				}
			},
		},
		{
			name: "replay: the progress bar on a terminal",
			setup: func(f *fixture) []string {
				f.hostileDeadLetter()
				return []string{"replay", "--dry-run", "--route", "orders" + windowTitle}
			},
			tty:   true,
			shown: []string{`replay orders\x1b]0;pwned\x07`},
		},
		{
			name: "audit --key: the ledger's records and the completion record",
			setup: func(f *fixture) []string {
				now := f.clock.Now()
				if _, _, err := f.ledger.Mark(f.t.Context(), record.Message{HistoryKey: record.HistoryKey("K-1", ""), MessageID: "m-1" + rtlOverride,
					State: record.Seen, Route: "orders" + c1CSI, Reason: hostile, FirstSeenAt: now, At: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
					f.t.Fatal(err)
				}
				f.items.put("invoice#K-1", "COMPLETED", "invoice "+hostile, now.Add(time.Hour))
				return []string{"audit", "--key", "K-1"}
			},
			shown: []string{`m-1\u202e`, `orders\u009b31m`, "  " + hostileShown, "result invoice " + hostileShown},
			json: func(t *testing.T, r result) {
				a := decode[keyAudit](t, r)
				if a.History[0].Reason != hostile || a.History[0].MessageID != "m-1"+rtlOverride || a.Completion.Result != "invoice "+hostile {
					t.Fatalf("audit = %+v", a)
				}
			},
		},
		{
			name: "audit --runs: run ids and route names",
			setup: func(f *fixture) []string {
				gates := []replay.Gate{{Name: "canary", Decision: replay.GateOpen}}
				f.putRun(replay.Summary{RunID: "run" + windowTitle, StartedAt: f.clock.Now(), Total: replay.Counts{Parked: map[string]int{hostile: 1}},
					Routes: []replay.RouteSummary{{Route: "a" + rtlOverride, Gates: gates}, {Route: "b", Gates: gates}}})
				return []string{"audit", "--runs", "1"}
			},
			shown: []string{`run\x1b]0;pwned\x07`, "1 " + hostileShown, `a\u202e/canary=open`},
			json: func(t *testing.T, r result) {
				if s := decode[[]replay.Summary](t, r)[0]; s.RunID != "run"+windowTitle || s.Routes[0].Route != "a"+rtlOverride || s.Total.Parked[hostile] != 1 {
					t.Fatalf("summary = %+v", s)
				}
			},
		},
		{
			name: "groups: the head and why it is parked",
			setup: func(f *fixture) []string {
				f.fifoLane()
				f.parkGroup("g-1", "m"+c1CSI, "invalid: "+hostile, "invalid"+c1CSI, 1)
				return []string{"groups"}
			},
			shown: []string{`m\u009b31m`, "invalid: " + hostileShown, `invalid\u009b31m`},
			json: func(t *testing.T, r result) {
				if g := decode[groupsReport](t, r).Groups[0]; g.Head != "m"+c1CSI || g.Reason != "invalid: "+hostile || g.Queue != "invalid"+c1CSI {
					t.Fatalf("group = %+v", g)
				}
			},
		},
		{
			name: "groups release: the confirmation and the report",
			setup: func(f *fixture) []string {
				f.fifoLane()
				f.parkGroup("g-1", "m"+c1CSI, "invalid: "+hostile, "invalid", 1)
				var applied []string
				f.consumer = f.applyReleased(&applied)
				f.stdinTTY, f.stdin = true, "y\n"
				return []string{"groups", "release", "g-1"}
			},
			shown: []string{`Release group g-1 (parked: invalid: ` + hostileShown + `), so that its 1 waiting record(s) go back to the source, in sequence, and the group goes on without its head m\u009b31m`,
				`Its head m\u009b31m stays in the invalid queue (invalid: ` + hostileShown + ")"},
		},
		{
			name: "groups release --dry-run: the park",
			setup: func(f *fixture) []string {
				f.fifoLane()
				f.parkGroup("g-1", "m"+c1CSI, "invalid: "+hostile, "invalid"+c1CSI, 1)
				return []string{"groups", "release", "g-1", "--dry-run"}
			},
			shown: []string{`head m\u009b31m in the invalid\u009b31m queue, invalid: ` + hostileShown},
		},
		{
			name: "an error from AWS",
			setup: func(f *fixture) []string {
				f.envErr = accessDeniedWith(hostile + "\xff")
				return []string{"replay", "--dry-run"}
			},
			code: exitError,
			// An error's lines go through the printable writer only: its
			// line feeds and backslashes stay, so that what it quotes
			// (%q) reads in Go's syntax.
			shown: []string{"AccessDeniedException: " + `\x1b[2J\x1b]0;pwned\x07\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\\x0d\u009b31m\u202e\xff — pass`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			args := tt.setup(f)
			f.stderrTTY = tt.tty
			r := f.run(args...)
			r.want(t, tt.code)
			for stream, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
				for i, c := range out {
					if c == utf8.RuneError && !strings.HasPrefix(out[i:], "\ufffd") || unicode.In(c, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) && c != '\n' && !(c == '\r' && tt.tty && stream == "stderr") {
						t.Fatalf("%s: %U at %d, want it escaped:\n%q", stream, c, i, out)
					}
				}
			}
			for _, s := range tt.shown {
				if !strings.Contains(r.stdout+r.stderr, s) {
					t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", s, r.stdout, r.stderr)
				}
			}
			if tt.tty && !strings.Contains(r.stderr, "\r") {
				t.Fatalf("no progress bar on the terminal:\n%q", r.stderr)
			}
			if tt.json != nil {
				f.stdinTTY, f.stdin = false, ""
				r := f.run(append([]string{"-o", "json"}, args...)...)
				r.want(t, tt.code)
				tt.json(t, r)
				// As encoding/json writes it: U+202E as it is, where the
				// printable writer would have escaped it.
				if !strings.Contains(r.stdout, rtlOverride) {
					t.Fatalf("JSON not as encoding/json writes it:\n%s", r.stdout)
				}
			}
		})
	}
}

// putRun writes a run summary to the ledger.
func (f *fixture) putRun(s replay.Summary) {
	f.t.Helper()
	if err := f.ledger.PutRun(f.t.Context(), s, f.clock.Now().Add(time.Hour)); err != nil {
		f.t.Fatal(err)
	}
}

// accessDeniedWith is an AWS error whose message says msg.
type accessDeniedWith string

func (e accessDeniedWith) Error() string { return "AccessDeniedException: " + string(e) }
