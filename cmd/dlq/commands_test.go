package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// deadLetters puts three messages in the DLQ two hours ago: a first dead
// letter, one replayed twice, and one with a producer's copy of the
// invalid lane's attribute (no reason in a DLQ: the consumer sends its
// verdicts to the invalid queue).
func (f *fixture) deadLetters() {
	f.t.Helper()
	f.send(f.dlq, order("ORD-1"), nil, map[string]types.MessageAttributeValue{"traceparent": {DataType: aws.String("String"), StringValue: aws.String("00-abc-01")}})
	f.send(f.dlq, order("ORD-2"), &replay.Metadata{ReplayCount: 2, OriginalMessageID: "m-2", FirstDeadLetteredAt: f.clock.Now()}, nil)
	inv, err := envelope.Pack(nil, invalid.AttributeName, invalid.Metadata{Reason: "invalid-tax-id", Detail: "bad check digits"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.send(f.dlq, order("ORD-3"), nil, inv)
	f.send(f.parking, order("ORD-4"), nil, nil)
	f.clock.Advance(2 * time.Hour)
}

func TestInspect(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()

	r := f.run("--json", "inspect")
	r.want(t, exitOK)
	rep := decode[inspectReport](t, r)
	st := rep.Sample
	if rep.Sampled != "dlq" || len(rep.Queues) != 3 || rep.Queues[0].Visible != 3 || rep.Queues[1].Role != "parking" || rep.Queues[1].Visible != 1 || rep.Queues[2].Role != "invalid" {
		t.Fatalf("queues = %+v", rep.Queues)
	}
	retention := int64(rep.Queues[0].RetentionSeconds)
	if !st.Approximate || st.Size != 3 || st.Limit != 100 || st.OldestAgeSeconds != 7200 || st.ExpiresInSeconds != retention-7200 {
		t.Fatalf("sample = %+v", st)
	}
	if got := st.ByReplayCount; len(got) != 2 || got["0"] != 2 || got["2"] != 1 {
		t.Fatalf("byReplayCount = %v", got)
	}
	if got := st.ByReason; len(got) != 1 || got["dead-lettered"] != 3 || st.Unverified != 0 {
		t.Fatalf("byReason = %v", got)
	}
	// Sampled without deleting, and released at once.
	if n := f.visible(f.dlq); n != 3 {
		t.Fatalf("%d visible after inspect, want 3", n)
	}
	// The stable JSON field names.
	for _, field := range []string{`"sampled"`, `"queues"`, `"role"`, `"inFlight"`, `"retentionSeconds"`, `"oldestSentAt"`, `"oldestAgeSeconds"`, `"expiresInSeconds"`, `"byReplayCount"`, `"byReason"`, `"approximate"`} {
		if !strings.Contains(r.stdout, field) {
			t.Errorf("JSON lacks %s", field)
		}
	}

	r = f.run("inspect", "--sample", "2")
	r.want(t, exitOK)
	for _, line := range []string{
		"QUEUE    VISIBLE  IN FLIGHT  DELAYED  RETENTION  URL",
		"dlq      3        0          0        4d0h       " + f.dlq,
		"Sample of dlq: 2 message(s), at most 2 (approximate).",
		"oldest message  sent " + f.clock.Now().Add(-2*time.Hour).Format(time.RFC3339) + " (2h0m ago)",
		"expires in      3d22h (by retention 4d0h)",
		"REPLAY COUNT  MESSAGES",
		"REASON         MESSAGES",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("table lacks %q:\n%s", line, r.stdout)
		}
	}

	r = f.run("--json", "inspect", "--queue", "parking")
	r.want(t, exitOK)
	if rep := decode[inspectReport](t, r); rep.Sampled != "parking" || rep.Queues[0].URL != f.parking || rep.Sample.Size != 1 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestPeek(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()

	r := f.run("--json", "peek", "-n", "5")
	r.want(t, exitOK)
	rep := decode[peekReport](t, r)
	if rep.Queue != "dlq" || rep.URL != f.dlq || len(rep.Messages) != 3 {
		t.Fatalf("report = %+v", rep)
	}
	byOrder := map[string]peekedMessage{}
	for _, m := range rep.Messages {
		byOrder[m.Key] = m // the key of the lane's route: orderId
	}
	if m := byOrder["ORD-1"]; m.Reason != "dead-lettered" || m.Attributes["traceparent"] != "00-abc-01" || m.Replay != nil || m.Body != order("ORD-1") || m.ReceiveCount != 1 {
		t.Fatalf("ORD-1 = %+v", m)
	}
	if m := byOrder["ORD-2"]; m.ReplayCount != 2 || m.Replay == nil || !m.Verified || m.Replay.OriginalMessageID != "m-2" || len(m.Attributes) != 0 {
		t.Fatalf("ORD-2 = %+v", m)
	}
	if m := byOrder["ORD-3"]; m.Reason != "dead-lettered" || m.Invalid == nil || m.Invalid.Detail != "bad check digits" || len(m.Attributes) != 0 {
		t.Fatalf("ORD-3 = %+v", m)
	}
	if n := f.visible(f.dlq); n != 3 {
		t.Fatalf("%d visible after peek, want 3", n)
	}

	r = f.run("peek", "-n", "1", "--width", "20")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, `{"eventType":"order…`) || !strings.Contains(r.stdout, "1 message(s) of dlq") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	// --limit, and --n, its former name, kept for scripts.
	for _, limit := range []string{"--limit", "--n"} {
		r = f.run("-o", "json", "peek", limit, "2")
		r.want(t, exitOK)
		if n := len(decode[peekReport](t, r).Messages); n != 2 {
			t.Fatalf("peek %s 2: %d messages", limit, n)
		}
	}
	r = f.run("peek", "--queue", "invalid")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "No visible messages in invalid") {
		t.Fatalf("table:\n%s", r.stdout)
	}
}

func TestReplayDryRunThenRun(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()

	r := f.run("--json", "replay", "--dry-run", "--older-than", "90m", "--key", "ORD-1", "--order", "ORD-2") // --order: the alias of --key
	r.want(t, exitOK)
	s := decode[replay.Summary](t, r)
	if !s.DryRun || s.Total.Replayed != 2 || s.Total.Skipped != 1 || s.Filter == nil || s.Filter.OlderThan != 90*time.Minute || !slices.Equal(s.Filter.Keys, []string{"ORD-1", "ORD-2"}) || !strings.HasPrefix(s.RunID, "dlq-") {
		t.Fatalf("summary = %+v", s)
	}
	if !strings.Contains(r.stdout, `"olderThan": "1h30m0s"`) || f.visible(f.source) != 0 || f.visible(f.dlq) != 3 {
		t.Fatalf("a dry run moved something:\n%s", r.stdout)
	}

	// Not a terminal and no --yes: refused, nothing moved.
	f.run("replay", "--key", "ORD-1").want(t, exitRefused, "stdin is not a terminal — pass --yes")
	// A terminal: the question, declined then accepted.
	f.stdinTTY, f.stdin = true, "n\n"
	f.run("replay", "--key", "ORD-1").want(t, exitRefused, "Replay the default cap messages from "+f.dlq, "[y/N]", "replay not confirmed")
	if f.visible(f.source) != 0 {
		t.Fatal("a declined replay moved messages")
	}
	f.stdin = "y\n"
	r = f.run("replay", "--key", "ORD-1", "--max", "5")
	r.want(t, exitOK, "Replay at most 5 messages")
	for _, line := range []string{"Replay run dlq-", "Gates: health=skipped refill=open canary=open",
		"ROUTE   DEPTH  EXAMINED  REPLAYED  PARKED  DELAYED  SKIPPED  DEFERRED  BLOCKED  RECOVERED  APPLIED  ERRORS  STOP",
		"orders  3      3         1         0       0        2        0         0        0          0        0       drained"} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("table lacks %q:\n%s", line, r.stdout)
		}
	}
	if f.visible(f.source) != 1 || f.visible(f.dlq) != 2 {
		t.Fatalf("source %d, dlq %d", f.visible(f.source), f.visible(f.dlq))
	}

	// The policy comes from the replay function: with MAX_REPLAYS=2, ORD-2
	// (replayed twice) is parked.
	f.env["MAX_REPLAYS"] = "2"
	f.stdinTTY = false
	r = f.run("--json", "replay", "--yes", "--key", "ORD-2")
	r.want(t, exitOK)
	if s := decode[replay.Summary](t, r); s.Total.Parked[replay.ReasonReplayExhausted] != 1 || s.Routes[0].Route != "orders" || s.DryRun {
		t.Fatalf("summary = %+v", s)
	}
	runs, err := f.ledger.Runs(t.Context(), 10)
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs in the ledger, want 2 (dry runs write none): %v", len(runs), err)
	}
}

func TestReplayFunctionConfig(t *testing.T) {
	f := newFixture(t)
	f.envErr = errAccessDenied
	f.run("replay", "--dry-run").want(t, exitError, "read the configuration of replay function replay-fn (lambda:GetFunctionConfiguration)", `--replay-function ""`)
	// Without a function: the engine's defaults (5 minute backoff base: a
	// message dead-lettered two hours ago is due).
	f.deadLetters()
	r := f.run("--json", "replay", "--dry-run", "--replay-function", "")
	r.want(t, exitOK)
	if s := decode[replay.Summary](t, r); s.Total.Replayed != 3 {
		t.Fatalf("summary = %+v", s)
	}
	f.envErr = nil
	f.env["MAX_REPLAYS"] = "0"
	f.run("replay", "--dry-run").want(t, exitError, "the configuration of replay function replay-fn with the flags", "MAX_REPLAYS=0")
}

type accessDenied struct{}

func (accessDenied) Error() string { return "AccessDeniedException: not authorized" }

var errAccessDenied error = accessDenied{}

func TestReplayExitCodes(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	// A closed health gate holds everything: exit 4, the summary printed.
	r := f.run("--json", "replay", "--dry-run", "--health-url", "http://127.0.0.1:1")
	r.want(t, exitIncomplete, "closed gates held every route (health=closed")
	if s := decode[replay.Summary](t, r); s.Gates[0].Decision != replay.GateClosed || s.Total.Replayed != 0 {
		t.Fatalf("summary = %+v", s)
	}
	// Sends fail: errors, exit 4.
	f.q.EntryFault = func(op, _ string, _ types.Message) error {
		if op == "SendMessageBatch" {
			return errAccessDenied
		}
		return nil
	}
	r = f.run("--json", "replay", "--yes")
	r.want(t, exitIncomplete, "3 message(s) failed")
	if s := decode[replay.Summary](t, r); s.Total.Errors != 3 {
		t.Fatalf("summary = %+v", s)
	}
}

func TestReplayTo(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	fifo := f.queue("retry.fifo", nil)
	f.run("replay", "--yes", "--to", fifo).want(t, exitUsage, "--to "+fifo+" is a FIFO queue but "+f.dlq+" is a standard queue")
	f.run("replay", "--yes", "--to", f.dlq+"-missing").want(t, exitError, "--to: read the attributes of queue")
	other := f.queue("retry", nil)
	r := f.run("--json", "replay", "--yes", "--to", other, "--key", "ORD-1")
	r.want(t, exitOK)
	if f.visible(other) != 1 || f.visible(f.source) != 0 {
		t.Fatalf("other %d, source %d", f.visible(other), f.visible(f.source))
	}
}

// Parked messages come back with --from parking --reset-count: the count
// restarts, and the run has its own route name.
func TestReplayFromParking(t *testing.T) {
	f := newFixture(t)
	f.send(f.parking, order("ORD-P"), &replay.Metadata{ReplayCount: 3, OriginalMessageID: "m-p", Reason: replay.ReasonReplayExhausted, FirstDeadLetteredAt: f.clock.Now()}, nil)
	f.clock.Advance(time.Hour)
	r := f.run("--json", "replay", "--yes", "--from", "parking", "--reset-count", "--reason", replay.ReasonReplayExhausted)
	r.want(t, exitOK)
	s := decode[replay.Summary](t, r)
	if s.Total.Replayed != 1 || s.Routes[0].Route != "orders/parking" {
		t.Fatalf("summary = %+v", s)
	}
	msgs := f.q.Messages(f.source)
	meta, _, _, err := replay.Read(msgs[0].MessageAttributes)
	if err != nil || len(msgs) != 1 || meta.ReplayCount != 1 || meta.ResetAt.IsZero() || meta.OriginalMessageID != "m-p" {
		t.Fatalf("source: %d messages, meta %+v, err %v", len(msgs), meta, err)
	}
	if f.visible(f.parking) != 0 {
		t.Fatal("the parked message is still in the parking queue")
	}
}

// A bar on a terminal; elsewhere one line per route.
func TestProgressBarOnlyOnATerminal(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	r := f.run("replay", "--dry-run")
	r.want(t, exitOK)
	if r.stderr != "route orders: examined 3 of 3 (the DLQ's depth at the start); replayed 3, parked 0, delayed 0, errors 0\n" {
		t.Fatalf("stderr is not a terminal: want one line for the route, got %q", r.stderr)
	}
	f.stderrTTY = true
	r = f.run("replay", "--dry-run")
	r.want(t, exitOK)
	if !strings.Contains(r.stderr, "replay orders") || !strings.Contains(r.stderr, "3/3") {
		t.Fatalf("no progress bar on a terminal: %q", r.stderr)
	}
}

func TestAudit(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	f.run("replay", "--yes", "--key", "ORD-1").want(t, exitOK)
	f.items.put("invoice#ORD-1", "COMPLETED", "INV-0001", f.clock.Now().Add(24*time.Hour))

	for _, flag := range []string{"--key", "--order"} { // --order: the alias of --key
		r := f.run("--json", "audit", flag, "ORD-1")
		r.want(t, exitOK)
		a := decode[keyAudit](t, r)
		if a.Key != "ORD-1" || a.HistoryKey != "order#ORD-1" || len(a.History) != 1 || a.History[0].State != record.Sent || a.History[0].ReplayCount != 1 ||
			a.History[0].Key != "ORD-1" || !strings.HasPrefix(a.History[0].RunID, "dlq-") {
			t.Fatalf("audit %s = %+v", flag, a)
		}
		if c := a.Completion; !c.Found || !c.Completed || c.Result != "INV-0001" || c.Key != "invoice#ORD-1" {
			t.Fatalf("completion = %+v", c)
		}
	}
	r := f.run("audit", "--key", "ORD-1")
	r.want(t, exitOK)
	for _, s := range []string{"Key ORD-1 (ledger order#ORD-1)", "SENT (replayed)  1", "Completed: result INV-0001 (idempotency record invoice#ORD-1, COMPLETED)."} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("table lacks %q:\n%s", s, r.stdout)
		}
	}
	r = f.run("audit", "--key", "ORD-9", "--consumer", "billing")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "No ledger records") || !strings.Contains(r.stdout, "Not completed: no idempotency record billing#ORD-9.") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	// Without --consumer, the scope is the lane's: the replay function's
	// CONSUMER_NAME.
	f.env["CONSUMER_NAME"] = "shipments"
	r = f.run("audit", "--key", "ORD-9")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "Not completed: no idempotency record shipments#ORD-9.") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	f.run("audit", "--key", "ORD-1", "--order", "ORD-1").want(t, exitUsage, "none of the others")

	r = f.run("--json", "audit", "--runs", "5")
	r.want(t, exitOK)
	if runs := decode[[]replay.Summary](t, r); len(runs) != 1 || runs[0].Total.Replayed != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	r = f.run("audit")
	r.want(t, exitOK)
	for _, s := range []string{"STARTED", "RUN", "GATES", "health=skipped refill=open canary=open", "  no   "} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("table lacks %q:\n%s", s, r.stdout)
		}
	}
}

// A lane keyed by another field than the sample's: dlq takes the key
// expression from the replay function's route, for --key, peek and the
// canary, and the consumer scope from its CONSUMER_NAME.
func TestLaneKeyedByItsOwnExpression(t *testing.T) {
	f := newFixture(t)
	f.routes(replay.Route{Key: "shipment.id", Records: true})
	f.env["CONSUMER_NAME"] = "shipments"
	shipment := func(id string) string { return fmt.Sprintf(`{"shipment":{"id":%q},"orderId":"ORD-%s"}`, id, id) }
	f.send(f.dlq, shipment("S-1"), nil, nil)
	f.send(f.dlq, shipment("S-2"), nil, nil)
	f.clock.Advance(2 * time.Hour)

	r := f.run("--json", "peek")
	r.want(t, exitOK)
	var keys []string
	for _, m := range decode[peekReport](t, r).Messages {
		keys = append(keys, m.Key)
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{"S-1", "S-2"}) {
		t.Fatalf("peeked keys %v, want S-1 and S-2 (the route's key, not the orderId)", keys)
	}

	r = f.run("--json", "replay", "--yes", "--key", "S-1")
	r.want(t, exitOK)
	if s := decode[replay.Summary](t, r); s.Total.Replayed != 1 || s.Total.Skipped != 1 || !slices.Equal(s.Routes[0].ReplayedKeys, []string{"S-1"}) {
		t.Fatalf("summary = %+v", s)
	}
	r = f.run("--json", "audit", "--key", "S-1")
	r.want(t, exitOK)
	if a := decode[keyAudit](t, r); len(a.History) != 1 || a.History[0].State != record.Sent || a.Completion.Key != "shipments#S-1" {
		t.Fatalf("audit = %+v", a)
	}
	// An orderId names nothing on this lane.
	r = f.run("--json", "replay", "--yes", "--dry-run", "--key", "ORD-S-2")
	r.want(t, exitOK)
	if s := decode[replay.Summary](t, r); s.Total.Replayed != 0 || s.Total.Skipped != 1 {
		t.Fatalf("summary = %+v", s)
	}
}

// A lane whose consumer writes no completion records: the run reads none
// and its canary gate says so.
func TestLaneWithoutRecords(t *testing.T) {
	f := newFixture(t)
	f.routes(replay.Route{Key: "orderId"})
	f.deadLetters()
	r := f.run("replay", "--yes", "--key", "ORD-1")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "canary=skipped") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	runs, err := f.ledger.Runs(t.Context(), 1)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	if g := runs[0].Routes[0].Gates[1]; g.Name != replay.GateCanary || g.Decision != replay.GateSkipped || g.Detail != "the lane's consumer writes no completion records" {
		t.Fatalf("canary gate = %+v", g)
	}
}

// --key needs the lane's key expression: without one no message has a key.
func TestKeyNeedsTheLanesKeyExpression(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	f.run("replay", "--yes", "--replay-function", "", "--key", "ORD-1").want(t, exitUsage, "--key: the lane's route names no key expression")
	f.routes(replay.Route{})
	f.run("replay", "--yes", "--order", "ORD-1").want(t, exitUsage, "--key: the lane's route names no key expression")
	if f.visible(f.dlq) != 3 {
		t.Fatal("a refused run moved messages")
	}
}

// inspect shows each route as the latest run that read it left it: a route
// whose consumer consumes its replays without recording them is reported
// with what to check, in the table and in --json.
func TestInspectShowsRoutesWithMissingRecords(t *testing.T) {
	f := newFixture(t)
	f.deadLetters()
	detail := `records missing: ... consumer "invoice" under key expression "orderId" ...`
	older := replay.Summary{RunID: "run-1", StartedAt: f.clock.Now().Add(-time.Hour), Routes: []replay.RouteSummary{
		{Route: "orders", Gates: []replay.Gate{{Name: replay.GateCanary, Decision: replay.GateLimited, Limit: 5}}, BreakerSignal: replay.SignalCompletions},
		{Route: "refunds", Gates: []replay.Gate{{Name: replay.GateCanary, Decision: replay.GateSkipped}}, BreakerSignal: replay.SignalDLQ, Breaker: &replay.Breaker{Open: true}},
	}}
	latest := replay.Summary{RunID: "run-2", StartedAt: f.clock.Now(), Gates: []replay.Gate{{Name: replay.GateHealth, Decision: replay.GateOpen}}, Routes: []replay.RouteSummary{
		{Route: "orders", Gates: []replay.Gate{{Name: replay.GateCanary, Decision: replay.GateSkipped}}, BreakerSignal: replay.SignalDLQ, RecordsMissing: true, RecordsMissingDetail: detail},
		{Route: "refunds"}, // held before reading: not the route's state
	}}
	for _, s := range []replay.Summary{older, latest} {
		if err := f.ledger.PutRun(t.Context(), s, f.clock.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	r := f.run("--json", "inspect")
	r.want(t, exitOK)
	rep := decode[inspectReport](t, r)
	want := []routeState{
		{Route: "orders", RunID: "run-2", StartedAt: latest.StartedAt, Gates: append(latest.Gates, latest.Routes[0].Gates...), BreakerSignal: replay.SignalDLQ, RecordsMissing: true, Detail: detail},
		{Route: "refunds", RunID: "run-1", StartedAt: older.StartedAt, Gates: older.Routes[1].Gates, BreakerSignal: replay.SignalDLQ, BreakerOpen: true},
	}
	if got, _ := json.Marshal(rep.Routes); string(got) != string(must(json.Marshal(want))) {
		t.Fatalf("routes = %s\nwant     %s", got, must(json.Marshal(want)))
	}
	r = f.run("inspect")
	r.want(t, exitOK)
	for _, line := range []string{
		"ROUTE    LAST RUN",
		"orders   " + latest.StartedAt.Format(time.RFC3339) + "  health=open canary=skipped  closed (dlq)",
		"MISSING",
		"refunds  " + older.StartedAt.Format(time.RFC3339) + "  canary=skipped              open (dlq)",
		"Route orders: " + detail,
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("inspect lacks %q:\n%s", line, r.stdout)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A lane keyed by ARNs or URLs: --key takes a key past the ledger's
// 128-byte bound and replays its message (issue 30: it was refused, so an
// operator could not target it).
func TestReplayALongKey(t *testing.T) {
	f := newFixture(t)
	long := "arn:aws:states:us-east-1:123456789012:execution:" + strings.Repeat("shipment-flow-", 8) + ":ORD-LONG"
	f.send(f.dlq, order(long), nil, nil)
	f.send(f.dlq, order("ORD-SHORT"), nil, nil)
	f.clock.Advance(2 * time.Hour)
	r := f.run("--json", "replay", "--yes", "--key", long)
	r.want(t, exitOK)
	if s := decode[replay.Summary](t, r); s.Total.Replayed != 1 || s.Total.Skipped != 1 || f.visible(f.source) != 1 {
		t.Fatalf("summary %+v, source %d: want the long key's message replayed alone", s.Total, f.visible(f.source))
	}
}
