package batch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/browse"
)

// gateStore lets a test order a Count against another delivery's calls.
type gateStore struct {
	fifo.Store
	before func(c fifo.Count) // called before the Count
	after  func(c fifo.Count) // called after the Count
	parked func()             // called after a Parked read
}

func (s *gateStore) Parked(ctx context.Context, groups []string) (map[string]fifo.Park, error) {
	out, err := s.Store.Parked(ctx, groups)
	if s.parked != nil {
		s.parked()
	}
	return out, err
}

func (s *gateStore) Count(ctx context.Context, group string, c fifo.Count) error {
	if s.before != nil {
		s.before(c)
	}
	err := s.Store.Count(ctx, group, c)
	if s.after != nil {
		s.after(c)
	}
	return err
}

// 13. Two deliveries of one batch of a round's copies (the head's hide
// ran out while the first still ran it): the first applies copy 1 and
// fails copy 2; the second, delivered MaxReceives times, would park the
// group at copy 1, which the first settled: its stop is not stored, and it
// drops nothing on the strength of it. Every record is applied, in order.
func TestASecondDeliveryOfASettledCopyDropsNothing(t *testing.T) {
	l := newFIFOLane(t, laneSetup{keeper: func(k *fifo.Keeper) { k.MaxReceives = 3 }})
	l.set(l.invalids, true, "a/1")
	l.publish("a", 1, 2, 3, 4)
	l.drain() // a/1 invalid; a/2..a/4 parked
	r := l.lane.Releaser(l.store)
	if st, err := r.Release(t.Context(), "a"); err != nil || st.Moved != 3 {
		t.Fatalf("step = %+v, %v", st, err)
	}
	l.fail("a/2", 1) // delivery 1 of copy a/2 fails
	l.fail("a/3", 1) // the first copy of the batch of delivery 2 fails a/3
	if n := l.poll(); n != 3 {
		t.Fatalf("delivery 1: %d", n)
	}
	l.lane.Clock.Advance(31 * time.Second)

	aCounted := make(chan struct{})
	bRead := make(chan struct{}, 1)
	var once sync.Once
	var reading bool
	l.keeper.Store = &gateStore{Store: l.keeper.Store,
		parked: func() {
			if reading {
				bRead <- struct{}{}
			}
		},
		before: func(c fifo.Count) {
			if c.Stop > 0 {
				<-aCounted // B's Stop after A's count of copy 1
			}
		},
		after: func(c fifo.Count) {
			if c.Index == 1 && c.Stop == 0 {
				once.Do(func() { close(aCounted) })
			}
		}}
	var wg sync.WaitGroup
	started := false
	l.onRun = func(body string, receives int) {
		if body == "a/2" && receives == 2 && !started {
			started = true
			// The hide of delivery 2 (at most a minute) runs out while A
			// still runs a/2: SQS delivers the batch again to B.
			l.lane.Clock.Advance(61 * time.Second)
			wg.Add(1)
			reading = true
			go func() {
				defer wg.Done()
				_, _ = l.lane.Poll(context.Background(), l.consume)
			}()
			<-bRead // B has read the parks (nothing settled yet)
			reading = false
		}
	}
	_, _ = l.lane.Poll(t.Context(), l.consume) // A
	wg.Wait()
	l.onRun = nil
	t.Logf("park after both copies: %+v", l.park("a"))
	l.drain()
	l.releaseThroughStops("a")
	l.wantApplied("a", 2, 3, 4)
	l.settled(false, "a/1")
}

// 14. A record sent to the parking queue twice (its invocation died after
// it was parked; it came back past SQS's five minutes of deduplication) is
// taken out once: the park's counts stay exact, so a step of a new
// process, whose scan finds nothing while a killed step's scan still
// hides a record, does not end the park.
func TestARecordParkedTwiceIsTakenOutOnce(t *testing.T) {
	l := newFIFOLane(t, laneSetup{concurrency: 1, lane: batchtest.LaneOptions{Visibility: 6 * time.Minute}})
	l.set(l.invalids, true, "a/1")
	l.publish("a", 1)
	l.drain()
	l.publish("a", 2)
	l.publish("k", 1)
	l.set(l.kills, true, "k/1")
	l.poll() // a/2 parked, then k/1 kills the invocation: a/2 not acknowledged
	l.set(l.kills, false, "k/1")
	l.drain() // a/2 again, six minutes later: parked a second time
	l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/2")
	l.publish("a", 3)
	l.drain()
	if p := l.park("a"); p.Parked != 2 {
		t.Fatalf("park = %+v", p)
	}

	r0 := l.lane.Releaser(l.store)
	if _, err := r0.Release(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	l.publish("a", 4) // published during the round: parked behind it
	l.drain()
	// r0's next step: its scan hides a/4, and it cannot show it again
	// (throttled, or the process is killed right after its scan).
	l.lane.Queue.CallFault = func(op, url string) error {
		if op == "ChangeMessageVisibility" && url == l.lane.Route.ParkingURL {
			return errStore
		}
		return nil
	}
	st, err := r0.Release(t.Context(), "a")
	l.lane.Queue.CallFault = nil
	t.Logf("killed step: %+v, %v; park %+v", st, err, l.park("a"))

	// The operator runs dlq groups release again: a new process.
	r1 := l.lane.Releaser(l.store)
	st, err = r1.Release(t.Context(), "a")
	t.Logf("new process: %+v, %v; park %+v", st, err, l.park("a"))
	l.lane.Clock.Advance(61 * time.Second)
	l.publish("a", 5)
	l.drain()
	t.Logf("parking queue: %q", l.bodies(l.lane.Route.ParkingURL))
	l.releaseThroughStops("a")
	l.wantApplied("a", 2, 3, 4, 5)
	l.settled(false, "a/1")
}

// peekParking runs `dlq peek --queue parking` (browse.All, hiding each
// message 15 s while it browses) and calls during once the peek holds the
// parking queue's messages.
func (l *fifoLane) peekParking(during func()) {
	l.t.Helper()
	called := false
	_, err := browse.All(l.t.Context(), l.lane.Queue, l.lane.Route.ParkingURL, browse.Options{Hide: 15, Max: 10}, func(types.Message) bool {
		if !called {
			called = true
			during()
		}
		return false
	})
	if err != nil {
		l.t.Fatal(err)
	}
}

// 15. An operator peeks at the parking queue (dlq peek --queue parking,
// which hides what it shows) while a release runs: a step that finds none
// of its round's records does not end the round, nor the park; they end
// once the records are back.
func TestAPeekDuringAReleaseEndsNoParkEarly(t *testing.T) {
	l := newFIFOLane(t, laneSetup{})
	l.set(l.invalids, true, "a/1")
	l.publish("a", 1, 2, 3)
	l.drain()
	r := l.lane.Releaser(l.store)
	step := func() fifo.Step {
		st, err := r.Release(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	step() // round 1: a/2, a/3
	l.publish("a", 4)
	l.drain() // a/2, a/3 applied; a/4 parked behind the round
	l.peekParking(func() { t.Logf("step during a peek: %+v; park %+v", step(), l.park("a")) })
	l.lane.Clock.Advance(2 * time.Second)
	step() // round 2: a/2, a/3 again, and a/4
	l.publish("a", 5)
	l.drain() // a/4 applied (a/2, a/3 run again); a/5 parked behind the round
	l.peekParking(func() { t.Logf("step during a peek: %+v; park %+v", step(), l.park("a")) })
	t.Logf("parking queue: %q; park %+v", l.bodies(l.lane.Route.ParkingURL), l.park("a"))
	l.publish("a", 6)
	l.drain()
	l.releaseThroughStops("a")
	l.wantApplied("a", 2, 3, 4, 5, 6)
	l.settled(false, "a/1")
}

// 16. The consumer counts a record of a parked group, then sends it to the
// parking queue, slowly (SDK retries over a degraded connection): the
// release waits longer than an invocation lives before it believes an
// empty parking queue, so the park outlasts the send.
func TestASlowSendToParkingKeepsThePark(t *testing.T) {
	l := newFIFOLane(t, laneSetup{})
	l.set(l.invalids, true, "a/1")
	l.publish("a", 1)
	l.drain() // a parked behind its invalid head, nothing in the parking queue yet
	r := l.lane.Releaser(l.store)
	done := false
	l.lane.Queue.CallFault = func(op, url string) error {
		if op == "SendMessageBatch" && url == l.lane.Route.ParkingURL && !done {
			done = true
			// a/2 is counted; its send is slow. The operator's release runs.
			for range 3 {
				st, err := r.Release(t.Context(), "a")
				t.Logf("step while a/2 is on its way: %+v, %v", st, err)
				l.lane.Clock.Advance(61 * time.Second)
			}
		}
		return nil
	}
	l.publish("a", 2)
	l.drain()
	l.lane.Queue.CallFault = nil
	t.Logf("parking queue: %q; park %+v", l.bodies(l.lane.Route.ParkingURL), l.park("a"))
	l.publish("a", 3)
	l.drain()
	l.releaseThroughStops("a")
	l.wantApplied("a", 2, 3)
	l.settled(false, "a/1")
}

// 17. Two operators release two groups at once: a scan of one release
// receives, and hides, the other group's records for a moment; the other
// release's step waits for them instead of ending its round or its park.
func TestTwoGroupsReleasedAtOnce(t *testing.T) {
	l := newFIFOLane(t, laneSetup{})
	l.set(l.invalids, true, "a/1", "h/1")
	l.publish("a", 1, 2, 3)
	l.drain()
	l.publish("h", 1, 2)
	l.drain()
	l.wantQueue("the parking queue", l.lane.Route.ParkingURL, "a/2", "a/3", "h/2")
	ra, rh := l.lane.Releaser(l.store), l.lane.Releaser(l.store)
	stepA := func() fifo.Step {
		st, err := ra.Release(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// stepHWithA runs a step of h's release, and a step of a's while h's
	// scan holds the parking queue's messages it received.
	stepHWithA := func() {
		armed := true
		l.lane.Queue.CallFault = func(op, url string) error {
			if op == "ChangeMessageVisibility" && url == l.lane.Route.ParkingURL && armed {
				armed = false // h's scan shows the others again: a's step runs first
				t.Logf("a's step while h's scan holds a's records: %+v; park %+v", stepA(), l.park("a"))
			}
			return nil
		}
		defer func() { l.lane.Queue.CallFault = nil }()
		if _, err := rh.Release(t.Context(), "h"); err != nil {
			t.Fatal(err)
		}
	}

	stepA() // round 1 of a: a/2, a/3
	l.publish("a", 4)
	l.drain() // a/2, a/3 applied; a/4 parked behind the round
	stepHWithA()
	l.lane.Clock.Advance(2 * time.Second)
	stepA() // round 2 of a: a/2, a/3 again, and a/4
	l.publish("a", 5)
	l.drain() // a/4 applied, a/2 and a/3 run again; a/5 parked
	stepHWithA()
	t.Logf("parking queue: %q; park of a %+v", l.bodies(l.lane.Route.ParkingURL), l.park("a"))
	l.publish("a", 6)
	l.drain()
	l.releaseThroughStops("a")
	l.wantApplied("a", 2, 3, 4, 5, 6)
	l.settled(true, "a/1", "h/1")
}

// 18. A copy whose acknowledgement failed comes back after its round
// ended: it is no producer's record (it is not parked again, which would
// send its record back a second time); it runs again, absorbed.
func TestACopyDeliveredAgainAfterItsRound(t *testing.T) {
	l := newFIFOLane(t, laneSetup{})
	l.set(l.invalids, true, "a/1", "a/4")
	l.publish("a", 1, 2, 3, 4)
	l.drain() // a/1 invalid; a/2..a/4 parked
	r := l.lane.Releaser(l.store)
	if st, err := r.Release(t.Context(), "a"); err != nil || st.Moved != 3 {
		t.Fatalf("step = %+v, %v", st, err)
	}
	failed := false
	l.lane.Queue.EntryFault = func(op, url string, m types.Message) error {
		if op == "DeleteMessageBatch" && url == l.lane.Route.SourceURL && aws.ToString(m.Body) == "a/3" && !failed {
			failed = true
			return errStore
		}
		return nil
	}
	if n, _ := l.lane.Poll(t.Context(), l.consume); n != 3 { // its error: the failed acknowledgement
		t.Fatalf("the round's copies came in %d records, want 3", n)
	}
	l.lane.Queue.EntryFault = nil
	if !failed {
		t.Fatal("the acknowledgement of a/3 did not fail")
	}
	if st, err := r.Release(t.Context(), "a"); err != nil || !st.Stopped {
		t.Fatalf("step after a/4 was rejected = %+v, %v; want Stopped", st, err)
	}
	l.drain() // the copy of a/3 comes back, its round ended
	l.wantQueue("the parking queue", l.lane.Route.ParkingURL)
	if p := l.park("a"); p.Parked != 3 || p.Moved != 3 {
		t.Fatalf("park = %+v, want 3 parked and 3 moved", p)
	}
	l.release("a")
	l.wantApplied("a", 2, 3)
	l.settled(false, "a/1", "a/4")
}

// sentFailsOnce is a park store whose Sent of copy n fails once: the
// release sent the copy and could not count it.
type sentFailsOnce struct {
	fifo.Store
	n int
}

func (s *sentFailsOnce) Sent(ctx context.Context, group, round string, n int) error {
	if n == s.n {
		s.n = 0
		return errStore
	}
	return s.Store.Sent(ctx, group, round, n)
}

// 15. A release step sends copy 2 and cannot count it; copy 2 fails once.
// The consumer counts the copy it receives, so the round waits for it
// (before, a step that then missed the record in a partial scan ended the
// round, and the consumer took the copy for settled: it never backed off
// nor parked; sim seeds 1981 and 1569). Every record is applied, in order.
func TestACopyTheReleaseCouldNotCountHoldsItsRound(t *testing.T) {
	l := newFIFOLane(t, laneSetup{})
	l.set(l.invalids, true, "a/1")
	l.publish("a", 1, 2, 3)
	l.drain() // a/1 invalid; a/2 and a/3 parked
	r := l.lane.Releaser(&sentFailsOnce{Store: l.store, n: 2})
	if _, err := r.Release(t.Context(), "a"); err == nil {
		t.Fatal("a step that could not count its send returned no error")
	}
	if p := l.park("a"); p.Sent != 1 {
		t.Fatalf("park = %+v, want 1 copy counted sent", p)
	}
	l.fail("a/3", 1)
	l.poll() // a/2 applied, a/3 fails
	if p := l.park("a"); p.Sent != 2 || p.Settled != 1 {
		t.Fatalf("park = %+v, want copy 2 counted by the consumer, 1 settled", p)
	}
	if st, err := r.Release(t.Context(), "a"); err != nil || st.Done || st.Pending != 1 {
		t.Fatalf("step with copy 2 in the source = %+v, %v; want to wait for it", st, err)
	}
	l.drain()
	l.release("a")
	l.wantApplied("a", 2, 3)
}
