//go:build e2e

package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/settings"
)

// TestAnOutageTheProbeDoesNotSee shows the canary gate and the breaker on
// the payments lane, keyed by its own expression (paymentId), on the
// deployed stack. Every account whose payments are in the DLQ is frozen:
// every replay fails, and nothing probes the ledger (the lane has no health
// gate), so only the canary and the breaker stand between the outage and
// the messages' replay budgets. The outage lasts MAX_REPLAYS failed replays
// of every message, after which a replay budget that counted them all would
// park every payment. It checks, from the replay function's run summaries
// and the queues: the first run replays every head (each account's first
// payment); the next run, seeing them back in the DLQ with none of their
// keys completed, opens the breaker and replays nothing; the runs after it
// replay at most the canary (a probe), and each failed probe is given back
// to its messages, so that no payment spends more than the first run's
// replay and none is parked; after the thaw a probe brings the heads back,
// every payment is posted once and in its account's order, and the next
// run closes the breaker.
//
// The lane holds its groups (GROUP_ORDER hold, package hold): an account's
// first payment fails and holds the account, its second waits behind the
// hold, so only the heads dead-letter, only they are replayed and probed,
// and the second payments are posted after them once they are applied.
func TestAnOutageTheProbeDoesNotSee(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	pay := func(acct string, n int) string { return fmt.Sprintf("PAY-%s-%d", acct, n) }
	accounts := []string{"O-" + run, "P-" + run}
	var ids, heads []string // every payment, in send order; the first of each account
	for _, acct := range accounts {
		ids = append(ids, pay(acct, 1), pay(acct, 2))
		heads = append(heads, pay(acct, 1))
	}
	n := len(heads) // the dead letters: the heads, the second payments held behind them
	cfg := s.replaySettings(t)
	if n > cfg.canaryLimit {
		t.Fatalf("CANARY_LIMIT is %d: a probe would not reach the %d heads", cfg.canaryLimit, n)
	}
	fn := s.lane(t, settings.OutputReplayFunctionName)

	// This test's replay runs are its own.
	s.schedule(t, false)
	t.Cleanup(func() { s.schedule(t, true) })
	eventually(t, 60*time.Second, "the lane's queues empty before the outage", func() (bool, string) {
		src, dlq := s.depth(t, settings.OutputSourceQueueURL), s.depth(t, settings.OutputDeadLetterQueueURL)
		return src == 0 && dlq == 0, fmt.Sprintf("source %d, DLQ %d", src, dlq)
	})
	parked := s.depth(t, settings.OutputParkingQueueURL)

	// The outage: every account of the DLQ's payments is frozen.
	for _, acct := range accounts {
		if err := s.ledger.Freeze(ctx, acct, true); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.ledger.Freeze(ctx, acct, false) })
	}
	for _, acct := range accounts {
		// One batch per account: the first payment fails and holds the
		// account, the second is held behind it.
		s.sendBatch(t, acct, paymentBody(pay(acct, 1), acct, "1.00"), paymentBody(pay(acct, 2), acct, "2.00"))
	}
	back := func(what string) {
		t.Helper()
		eventually(t, 4*time.Minute, what, func() (bool, string) {
			src, dlq := s.depth(t, settings.OutputSourceQueueURL), s.depth(t, settings.OutputDeadLetterQueueURL)
			return src == 0 && dlq == n, fmt.Sprintf("source %d, DLQ %d (want 0, %d)", src, dlq, n)
		})
	}
	back("the payments dead-lettered")

	// invoke runs the replay once each of the DLQ's dead letters (dead of
	// them) is due, so that no group is split by a backoff, and checks what
	// holds for every run: nothing parked, nothing failed, the health gate
	// not closed, the breaker on the completion records.
	invoke := func(dead int) routeRun {
		t.Helper()
		s.dueDeadLetters(t, dead, cfg.backoffMax)
		sum := invokeReplay(t, s, fn)
		if len(sum.Routes) != 1 {
			t.Fatalf("run %s: %d routes, want the lane's one", sum.RunID, len(sum.Routes))
		}
		rs := sum.Routes[0]
		t.Logf("run %s: replayed %d, canary %s, probe %t, breaker %+v", sum.RunID, rs.Replayed, gate(rs.Gates, replay.GateCanary).Decision, rs.Probe, rs.Breaker)
		if g := gate(sum.Gates, replay.GateHealth); g.Decision == replay.GateClosed {
			t.Errorf("run %s: the health gate closed (%s): the outage is one it does not see", sum.RunID, g.Detail)
		}
		if p := rs.ParkedTotal(); p != 0 {
			t.Errorf("run %s parked %d messages (%v)", sum.RunID, p, rs.Parked)
		}
		if rs.Errors != 0 || rs.Error != "" || rs.RecordsMissing {
			t.Errorf("run %s: errors %d (%q), records missing %t", sum.RunID, rs.Errors, rs.Error, rs.RecordsMissing)
		}
		if rs.BreakerSignal != replay.SignalCompletions {
			t.Errorf("run %s: breaker signal %q, want %q", sum.RunID, rs.BreakerSignal, replay.SignalCompletions)
		}
		if d := s.depth(t, settings.OutputParkingQueueURL); d != parked {
			t.Errorf("after run %s the parking queue holds %d messages, want %d", sum.RunID, d, parked)
		}
		return routeRun{id: sum.RunID, RouteSummary: rs}
	}
	// probe invokes the replay until a run probes the open breaker; the
	// runs before it must replay nothing.
	probe := func(what string) routeRun {
		t.Helper()
		for {
			rs := invoke(n)
			canary := gate(rs.Gates, replay.GateCanary)
			if !rs.Probe {
				if rs.Replayed != 0 || canary.Decision != replay.GateClosed || rs.Breaker == nil || !rs.Breaker.Open {
					t.Fatalf("%s: run %s replayed %d, canary %s (%s), breaker %+v: want nothing replayed before the probe",
						what, rs.id, rs.Replayed, canary.Decision, canary.Detail, rs.Breaker)
				}
				wait := time.Until(rs.Breaker.ProbeAt)
				eventually(t, wait+10*time.Second, "the probe due", func() (bool, string) {
					return !time.Now().Before(rs.Breaker.ProbeAt), "probe at " + rs.Breaker.ProbeAt.String()
				})
				continue
			}
			if canary.Decision != replay.GateLimited || canary.Limit != cfg.canaryLimit || rs.Replayed > canary.Limit {
				t.Fatalf("%s: probe %s replayed %d, canary %s limit %d (%s): want at most the canary (%d)",
					what, rs.id, rs.Replayed, canary.Decision, canary.Limit, canary.Detail, cfg.canaryLimit)
			}
			if rs.Replayed != n || !sameKeys(rs.ReplayedKeys, heads) {
				t.Fatalf("%s: probe %s replayed %d, keys %q: want every head (%q), the held payments not", what, rs.id, rs.Replayed, rs.ReplayedKeys, heads)
			}
			return rs
		}
	}
	// spent checks each dead letter's replay budget: one replay counted
	// (the first run's), refunds given back, sent by run.
	spent := func(refunds int, run string) {
		t.Helper()
		dls := s.deadLetters(t, n)
		for _, d := range dls {
			if !d.found || d.meta.ReplayCount != 1 || d.meta.Refunds != refunds || d.meta.RunID != run {
				t.Errorf("dead letter %s (group %s): metadata %t, replays %d, refunds %d, run %s; want 1 replay, %d refunds, run %s",
					d.id, d.group, d.found, d.meta.ReplayCount, d.meta.Refunds, d.meta.RunID, refunds, run)
			}
		}
		if len(dls) != n {
			t.Errorf("read %d dead letters, want %d", len(dls), n)
		}
	}

	first := invoke(n)
	if canary := gate(first.Gates, replay.GateCanary); canary.Decision != replay.GateOpen || first.Replayed != n || first.Delayed != 0 || !sameKeys(first.ReplayedKeys, heads) {
		t.Fatalf("first run %s: canary %s (%s), replayed %d, delayed %d, keys %q; want the canary open and every head (%q) replayed",
			first.id, canary.Decision, canary.Detail, first.Replayed, first.Delayed, first.ReplayedKeys, heads)
	}
	back("the first run's replays back in the DLQ")
	spent(0, first.id)

	trip := invoke(n)
	canary := gate(trip.Gates, replay.GateCanary)
	if trip.Replayed != 0 || canary.Decision != replay.GateClosed || trip.Breaker == nil || !trip.Breaker.Open || !slices.Contains(trip.Breaker.FailedRuns, first.id) {
		t.Fatalf("run %s after the first run's replays came back: replayed %d, canary %s (%s), breaker %+v; want nothing replayed and the breaker open on run %s",
			trip.id, trip.Replayed, canary.Decision, canary.Detail, trip.Breaker, first.id)
	}

	// The outage outlasts MAX_REPLAYS replays of every message: the first
	// run's and MAX_REPLAYS-1 failed probes, each given back.
	for i := 1; i < cfg.maxReplays; i++ {
		p := probe(fmt.Sprintf("failed probe %d", i))
		back(fmt.Sprintf("probe %d's replays back in the DLQ", i))
		spent(i, p.id)
	}

	// Recovery.
	for _, acct := range accounts {
		if err := s.ledger.Freeze(ctx, acct, false); err != nil {
			t.Fatal(err)
		}
	}
	recovered := probe("the probe after the thaw")
	eventually(t, 2*time.Minute, "every payment posted", func() (bool, string) {
		a, b := s.entries(t, accounts[0]), s.entries(t, accounts[1])
		src, dlq := s.depth(t, settings.OutputSourceQueueURL), s.depth(t, settings.OutputDeadLetterQueueURL)
		return slices.Equal(a, want(ids[0], ids[1])) && slices.Equal(b, want(ids[2], ids[3])) && src == 0 && dlq == 0,
			fmt.Sprintf("%s %q, %s %q, source %d, DLQ %d", accounts[0], a, accounts[1], b, src, dlq)
	})
	closed := invoke(0)
	canary = gate(closed.Gates, replay.GateCanary)
	if closed.Breaker == nil || closed.Breaker.Open || canary.Decision != replay.GateOpen || closed.Replayed != 0 {
		t.Errorf("run %s after probe %s posted every payment: breaker %+v, canary %s (%s), replayed %d; want the breaker closed, the canary open, nothing to replay",
			closed.id, recovered.id, closed.Breaker, canary.Decision, canary.Detail, closed.Replayed)
	}
	for i, acct := range accounts {
		if got := s.entries(t, acct); !slices.Equal(got, want(ids[2*i], ids[2*i+1])) {
			t.Errorf("account %s: %q, want %q", acct, got, want(ids[2*i], ids[2*i+1]))
		}
	}
}

// routeRun is the lane's route in the summary of run id.
type routeRun struct {
	id string
	replay.RouteSummary
}

// replayConfig is what the test reads of the lane's replay function's
// settings.
type replayConfig struct {
	maxReplays  int
	canaryLimit int
	backoffMax  time.Duration
}

// replaySettings reads the deployed replay function's environment through
// homing's setting declarations (their defaults where it sets none).
func (s *stack) replaySettings(t *testing.T) replayConfig {
	t.Helper()
	fn := s.lane(t, settings.OutputReplayFunctionName)
	out, err := s.lambda.GetFunctionConfiguration(context.Background(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(fn)})
	if err != nil {
		t.Fatalf("configuration of %s: %v", fn, err)
	}
	var env map[string]string
	if out.Environment != nil {
		env = out.Environment.Variables
	}
	r := settings.NewReader(func(k string) string { return env[k] })
	c := replayConfig{maxReplays: r.Int(settings.MaxReplays), canaryLimit: r.Int(settings.CanaryLimit), backoffMax: r.Duration(settings.BackoffMax)}
	if err := r.Err(); err != nil {
		t.Fatalf("settings of %s: %v", fn, err)
	}
	return c
}

// sendBatch sends bodies to the source queue in group, in order, in one
// call.
func (s *stack) sendBatch(t *testing.T, group string, bodies ...string) {
	t.Helper()
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.lane(t, settings.OutputSourceQueueURL))}
	for i, b := range bodies {
		in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(fmt.Sprintf("%s-%d-%d", group, i, time.Now().UnixNano()))})
	}
	out, err := s.sqs.SendMessageBatch(context.Background(), in)
	if err != nil {
		t.Fatalf("send to the source queue: %v", err)
	}
	if len(out.Failed) > 0 {
		t.Fatalf("send to the source queue: %d failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
	}
}

// deadLetter is what the test reads of a message in the DLQ.
type deadLetter struct {
	id     string
	group  string
	sentAt time.Time
	meta   replay.Metadata // the engine's metadata, when found
	found  bool
}

// deadLetters reads up to n messages of the DLQ without taking them: they
// are received (hidden for 10 s should the test stop meanwhile), so that
// each receive brings others, then made visible again at once.
func (s *stack) deadLetters(t *testing.T, n int) []deadLetter {
	t.Helper()
	ctx := context.Background()
	url := aws.String(s.lane(t, settings.OutputDeadLetterQueueURL))
	receipts := map[string]*string{} // the latest of each message
	var out []deadLetter
	for empty := 0; len(out) < n && empty < 3; {
		got, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 10,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatalf("read the DLQ: %v", err)
		}
		if len(got.Messages) == 0 {
			empty++
		}
		for _, m := range got.Messages {
			id := aws.ToString(m.MessageId)
			_, seen := receipts[id]
			receipts[id] = m.ReceiptHandle
			if seen {
				continue
			}
			d := deadLetter{id: id, group: m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]}
			if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
				d.sentAt = time.UnixMilli(ms)
			}
			meta, _, found, err := replay.Read(m.MessageAttributes)
			if err != nil {
				t.Errorf("dead letter %s: metadata: %v", id, err)
			}
			d.meta, d.found = meta, found
			out = append(out, d)
		}
	}
	for _, r := range receipts {
		if _, err := s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: r, VisibilityTimeout: 0}); err != nil {
			t.Fatalf("release a dead letter: %v", err)
		}
	}
	return out
}

// dueDeadLetters waits until each of the n messages of the DLQ is due for
// a replay whatever its backoff (at most backoffMax after its last replay,
// or after it reached the DLQ), so that a run replays all of them or none.
func (s *stack) dueDeadLetters(t *testing.T, n int, backoffMax time.Duration) {
	t.Helper()
	var due time.Time
	dls := s.deadLetters(t, n)
	for _, d := range dls {
		ref := d.sentAt
		if d.found && !d.meta.LastReplayAt.IsZero() {
			ref = d.meta.LastReplayAt
		}
		if at := ref.Add(backoffMax); at.After(due) {
			due = at
		}
	}
	if len(dls) != n {
		t.Fatalf("read %d dead letters, want %d", len(dls), n)
	}
	eventually(t, time.Until(due)+10*time.Second, "every dead letter due", func() (bool, string) {
		return !time.Now().Before(due), "due at " + due.String()
	})
}

// gate returns the gate of gs named name (zero when absent).
func gate(gs []replay.Gate, name string) replay.Gate {
	for _, g := range gs {
		if g.Name == name {
			return g
		}
	}
	return replay.Gate{}
}

// sameKeys reports whether got holds the keys of want, in any order.
func sameKeys(got, want []string) bool {
	return len(got) == len(want) && !slices.ContainsFunc(want, func(k string) bool { return !slices.Contains(got, k) })
}
