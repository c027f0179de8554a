package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/parking"
	"github.com/homingdlq/homing/replay"
)

// fifoLane makes the fixture's lane FIFO.
func (f *fixture) fifoLane() {
	f.t.Helper()
	f.dlq = f.queue("ledger-dlq.fifo", nil)
	f.source = f.queue("ledger.fifo", nil)
	f.parking = f.queue("ledger-parking.fifo", nil)
	f.invalid = f.queue("ledger-invalid.fifo", nil)
	f.outputs[outDLQ] = f.dlq
	f.outputs[outSource] = f.source
	f.outputs[outParking] = f.parking
	f.outputs[outInvalid] = f.invalid
	f.routes(replay.Route{Key: "orderId", Records: true})
	f.writeOutputs()
}

// parkGroup parks group behind head for reason, the head in queue
// ("parking" or "invalid"), now, and puts n of its records in the parking
// queue (the head first, when it is there) as the consumer parks them:
// their bodies are "<group>/<i>".
func (f *fixture) parkGroup(group, head, reason, queue string, n int) {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.parks.Park(ctx, fifo.Park{Group: group, Head: head, Reason: reason, Queue: queue, Since: f.clock.Now()}); err != nil {
		f.t.Fatal(err)
	}
	for range n {
		f.parkRecord(group)
	}
}

// parkRecord parks one more record of group, as the consumer does with a
// record of a parked group: in the parking queue, counted.
func (f *fixture) parkRecord(group string) {
	f.t.Helper()
	ctx := context.Background()
	got, err := f.parks.Parked(ctx, []string{group})
	if err != nil {
		f.t.Fatal(err)
	}
	p := got[group]
	body := fmt.Sprintf("%s/%d", group, p.Parked+1)
	id := "m-" + body
	attrs, err := parking.Attributes(nil, id, fifo.ReasonGroupParked, f.clock.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.parking), MessageBody: aws.String(body), MessageAttributes: attrs,
		MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(id)}); err != nil {
		f.t.Fatal(err)
	}
	if err := f.parks.Count(ctx, group, fifo.Count{Parked: 1}); err != nil {
		f.t.Fatal(err)
	}
}

// park is the park of group; ok is false without one.
func (f *fixture) park(group string) (fifo.Park, bool) {
	f.t.Helper()
	got, err := f.parks.Parked(context.Background(), []string{group})
	if err != nil {
		f.t.Fatal(err)
	}
	p, ok := got[group]
	return p, ok
}

// bodies are the bodies in url, in order.
func (f *fixture) bodies(url string) []string {
	var out []string
	for _, m := range f.q.Messages(url) {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}

// applyReleased is the lane's consumer at work on released records: it
// receives what the source holds and applies it in order, counting each
// copy of its park's release round settled, as package batch does. It
// returns the bodies it applied.
func (f *fixture) applyReleased(applied *[]string) func() {
	return func() {
		ctx := context.Background()
		for {
			out, err := f.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.source), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
			if err != nil {
				f.t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				return
			}
			for _, m := range out.Messages {
				group := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
				if p, ok := f.park(group); ok && p.Releasing != "" {
					if n := parking.Released(m.MessageAttributes, aws.ToString(m.Body), p.Releasing); n > 0 {
						if err := f.parks.Count(ctx, group, fifo.Count{Round: p.Releasing, Index: n}); err != nil {
							f.t.Fatal(err)
						}
					}
				}
				*applied = append(*applied, aws.ToString(m.Body))
				if _, err := (releaseQueue{f.q}).DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(f.source), ReceiptHandle: m.ReceiptHandle}); err != nil {
					f.t.Fatal(err)
				}
			}
		}
	}
}

// threeParks: g-1 parked an hour ago behind an expiring head in the
// parking queue with two records behind it; g-2 ten minutes ago behind an
// invalid head, one record behind it; g-3 half released (two of its three
// records sent back, one of them applied).
func (f *fixture) threeParks() {
	f.t.Helper()
	ctx := context.Background()
	f.parkGroup("g-1", "m-10", fifo.ReasonExpiring, "parking", 3)
	f.parkGroup("g-3", "m-30", fifo.ReasonDeliveredTooOften, "parking", 3)
	if err := f.parks.Begin(ctx, "g-3", "round-1", []string{"p-30", "p-31", "p-32"}, []string{"m-30", "m-31", "m-32"}); err != nil {
		f.t.Fatal(err)
	}
	if err := f.parks.Sent(ctx, "g-3", "round-1", 2); err != nil {
		f.t.Fatal(err)
	}
	if err := f.parks.Count(ctx, "g-3", fifo.Count{Round: "round-1", Index: 1}); err != nil {
		f.t.Fatal(err)
	}
	f.clock.Advance(50 * time.Minute)
	f.parkGroup("g-2", "m-20", "invalid: bad-amount", "invalid", 1)
	f.clock.Advance(10 * time.Minute)
}

func TestGroups(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.threeParks()
	// The head of g-3 failed: its failure record, by its message id.
	headFailed := f.clock.Now().Add(-2 * time.Hour)
	f.failure("m-30", "ledger-frozen", "account\x1b[2J is frozen", 5, headFailed, headFailed.Add(time.Hour))

	r := f.run("--json", "groups")
	r.want(t, exitOK)
	rep := decode[groupsReport](t, r)
	if len(rep.Groups) != 3 || rep.FailureRecords != (failureStatus{Read: true, Found: 1}) {
		t.Fatalf("report = %+v", rep)
	}
	if h := rep.Groups[2].HeadFailure; h == nil || h.MessageID != "m-30" || h.Class != "ledger-frozen" || h.Failures != 5 || !h.FirstAt.Equal(headFailed) {
		t.Fatalf("g-3's head failure = %+v", h)
	}
	if rep.Groups[0].HeadFailure != nil || rep.Groups[1].HeadFailure != nil {
		t.Fatalf("heads without records show one: %+v", rep.Groups)
	}
	rep.Groups[2].HeadFailure = nil
	hourAgo := f.clock.Now().Add(-time.Hour)
	want := []parkedGroup{
		{Group: "g-1", Reason: "expiring", Head: "m-10", Queue: "parking", Since: hourAgo, Waiting: 3},
		{Group: "g-2", Reason: "invalid: bad-amount", Head: "m-20", Queue: "invalid", Since: f.clock.Now().Add(-10 * time.Minute), Waiting: 1},
		{Group: "g-3", Reason: "delivered-too-often", Head: "m-30", Queue: "parking", Since: hourAgo, Waiting: 3, Releasing: true, Pending: 1},
	}
	for i, g := range rep.Groups {
		if !g.Since.Equal(want[i].Since) {
			t.Errorf("%s since %v, want %v", g.Group, g.Since, want[i].Since)
		}
		g.Since = want[i].Since
		if g != want[i] {
			t.Errorf("group %d = %+v, want %+v", i, g, want[i])
		}
	}
	for _, field := range []string{`"groups"`, `"group"`, `"reason"`, `"head"`, `"queue"`, `"since"`, `"waiting"`, `"releasing"`, `"pending"`, `"headFailure"`, `"failureRecords"`} {
		if !strings.Contains(r.stdout, field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
	// The parks are read in the lane's ledger table.
	if !slices.Equal(f.opened, []string{"ledger"}) {
		t.Errorf("opened the parks of %v, want [ledger]", f.opened)
	}

	r = f.run("groups")
	r.want(t, exitOK)
	for _, line := range []string{
		"GROUP  REASON               HEAD  HEAD FAILED                 IN       WAITING  SINCE      RELEASE\n",
		"g-1    expiring             m-10  -                           parking  3        1h0m ago   \n",
		"g-2    invalid: bad-amount  m-20  -                           invalid  1        10m0s ago  \n",
		"g-3    delivered-too-often  m-30  ledger-frozen (5 failures)  parking  3        1h0m ago   in progress, 1 pending\n",
		"\n3 parked group(s): dlq groups release GROUP sends one's parked records back to the source, in sequence, and lets it go on.\n",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("table lacks %q:\n%s", line, r.stdout)
		}
	}
	if n := f.callsOf("SendMessageBatch"); n != 7 { // the fixture's parked records
		t.Errorf("listing sent %d message(s)", n-7)
	}
}

func TestGroupsNoneParked(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	r := f.run("groups")
	r.want(t, exitOK)
	if r.stdout != "No parked groups.\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if r := f.run("-o", "json", "groups"); decode[groupsReport](t, r).Groups == nil || !strings.Contains(r.stdout, `"groups": []`) {
		t.Errorf("JSON %s, want an empty list", r.stdout)
	}
}

// A standard lane has no message groups: dlq says so in one line, before
// it reaches AWS.
func TestGroupsOnAStandardLane(t *testing.T) {
	f := newFixture(t)
	f.noAWS = true
	for _, args := range [][]string{{"groups"}, {"groups", "release", "g-1", "--yes"}} {
		r := f.run(args...)
		r.want(t, exitError, "dlq: lane orders is not a FIFO lane: \""+f.source+"\" is a standard queue (stack Homing in outputs file "+f.file+" (output OrdersSourceQueueUrl)), "+
			"and only a FIFO lane's consumer parks message groups")
		if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 || r.stdout != "" {
			t.Errorf("stdout %q, stderr not one line:\n%s", r.stdout, r.stderr)
		}
	}
	if len(f.opened) != 0 {
		t.Errorf("opened the parks of %v", f.opened)
	}
}

// A lane found by its tags: its ledger is the table tagged with its role.
func TestGroupsOnALaneFoundByTags(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.tagLane()
	f.parkGroup("g-1", "m-10", fifo.ReasonExpiring, "parking", 1)
	r := f.runRaw("--lane", "orders", "-o", "json", "groups")
	r.want(t, exitOK)
	if g := decode[groupsReport](t, r).Groups; len(g) != 1 || g[0].Group != "g-1" {
		t.Errorf("groups = %+v", g)
	}
	if !slices.Equal(f.opened, []string{"ledger"}) {
		t.Errorf("opened the parks of %v, want [ledger]", f.opened)
	}
}

func TestGroupsRelease(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.parkGroup("g-1", "m-10", fifo.ReasonDeliveredTooOften, "parking", 3)
	f.parkGroup("g-2", "m-20", fifo.ReasonExpiring, "parking", 2)
	var applied []string
	f.consumer = f.applyReleased(&applied)

	r := f.run("groups", "release", "g-1", "--yes")
	r.want(t, exitOK)
	if want := "Released group g-1: 3 record(s) sent back to " + f.source + ", in sequence, and every record sent back applied; the park is gone and the group goes on.\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if want := []string{"g-1/1", "g-1/2", "g-1/3"}; !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
	if p, ok := f.park("g-1"); ok {
		t.Errorf("park of g-1 = %+v after its release", p)
	}
	if p, _ := f.park("g-2"); p.Releasing != "" || p.Waiting() != 2 {
		t.Errorf("g-2 = %+v: another group changed", p)
	}
	if got, want := f.bodies(f.parking), []string{"g-2/1", "g-2/2"}; !slices.Equal(got, want) {
		t.Errorf("parking queue %v, want %v (the other group's records, visible)", got, want)
	}
	if f.sleeps != 1 {
		t.Errorf("%d wait(s), want 1: the consumer applied the records in the first", f.sleeps)
	}

	// Released already: refused, nothing to do.
	f.run("groups", "release", "g-1", "--yes").want(t, exitRefused, `group "g-1" is not parked (no park in ledger table "ledger"): nothing to release`)
}

// A record parked while a release is under way goes back in a later round,
// after the records of the first: the command loops until it is applied.
func TestGroupsReleaseParkedMeanwhile(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.parkGroup("g-1", "m-10", fifo.ReasonExpiring, "parking", 2)
	var applied []string
	apply := f.applyReleased(&applied)
	f.consumer = func() {
		if f.sleeps == 1 {
			f.parkRecord("g-1") // it arrived without the round: parked behind the others
		}
		apply()
	}
	r := f.run("-o", "json", "groups", "release", "g-1", "--yes")
	r.want(t, exitOK)
	if rep := decode[releaseReport](t, r); !rep.Done || rep.Moved != 3 || rep.Pending != 0 || rep.Park.Waiting != 2 || rep.Source != f.source {
		t.Errorf("report = %+v", rep)
	}
	if want := []string{"g-1/1", "g-1/2", "g-1/3"}; !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
	if _, ok := f.park("g-1"); ok {
		t.Error("g-1 is still parked")
	}
}

// A consumer that has not applied the records when --wait ends: the
// command says the release is in progress (exit 4); run again, it waits
// for them, sending nothing twice.
func TestGroupsReleaseInProgress(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.parkGroup("g-1", "m-10", fifo.ReasonExpiring, "parking", 3)

	r := f.run("groups", "release", "g-1", "--yes", "--wait", "10s")
	r.want(t, exitIncomplete, "dlq: the release of group g-1 is still in progress: run dlq groups release g-1 again (--wait to wait longer)")
	if want := "Releasing group g-1: 3 record(s) sent back to " + f.source + ", in sequence; 3 not applied by the consumer yet. The park ends once they are.\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if f.sleeps != 5 {
		t.Errorf("%d wait(s) of %s in 10s", f.sleeps, releasePoll)
	}
	if p, _ := f.park("g-1"); p.Releasing == "" || p.Sent != 3 || p.Settled != 0 {
		t.Errorf("park = %+v, want a round of 3 records sent back", p)
	}
	if got := f.bodies(f.source); !slices.Equal(got, []string{"g-1/1", "g-1/2", "g-1/3"}) {
		t.Errorf("source %v", got)
	}

	// --wait 0: one step, no wait; the JSON says where it stands.
	r = f.run("-o", "json", "groups", "release", "g-1", "--wait", "0")
	r.want(t, exitIncomplete)
	if rep := decode[releaseReport](t, r); rep.Done || rep.Moved != 0 || rep.Pending != 3 || !rep.Park.Releasing {
		t.Errorf("report = %+v", rep)
	}

	var applied []string
	f.consumer = f.applyReleased(&applied)
	r = f.run("groups", "release", "g-1") // in progress: no question asked
	r.want(t, exitOK)
	if want := "Released group g-1: every record sent back applied; the park is gone and the group goes on.\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if !slices.Equal(applied, []string{"g-1/1", "g-1/2", "g-1/3"}) {
		t.Errorf("applied %v", applied)
	}
}

func TestGroupsReleaseRefused(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.parkGroup("g-1", "m-10", fifo.ReasonExpiring, "parking", 2)
	before, _ := f.park("g-1")

	f.run("groups", "release", "g-9", "--yes").want(t, exitRefused,
		`group "g-9" is not parked (no park in ledger table "ledger"): nothing to release — dlq groups lists the parked groups`)
	f.run("groups", "release", "g-1").want(t, exitRefused, "not releasing group g-1 without confirmation: stdin is not a terminal — pass --yes (or --dry-run)")
	f.stdinTTY = true
	f.stdin = "n\n"
	r := f.run("groups", "release", "g-1")
	r.want(t, exitRefused, "Release group g-1 (parked: expiring), so that its 2 waiting record(s) go back to the source, in sequence, and the group goes on? [y/N]",
		"release not confirmed: group g-1 stays parked")
	if after, _ := f.park("g-1"); !reflect.DeepEqual(after, before) {
		t.Errorf("park after a refused release = %+v, want %+v", after, before)
	}
	if got := f.bodies(f.parking); len(got) != 2 {
		t.Errorf("parking queue %v after refusals", got)
	}
	var applied []string
	f.consumer = f.applyReleased(&applied)
	f.stdin = "y\n"
	f.run("groups", "release", "g-1").want(t, exitOK)
	if _, ok := f.park("g-1"); ok || len(applied) != 2 {
		t.Errorf("after a confirmed release: parked %v, applied %v", ok, applied)
	}
}

// --dry-run shows the park and what a release would do, asks nothing and
// changes nothing.
func TestGroupsReleaseDryRun(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.threeParks()
	before := f.callsOf("SendMessageBatch")

	r := f.run("groups", "release", "g-1", "--dry-run")
	r.want(t, exitOK)
	if want := "Dry run: group g-1 is parked (head m-10 in the parking queue, expiring). A release would send its 3 waiting record(s) back to " + f.source +
		", in sequence, and end the park once the consumer has applied them.\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = f.run("-o", "json", "groups", "release", "g-3", "--dry-run")
	r.want(t, exitOK)
	if rep := decode[releaseReport](t, r); !rep.DryRun || rep.Done || rep.Moved != 0 || rep.Pending != 1 || rep.Park.Group != "g-3" || !rep.Park.Releasing {
		t.Errorf("report = %+v", rep)
	}
	r = f.run("groups", "release", "g-3", "--dry-run")
	if want := "A release would wait for the consumer, then send back any record parked since."; !strings.Contains(r.stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
	}
	if p, _ := f.park("g-1"); p.Releasing != "" || p.Moved != 0 {
		t.Errorf("park after a dry run = %+v", p)
	}
	if n := f.callsOf("SendMessageBatch") - before; n != 0 || f.callsOf("ReceiveMessage") != 0 {
		t.Errorf("a dry run sent %d and received %d time(s)", n, f.callsOf("ReceiveMessage"))
	}
}

// A head in the invalid queue stays there: the group goes on without it,
// which the question and the report say.
func TestGroupsReleaseInvalidHead(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.parkGroup("g-2", "m-20", "invalid: bad-amount", "invalid", 2)
	var applied []string
	f.consumer = f.applyReleased(&applied)
	f.stdinTTY, f.stdin = true, "y\n"
	r := f.run("groups", "release", "g-2")
	r.want(t, exitOK, "Release group g-2 (parked: invalid: bad-amount), so that its 2 waiting record(s) go back to the source, in sequence, and the group goes on "+
		"without its head m-20, which stays in the invalid queue? [y/N]")
	if want := "Its head m-20 stays in the invalid queue (invalid: bad-amount): the group goes on without it.\n"; !strings.HasSuffix(r.stdout, want) {
		t.Errorf("stdout does not end with %q:\n%s", want, r.stdout)
	}
	if !slices.Equal(applied, []string{"g-2/1", "g-2/2"}) {
		t.Errorf("applied %v", applied)
	}
}

// A send that fails stops the release with what it did, in one line; the
// records stay in the parking queue, in order, and a new run finishes it.
func TestGroupsReleaseFails(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.parkGroup("g-1", "m-10", fifo.ReasonExpiring, "parking", 2)
	f.parkGroup("g-2", "m-20", fifo.ReasonExpiring, "parking", 1)
	count := f.q.CallFault
	f.q.CallFault = func(op, url string) error {
		if op == "SendMessageBatch" && url == f.source {
			return fmt.Errorf("throttled")
		}
		return count(op, url)
	}
	r := f.run("groups", "release", "g-1", "--yes")
	r.want(t, exitError, `dlq: release group "g-1" (0 record(s) sent back so far): fifo: send `, "throttled", "— run dlq groups release again")
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 || r.stdout != "" {
		t.Errorf("stdout %q, stderr not one line:\n%s", r.stdout, r.stderr)
	}
	if got := f.q.Messages(f.parking); len(got) != 3 {
		t.Errorf("parking queue holds %d message(s), want 3", len(got))
	}
	// The records the failed step received are hidden for its scan's
	// visibility (fifo.Releaser) until then.
	f.clock.Advance(2 * time.Minute)
	f.q.CallFault = count
	var applied []string
	f.consumer = f.applyReleased(&applied)
	f.run("groups", "release", "g-1", "--yes").want(t, exitOK)
	if !slices.Equal(applied, []string{"g-1/1", "g-1/2"}) {
		t.Errorf("applied %v", applied)
	}
}

// A lane whose replay function's route still says "groups" (a construct
// before issue 29): dlq replay ignores it and replays a FIFO dead letter
// under its group.
func TestReplayOnARouteWithGroups(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.env["REPLAY_ROUTES"] = strings.Replace(f.env["REPLAY_ROUTES"], `"records":true`, `"records":true,"groups":"hold"`, 1)
	if !strings.Contains(f.env["REPLAY_ROUTES"], `"groups":"hold"`) {
		t.Fatalf("REPLAY_ROUTES = %s", f.env["REPLAY_ROUTES"])
	}
	if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.dlq), MessageBody: aws.String(order("ORD-1")),
		MessageGroupId: aws.String("acct-1"), MessageDeduplicationId: aws.String("d-1")}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	f.run("replay", "--yes", "--no-health-gate").want(t, exitOK)
	got := f.q.Messages(f.source)
	if len(got) != 1 || got[0].Attributes["MessageGroupId"] != "acct-1" {
		t.Errorf("source = %+v, want the replay in group acct-1", got)
	}
}

// A record sent back that parks its group again ends the release: the
// command says where the group stands (exit 4), and the record and those
// behind it wait in the parking queue for the next release.
func TestGroupsReleaseParkedAgain(t *testing.T) {
	f := newFixture(t)
	f.fifoLane()
	f.parkGroup("g-1", "m-10", fifo.ReasonExpiring, "parking", 3)
	f.consumer = func() {
		ctx := context.Background()
		out, err := f.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.source), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			p, _ := f.park("g-1")
			c := fifo.Count{Round: p.Releasing, Index: parking.Released(m.MessageAttributes, aws.ToString(m.Body), p.Releasing)}
			if c.Index == 2 { // it dies every time: delivered too often
				c.Stop, c.Head, c.Reason, c.Queue = 2, "m-again", fifo.ReasonDeliveredTooOften, "parking"
			}
			if err := f.parks.Count(ctx, "g-1", c); err != nil {
				t.Fatal(err)
			}
			if _, err := (releaseQueue{f.q}).DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(f.source), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := f.run("groups", "release", "g-1", "--yes")
	r.want(t, exitIncomplete, "dlq: group g-1 parked again behind m-again: see dlq groups, then release it again")
	if want := "Group g-1 parked again: 3 record(s) sent back to " + f.source + ", in sequence, until head m-again went to the parking queue (delivered-too-often). " +
		"The release is over; the records behind it wait in the parking queue.\n"; r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if p, _ := f.park("g-1"); p.Releasing != "" || p.Head != "m-again" || p.Waiting() != 2 {
		t.Errorf("park = %+v, want behind m-again with 2 waiting", p)
	}
	if got := f.bodies(f.parking); !slices.Equal(got, []string{"g-1/2", "g-1/3"}) {
		t.Errorf("parking queue %v", got)
	}
}
