package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/hold"
	holdrecord "github.com/homingdlq/homing/hold/record"
	"github.com/homingdlq/homing/replay"
)

// fifoLane makes the fixture's lane FIFO, its route's "groups" mode (as
// the construct's Consumer.GroupOrder sets it; "" for none).
func (f *fixture) fifoLane(mode string) {
	f.t.Helper()
	f.dlq = f.queue("ledger-dlq.fifo", nil)
	f.source = f.queue("ledger.fifo", nil)
	f.parking = f.queue("ledger-parking.fifo", nil)
	f.invalid = f.queue("ledger-invalid.fifo", nil)
	f.outputs[outDLQ] = f.dlq
	f.outputs[outSource] = f.source
	f.outputs[outParking] = f.parking
	f.outputs[outInvalid] = f.invalid
	if mode != "" {
		f.outputs[outHold] = "holds" // the construct creates it on a lane that holds its groups
	}
	f.routes(replay.Route{Key: "orderId", Records: true, Groups: mode})
	f.writeOutputs()
}

// holdGroup holds group behind head (parked: parked), with n records
// stored behind it, now.
func (f *fixture) holdGroup(group, head, parked string, n int) hold.Hold {
	f.t.Helper()
	ctx := context.Background()
	h, err := f.memory.Begin(ctx, hold.Hold{Group: group, Head: head, Parked: parked}, f.clock.Now())
	for i := range n {
		if err != nil {
			break
		}
		m := hold.Message{Seq: fmt.Sprintf("%040d", i+1), Record: heldJSON(events.SQSMessage{MessageId: fmt.Sprintf("%s-next-%d", head, i+1), Body: "{}"})}
		h, err = f.memory.Append(ctx, group, m, f.clock.Now())
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

// stored is the hold of group in the fixture's store; ok is false without one.
func (f *fixture) stored(group string) (hold.Hold, bool) {
	f.t.Helper()
	hs, err := f.memory.Holds(context.Background(), []string{group})
	if err != nil {
		f.t.Fatal(err)
	}
	h, ok := hs[group]
	return h, ok
}

// triggers are the groups of the drain triggers in the source queue.
func (f *fixture) triggers() []string {
	var groups []string
	for _, m := range f.q.Messages(f.source) {
		if _, ok := m.MessageAttributes[hold.Attribute]; ok && aws.ToString(m.Body) == hold.TriggerBody {
			groups = append(groups, m.Attributes["MessageGroupId"])
		}
	}
	return groups
}

// threeHolds: g-1 held behind a head still retried, g-2 behind a parked
// head, g-3 draining; held an hour ago, g-2 changed ten minutes ago.
func (f *fixture) threeHolds() {
	f.t.Helper()
	f.holdGroup("g-1", "m-10", "", 1)
	f.holdGroup("g-2", "m-20", "", 2)
	h := f.holdGroup("g-3", "m-30", "", 0)
	h.State = hold.Draining
	if _, err := f.memory.Update(context.Background(), h, f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
	f.clock.Advance(50 * time.Minute)
	h, _ = f.stored("g-2")
	h.Parked = "parked: replay-exhausted"
	if _, err := f.memory.Update(context.Background(), h, f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
	f.clock.Advance(10 * time.Minute)
}

func TestGroups(t *testing.T) {
	f := newFixture(t)
	f.fifoLane("hold")
	f.threeHolds()

	r := f.run("--json", "groups")
	r.want(t, exitOK)
	rep := decode[groupsReport](t, r)
	if rep.Mode != "hold" || len(rep.Groups) != 3 {
		t.Fatalf("report = %+v", rep)
	}
	g1, g2, g3 := rep.Groups[0], rep.Groups[1], rep.Groups[2]
	hourAgo := f.clock.Now().Add(-time.Hour)
	if g1.Group != "g-1" || g1.State != "held" || g1.Head != "m-10" || g1.Parked != "" || g1.Held != 1 || !g1.Since.Equal(hourAgo) {
		t.Errorf("g-1 = %+v", g1)
	}
	if g2.Group != "g-2" || g2.Parked != "parked: replay-exhausted" || g2.Held != 2 || !g2.Updated.Equal(f.clock.Now().Add(-10*time.Minute)) {
		t.Errorf("g-2 = %+v", g2)
	}
	if g3.Group != "g-3" || g3.State != "draining" || g3.Held != 0 {
		t.Errorf("g-3 = %+v", g3)
	}
	for _, field := range []string{`"mode"`, `"groups"`, `"group"`, `"state"`, `"head"`, `"parked"`, `"held"`, `"since"`, `"updated"`} {
		if !strings.Contains(r.stdout, field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
	// The scope is the replay function's CONSUMER_NAME, the table the
	// lane's hold table.
	if len(f.opened) != 1 || f.opened[0] != "holds invoice" {
		t.Errorf("opened the holds of %v, want [holds invoice]", f.opened)
	}

	r = f.run("groups")
	r.want(t, exitOK)
	for _, line := range []string{
		"GROUP  STATE     HEAD  HELD  SINCE     UPDATED    PARKED\n",
		"g-1    held      m-10  1     1h0m ago  1h0m ago",
		"g-2    held      m-20  2     1h0m ago  10m0s ago  parked: replay-exhausted\n",
		"g-3    draining  m-30  0     1h0m ago  1h0m ago",
		"1 group(s) held behind a head that will not come back by itself: dlq groups release GROUP lets one go on without it.",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("table lacks %q:\n%s", line, r.stdout)
		}
	}
	if n := f.callsOf("SendMessageBatch"); n != 0 {
		t.Errorf("listing sent %d message(s)", n)
	}
}

// --consumer names the scope: the replay function is not read.
func TestGroupsConsumerFlag(t *testing.T) {
	f := newFixture(t)
	f.fifoLane("hold")
	f.envErr = fmt.Errorf("the replay function must not be read")
	r := f.run("groups", "--consumer", "ledger")
	r.want(t, exitOK)
	if len(f.opened) != 1 || f.opened[0] != "holds ledger" {
		t.Errorf("opened the holds of %v, want [holds ledger]", f.opened)
	}
	// The route's mode is unknown: the list does not say the lane holds nothing.
	if r.stdout != "No held groups.\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

// A lane without a hold table (its outputs have no HoldTableName) does
// not hold its groups: dlq says so in one line, and opens no holds. With
// --hold-table on a lane whose route does not hold them, the empty list
// says when a lane holds.
func TestGroupsOnALaneWithoutHolds(t *testing.T) {
	f := newFixture(t)
	r := f.run("groups")
	r.want(t, exitError, "dlq: lane orders does not hold its message groups: stack Homing in outputs file "+f.file+" has no output OrdersHoldTableName")
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 || r.stdout != "" {
		t.Errorf("stdout %q, stderr not one line:\n%s", r.stdout, r.stderr)
	}
	if len(f.opened) != 0 {
		t.Errorf("opened the holds of %v", f.opened)
	}
	r = f.run("--hold-table", "holds", "groups")
	r.want(t, exitOK)
	if want := "No held groups (the lane's route does not hold them: only a FIFO lane's does, by the construct's default, hold, or with skip).\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	f.fifoLane("hold")
	if r := f.run("groups"); r.stdout != "No held groups.\n" {
		t.Errorf("stdout %q on a lane that holds its groups", r.stdout)
	}
}

// A lane found by its tags has no outputs, and no tag names its hold
// table: dlq says where to find it rather than that the lane holds
// nothing.
func TestGroupsOnALaneFoundByTags(t *testing.T) {
	f := newFixture(t)
	f.fifoLane("hold")
	f.tagLane()
	r := f.runRaw("--lane", "orders", "groups")
	r.want(t, exitError, "no HoldTableName: lane orders is found by its tags, and no tag names its HoldTableName: dlq finds it only among the lane's stack outputs (--stack, --outputs-file) — pass --hold-table")
	if strings.Contains(r.stderr, "does not hold") {
		t.Errorf("stderr says the lane does not hold its groups: %s", r.stderr)
	}
	f.runRaw("--lane", "orders", "--hold-table", "holds", "groups").want(t, exitOK)
	if len(f.opened) != 1 || f.opened[0] != "holds invoice" {
		t.Errorf("opened the holds of %v, want [holds invoice]", f.opened)
	}
}

func TestGroupsRelease(t *testing.T) {
	f := newFixture(t)
	f.fifoLane("hold")
	f.threeHolds()
	before, _ := f.stored("g-2")

	r := f.run("groups", "release", "g-2", "--yes")
	r.want(t, exitOK)
	want := fmt.Sprintf("Released group g-2 past its head m-20 (parked: replay-exhausted): the hold is draining, a drain trigger went to %s, "+
		"and its 2 held record(s) apply next, in sequence. If the head is applied later, its effect comes after theirs.\n", f.source)
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	after, _ := f.stored("g-2")
	if after.State != hold.Draining || after.Head != "" || after.Parked != before.Parked {
		t.Errorf("hold after release = %+v", after)
	}
	if got := f.triggers(); len(got) != 1 || got[0] != "g-2" {
		t.Errorf("drain triggers for %v, want [g-2]", got)
	}
	if h, _ := f.stored("g-1"); h.State != hold.Held {
		t.Errorf("g-1 = %+v: another group changed", h)
	}

	// Released already: the trigger again, no question asked. SQS drops a
	// copy within five minutes of the first, and takes it after.
	r = f.run("groups", "release", "g-2")
	r.want(t, exitOK)
	if want := "Group g-2 was draining already (released, or its head applied): sent its drain trigger to " + f.source + " again " +
		"(SQS drops it as a copy if the last one went less than five minutes ago).\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if got := f.triggers(); len(got) != 1 {
		t.Errorf("drain triggers for %v, want the first alone", got)
	}
	f.clock.Advance(6 * time.Minute)
	r = f.run("-o", "json", "groups", "release", "g-2")
	r.want(t, exitOK)
	rep := decode[releaseReport](t, r)
	if rep.Group != "g-2" || rep.Was != "draining" || rep.State != "draining" || rep.Head != "" || rep.Held != 2 || rep.TriggerQueue != f.source {
		t.Errorf("report = %+v", rep)
	}
	if got := f.triggers(); len(got) != 2 || got[1] != "g-2" {
		t.Errorf("drain triggers for %v, want two for g-2", got)
	}
}

func TestGroupsReleaseRefused(t *testing.T) {
	f := newFixture(t)
	f.fifoLane("hold")
	f.threeHolds()
	before, _ := f.stored("g-1")

	f.run("groups", "release", "g-9", "--yes").want(t, exitRefused,
		`group "g-9" is not held (no hold in hold table holds (consumer invoice)): nothing to release — dlq groups lists the held groups`)
	f.run("groups", "release", "g-1").want(t, exitRefused, "not releasing group g-1 without confirmation: stdin is not a terminal — pass --yes")
	f.stdinTTY = true
	f.stdin = "n\n"
	r := f.run("groups", "release", "g-1")
	r.want(t, exitRefused, "Release group g-1 past its head m-10 (not parked: still being retried), so that its 1 held record(s) apply next without it? [y/N]",
		"release not confirmed: group g-1 stays held")
	if after, _ := f.stored("g-1"); after != before {
		t.Errorf("hold after a refused release = %+v, want %+v", after, before)
	}
	if got := f.triggers(); len(got) != 0 {
		t.Errorf("drain triggers for %v after refusals", got)
	}
	f.stdin = "y\n"
	f.run("groups", "release", "g-1").want(t, exitOK)
	if after, _ := f.stored("g-1"); after.State != hold.Draining {
		t.Errorf("hold after a confirmed release = %+v", after)
	}
}

// racingStore changes a hold behind dlq's back before its first Update,
// as a consumer storing a record (or a drain) between dlq's read and its
// write would.
type racingStore struct {
	hold.Store
	race func()
}

func (s *racingStore) Update(ctx context.Context, h hold.Hold, now time.Time) (hold.Hold, error) {
	if s.race != nil {
		s.race()
		s.race = nil
	}
	return s.Store.Update(ctx, h, now)
}

func TestGroupsReleaseRaces(t *testing.T) {
	t.Run("a record stored meanwhile: read again, released", func(t *testing.T) {
		f := newFixture(t)
		f.fifoLane("hold")
		f.holdGroup("g-1", "m-10", "parked: replay-exhausted", 1)
		f.holds = &racingStore{Store: f.memory, race: func() {
			m := hold.Message{Seq: fmt.Sprintf("%040d", 9), Record: heldJSON(events.SQSMessage{MessageId: "m-19", Body: "{}"})}
			if _, err := f.memory.Append(context.Background(), "g-1", m, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}}
		f.run("groups", "release", "g-1", "--yes").want(t, exitOK)
		if h, _ := f.stored("g-1"); h.State != hold.Draining {
			t.Errorf("hold = %+v, want draining", h)
		}
	})
	t.Run("another head meanwhile: nothing released", func(t *testing.T) {
		f := newFixture(t)
		f.fifoLane("hold")
		h := f.holdGroup("g-1", "m-10", "parked: replay-exhausted", 1)
		f.holds = &racingStore{Store: f.memory, race: func() {
			h.Head = "m-11"
			h.Parked = ""
			if _, err := f.memory.Update(context.Background(), h, f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}}
		f.run("groups", "release", "g-1", "--yes").want(t, exitError,
			`release group "g-1": the hold changed since it was read (head m-10, held; now head m-11, held): nothing released — look again with dlq groups`)
		if got, _ := f.stored("g-1"); got.State != hold.Held || got.Head != "m-11" {
			t.Errorf("hold = %+v, want held behind m-11", got)
		}
		if got := f.triggers(); len(got) != 0 {
			t.Errorf("drain triggers for %v", got)
		}
	})
}

// A trigger that fails leaves the hold draining and says how to resend it.
func TestGroupsReleaseTriggerFails(t *testing.T) {
	f := newFixture(t)
	f.fifoLane("hold")
	f.holdGroup("g-1", "m-10", "invalid: bad-amount", 1)
	count := f.q.CallFault
	f.q.CallFault = func(op, url string) error {
		if op == "SendMessageBatch" && url == f.source {
			return fmt.Errorf("throttled")
		}
		return count(op, url)
	}
	r := f.run("groups", "release", "g-1", "--yes")
	r.want(t, exitError, `group "g-1" is draining, but hold: send a drain trigger to group "g-1"`, "throttled", "run dlq groups release again to resend the trigger")
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Errorf("stderr is not one line:\n%s", r.stderr)
	}
	if h, _ := f.stored("g-1"); h.State != hold.Draining {
		t.Errorf("hold = %+v, want draining", h)
	}
	f.q.CallFault = count
	f.run("groups", "release", "g-1").want(t, exitOK)
	if got := f.triggers(); len(got) != 1 || got[0] != "g-1" {
		t.Errorf("drain triggers for %v, want [g-1]", got)
	}
}

// dlq replay on a lane that holds its groups tells the hold of a head it
// parks, as the scheduled run does.
func TestReplayTellsTheHoldsOfParkedHeads(t *testing.T) {
	f := newFixture(t)
	f.fifoLane("hold")
	f.holdGroup("acct-1", "m-1", "", 2)
	key, err := replay.SealKey(context.Background(), f.ledger, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	body := order("ORD-1")
	meta := replay.Metadata{ReplayCount: 3, OriginalMessageID: "m-1", FirstDeadLetteredAt: f.clock.Now()}
	// A head's replay carries the name its hold knows it by.
	attrs, err := replay.Attributes(map[string]sqstypes.MessageAttributeValue{hold.Attribute: hold.OriginAttribute("m-1")}, meta.Sealed(key, body, f.source))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.dlq), MessageBody: aws.String(body), MessageAttributes: attrs,
		MessageGroupId: aws.String("acct-1"), MessageDeduplicationId: aws.String("d-1")}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	f.run("replay", "--yes", "--no-health-gate").want(t, exitOK)
	if n := len(f.q.Messages(f.parking)); n != 1 {
		t.Fatalf("%d message(s) parked, want 1", n)
	}
	if h, _ := f.stored("acct-1"); h.State != hold.Held || !strings.HasPrefix(h.Parked, "parked: ") {
		t.Errorf("hold = %+v, want held and parked", h)
	}
	if len(f.opened) == 0 || f.opened[0] != "holds invoice" {
		t.Errorf("opened the holds of %v, want the lane's hold table", f.opened)
	}
}

// dlq replay on a route that holds its groups needs the lane's hold
// table; it refuses to run without it, in one line, rather than leave the
// holds untold. On a route that does not hold them, no hold table is
// needed and none is opened.
func TestReplayHoldTable(t *testing.T) {
	f := newFixture(t)
	f.fifoLane("hold")
	delete(f.outputs, outHold)
	f.writeOutputs()
	r := f.run("replay", "--yes", "--no-health-gate")
	r.want(t, exitError, `dlq: the lane's route holds its message groups (groups "hold"), so the run needs the lane's hold table: no HoldTableName: `+
		"stack Homing in outputs file "+f.file+" has no output OrdersHoldTableName — pass --hold-table")
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Errorf("stderr is not one line:\n%s", r.stderr)
	}
	if n := f.callsOf("ReceiveMessage"); n != 0 {
		t.Errorf("received %d time(s) without a hold table", n)
	}
	// The function's own HOLD_TABLE is not what the run uses: the flag is.
	f.env["HOLD_TABLE"] = "the-function's"
	f.run("--hold-table", "other-holds", "replay", "--yes", "--no-health-gate").want(t, exitOK)
	if len(f.opened) != 1 || f.opened[0] != "other-holds invoice" {
		t.Errorf("opened the holds of %v, want [other-holds invoice]", f.opened)
	}

	f = newFixture(t)
	f.fifoLane("")
	f.env["HOLD_TABLE"] = "holds"
	f.run("replay", "--yes", "--no-health-gate").want(t, exitOK)
	if len(f.opened) != 0 {
		t.Errorf("a route without groups opened the holds of %v", f.opened)
	}
}

// heldJSON is r as a hold keeps it (package record).
func heldJSON(r events.SQSMessage) json.RawMessage {
	m, err := holdrecord.Held(r)
	if err != nil {
		panic(err)
	}
	return m.Record
}
