package replaytest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/wait"
)

// The FIFO lock tests' timings: their queues' VisibilityTimeout, how long
// they hide a failing head, and how often they poll. Seconds apart, so that
// a loaded machine's slow calls cannot blur one into the other.
const (
	lockVisibility = 1 * time.Second
	lockHold       = 3 * time.Second
	lockPoll       = 200 * time.Millisecond
)

// groupQueue is a FIFO queue of a lock test, with the harness's clock.
type groupQueue struct {
	queueClient
	url   string
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// newGroupQueue creates a FIFO queue of t's own whose VisibilityTimeout is
// lockVisibility.
func newGroupQueue(t *testing.T, h QueueHarness) groupQueue {
	t.Helper()
	url, _ := h.NewQueueWithAttributes(t, queueName(t, "q.fifo"), map[string]string{
		string(types.QueueAttributeNameVisibilityTimeout): fmt.Sprint(int(lockVisibility / time.Second)),
	})
	g := groupQueue{queueClient: queueClient{q: h.Queue}, url: url, now: h.Now, sleep: h.Sleep}
	if g.now == nil {
		g.now = time.Now
	}
	if g.sleep == nil {
		g.sleep = wait.Sleep
	}
	return g
}

// sendAll sends each body to group, deduplicated by its body.
func (g groupQueue) sendAll(t *testing.T, group string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		g.send(t, g.url, b, group, b, nil)
	}
}

// receiveNow receives up to n messages without waiting (a short poll), with
// every attribute, hidden for visibility (0: the queue's VisibilityTimeout).
func (g groupQueue) receiveNow(t *testing.T, n int32, visibility time.Duration) []types.Message {
	t.Helper()
	out, err := g.q.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(g.url), MaxNumberOfMessages: n, VisibilityTimeout: int32(visibility / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("receive from %s: %v", g.url, err)
	}
	return out.Messages
}

// first receives up to n messages as receiveNow does, polling until a
// receive returns some or lockVisibility has passed; it fails t when none
// came.
func (g groupQueue) first(t *testing.T, n int32, visibility time.Duration) []types.Message {
	t.Helper()
	var got []types.Message
	if !g.poll(t, lockVisibility, func() bool { got = g.receiveNow(t, n, visibility); return len(got) > 0 }) {
		t.Fatalf("nothing received from %s within %s", g.url, lockVisibility)
	}
	return got
}

// poll calls done every lockPoll until it returns true (then poll returns
// true) or within has passed on the harness's clock (false).
func (g groupQueue) poll(t *testing.T, within time.Duration, done func() bool) bool {
	t.Helper()
	deadline := g.now().Add(within)
	for {
		if done() {
			return true
		}
		if !g.now().Before(deadline) {
			return false
		}
		if err := g.sleep(t.Context(), lockPoll); err != nil {
			t.Fatal(err)
		}
	}
}

// hide sets m's visibility timeout to d, as the consumer does to a failing
// head (d > 0) or to retry it at once (0).
func (g groupQueue) hide(t *testing.T, m types.Message, d time.Duration) {
	t.Helper()
	_, err := g.q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(g.url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(d / time.Second),
	})
	if err != nil {
		t.Fatalf("change the visibility of %s to %s: %v", aws.ToString(m.Body), d, err)
	}
}

// drain receives, deleting each message as it comes, until it has want
// messages or lockHold has passed, and returns them in delivery order.
func (g groupQueue) drain(t *testing.T, want int) []types.Message {
	t.Helper()
	var got []types.Message
	g.poll(t, lockHold, func() bool {
		batch := g.receiveNow(t, 10, 0)
		g.deleteAll(t, batch)
		got = append(got, batch...)
		return len(got) >= want
	})
	return got
}

// deleteAll deletes msgs in one call. An entry that fails with
// ReceiptHandleIsInvalid in a call the SDK retried is taken as deleted by
// the lost attempt (where deleting twice fails, QueueFeatures.DeleteAgainSucceeds);
// a message that was not would come back and fail the test's order check.
func (g groupQueue) deleteAll(t *testing.T, msgs []types.Message) {
	t.Helper()
	if len(msgs) == 0 {
		return
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("d", i)), ReceiptHandle: m.ReceiptHandle}
	}
	out, err := g.q.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(g.url), Entries: entries})
	if err != nil {
		t.Fatalf("delete %v: %v", bodies(msgs), err)
	}
	attempts, _ := retry.GetAttemptResults(out.ResultMetadata)
	for _, f := range out.Failed {
		if aws.ToString(f.Code) == "ReceiptHandleIsInvalid" && len(attempts.Results) > 1 {
			t.Logf("delete of entry %s retried (%v first): %s", aws.ToString(f.Id), attempts.Results[0].Err, aws.ToString(f.Code))
			continue
		}
		t.Fatalf("delete of entry %s of %v: %s: %s", aws.ToString(f.Id), bodies(msgs), aws.ToString(f.Code), aws.ToString(f.Message))
	}
}

// inGroup returns the messages of msgs in group.
func inGroup(msgs []types.Message, group string) []types.Message {
	return slices.DeleteFunc(slices.Clone(msgs), func(m types.Message) bool {
		return m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] != group
	})
}

func receiveCount(m types.Message) string {
	return m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]
}

// testFIFOInFlightHeadLocksItsGroup: while a group's head is in flight
// (received alone, not deleted, its visibility not over), receives return
// none of the group's later messages, however many, and other groups'
// messages still come, in order.
func testFIFOInFlightHeadLocksItsGroup(t *testing.T, h QueueHarness) {
	g := newGroupQueue(t, h)
	g.sendAll(t, "g1", "g1-a", "g1-b", "g1-c")
	g.sendAll(t, "g2", "g2-a", "g2-b")
	// Hidden for a minute: in flight for the whole test, also on a slow machine.
	if got := bodies(g.first(t, 1, time.Minute)); !slices.Equal(got, []string{"g1-a"}) {
		t.Fatalf("first receive of one = %v, want [g1-a]", got)
	}
	var others []types.Message
	for i := range 3 {
		got := g.receiveNow(t, 10, time.Minute)
		if locked := inGroup(got, "g1"); len(locked) > 0 {
			t.Fatalf("receive %d while g1-a is in flight: %v, want none of g1", i+1, bodies(got))
		}
		others = append(others, got...)
	}
	if got := bodies(others); !slices.Equal(got, []string{"g2-a", "g2-b"}) {
		t.Fatalf("while g1-a is in flight: %v, want [g2-a g2-b]", got)
	}
}

// testFIFOVisibilityChangeHoldsAndReleasesTheGroup: a received head whose
// visibility is extended keeps its group locked past the queue's
// VisibilityTimeout; set to 0, it comes back at once, first, its receive
// count up by one.
func testFIFOVisibilityChangeHoldsAndReleasesTheGroup(t *testing.T, h QueueHarness) {
	g := newGroupQueue(t, h)
	g.sendAll(t, "g", "g-a", "g-b")
	head := g.first(t, 1, 0)
	if got := bodies(head); !slices.Equal(got, []string{"g-a"}) {
		t.Fatalf("first receive of one = %v, want [g-a]", got)
	}
	g.hide(t, head[0], lockHold)
	extended := g.now()
	// Poll until a VisibilityTimeout past the change, a second short of the
	// hold's end: the lock must outlast the queue's timeout.
	g.poll(t, lockHold-lockVisibility, func() bool {
		if got := g.receiveNow(t, 10, 0); len(got) > 0 {
			t.Fatalf("%v delivered %s after g-a's visibility was extended to %s", bodies(got), g.now().Sub(extended), lockHold)
		}
		return false
	})
	g.hide(t, head[0], 0)
	back := g.first(t, 10, 0)
	if elapsed := g.now().Sub(extended); elapsed >= lockHold {
		t.Fatalf("too slow to tell: g-a came back %s after its extension to %s", elapsed, lockHold)
	}
	if got := bodies(back); got[0] != "g-a" || receiveCount(back[0]) != "2" {
		t.Fatalf("after setting g-a's visibility to 0: %v (receive count %s), want g-a first, received twice", got, receiveCount(back[0]))
	}
}

// testFIFOGroupComesBackHeadFirst: when a head received alone is not
// deleted, its group comes back when its visibility ends, head first with
// its receive count up by one, then its successors in send order; a
// visibility change on the head received again (as the consumer makes
// before running a redelivered record) succeeds and keeps the group locked.
func testFIFOGroupComesBackHeadFirst(t *testing.T, h QueueHarness) {
	g := newGroupQueue(t, h)
	g.sendAll(t, "g", "g-a", "g-b", "g-c")
	if got := bodies(g.first(t, 1, 0)); !slices.Equal(got, []string{"g-a"}) {
		t.Fatalf("first receive of one = %v, want [g-a]", got)
	}
	var back []types.Message
	if !g.poll(t, 2*lockHold, func() bool { back = g.receiveNow(t, 10, 0); return len(back) > 0 }) {
		t.Fatalf("g-a not back within %s; its visibility timeout is %s", 2*lockHold, lockVisibility)
	}
	if got := bodies(back); got[0] != "g-a" || receiveCount(back[0]) != "2" {
		t.Fatalf("after g-a's visibility ended: %v (receive count %s), want g-a first, received twice", got, receiveCount(back[0]))
	}
	g.hide(t, back[0], lockHold)
	if len(back) == 1 {
		if got := g.receiveNow(t, 10, 0); len(got) > 0 {
			t.Fatalf("after extending the redelivered g-a: %v, want nothing", bodies(got))
		}
	}
	g.deleteAll(t, back)
	got := append(back, g.drain(t, 3-len(back))...)
	if !slices.Equal(bodies(got), []string{"g-a", "g-b", "g-c"}) {
		t.Fatalf("the group came back as %v, want [g-a g-b g-c]", bodies(got))
	}
}

// testFIFOHeldHeadKeepsItsGroupLocked: a group's messages received
// together with its head and left to their visibility timeout are not
// delivered while the head, its visibility extended, is in flight; the head
// comes back first, then they follow in send order. A consumer that hides a
// failing head to retry it later relies on it.
func testFIFOHeldHeadKeepsItsGroupLocked(t *testing.T, h QueueHarness) {
	g := newGroupQueue(t, h)
	g.sendAll(t, "g", "g-a", "g-b", "g-c")
	batch := g.first(t, 10, 0)
	if got := bodies(batch); !slices.Equal(got, []string{"g-a", "g-b", "g-c"}) {
		t.Fatalf("first receive of ten = %v, want [g-a g-b g-c]", got)
	}
	g.hide(t, batch[0], lockHold)
	extended := g.now()
	var back []types.Message
	if !g.poll(t, 2*lockHold, func() bool { back = g.receiveNow(t, 10, 0); return len(back) > 0 }) {
		t.Fatalf("nothing of the group back within %s of g-a's extension to %s", 2*lockHold, lockHold)
	}
	elapsed := g.now().Sub(extended)
	if got := bodies(back); got[0] != "g-a" || elapsed < lockHold-lockVisibility {
		t.Fatalf("%v delivered %s after g-a's visibility was extended to %s (theirs was %s), want g-a first, after its hold",
			got, elapsed, lockHold, lockVisibility)
	}
	g.deleteAll(t, back)
	if got := bodies(append(back, g.drain(t, 3-len(back))...)); !slices.Equal(got, []string{"g-a", "g-b", "g-c"}) {
		t.Fatalf("after the hold the group came back as %v, want [g-a g-b g-c]", got)
	}
}

// checkFIFOInFlightSuccessorsLockTheGroup is
// QueueFeatures.FIFOInFlightSuccessorsLockTheGroup's check: a group's head
// and successors received together for lockHold, then the head released
// (its visibility set to 0, which no emulator defers to a timer).
func checkFIFOInFlightSuccessorsLockTheGroup(t *testing.T, h QueueHarness) string {
	g := newGroupQueue(t, h)
	g.sendAll(t, "g", "g-a", "g-b", "g-c")
	batch := g.first(t, 10, lockHold)
	if got := bodies(batch); !slices.Equal(got, []string{"g-a", "g-b", "g-c"}) {
		t.Fatalf("first receive of ten = %v, want [g-a g-b g-c]", got)
	}
	received := g.now()
	g.hide(t, batch[0], 0)
	var back []types.Message
	if !g.poll(t, 2*lockHold, func() bool { back = g.receiveNow(t, 10, 0); return len(back) > 0 }) {
		t.Fatalf("nothing of the group back within %s of its receive", 2*lockHold)
	}
	elapsed := g.now().Sub(received)
	if got := bodies(back); got[0] != "g-a" || elapsed < lockHold-lockVisibility {
		return fmt.Sprintf("%v delivered %s after the group was received for %s and g-a released: want g-a first, once all are back",
			got, elapsed.Round(100*time.Millisecond), lockHold)
	}
	g.deleteAll(t, back)
	if got := bodies(append(back, g.drain(t, 3-len(back))...)); !slices.Equal(got, []string{"g-a", "g-b", "g-c"}) {
		return fmt.Sprintf("the group came back as %v, want [g-a g-b g-c]", got)
	}
	return ""
}

// checkFIFOOtherGroupsRetryOnTime is
// QueueFeatures.FIFOOtherGroupsRetryOnTime's check: a group's head hidden
// for lockHold, another group's received after it for lockVisibility.
func checkFIFOOtherGroupsRetryOnTime(t *testing.T, h QueueHarness) string {
	g := newGroupQueue(t, h)
	g.sendAll(t, "g1", "g1-a")
	head := g.first(t, 1, 0)
	if got := bodies(head); !slices.Equal(got, []string{"g1-a"}) {
		t.Fatalf("first receive of one = %v, want [g1-a]", got)
	}
	g.hide(t, head[0], lockHold)
	g.sendAll(t, "g2", "g2-a")
	if got := bodies(g.first(t, 10, 0)); !slices.Equal(got, []string{"g2-a"}) {
		t.Fatalf("while g1-a is in flight: %v, want [g2-a]", got)
	}
	received := g.now()
	var back []types.Message
	if !g.poll(t, 2*lockHold, func() bool { back = g.receiveNow(t, 10, 0); return len(back) > 0 }) {
		t.Fatalf("nothing back within %s", 2*lockHold)
	}
	if got := bodies(back); !slices.Equal(got, []string{"g2-a"}) {
		return fmt.Sprintf("%v delivered %s after g2-a's receive for %s (g1-a hidden for %s): want g2-a alone, on its own time",
			got, g.now().Sub(received).Round(100*time.Millisecond), lockVisibility, lockHold)
	}
	return ""
}
