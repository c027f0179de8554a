package replay

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestLimiterSpacesBatchesAtTheRate(t *testing.T) {
	now := time.Unix(0, 0)
	var slept []time.Duration
	l := newLimiter(10, func() time.Time { return now }, func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		now = now.Add(d)
		return nil
	})
	ctx := context.Background()
	for range 3 {
		if err := l.wait(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(slept) != "[1s 1s]" || l.delay() != time.Second {
		t.Fatalf("slept %v, delay %v", slept, l.delay())
	}
	now = now.Add(5 * time.Second) // idle time does not pile up a burst
	if err := l.wait(ctx, 10); err != nil || len(slept) != 2 || l.delay() != time.Second {
		t.Fatalf("after idling: slept %v, delay %v, err %v", slept, l.delay(), err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.wait(cancelled, 1); !errors.Is(err, context.Canceled) && err != nil {
		t.Fatalf("err = %v", err)
	}
}

func TestSeenFilter(t *testing.T) {
	f := newSeenFilter()
	const n = 100_000
	for i := range n {
		if f.add(fmt.Sprintf("id-%d", i)) && i < 1000 {
			t.Fatalf("id-%d seen before it was added", i)
		}
	}
	for i := range n {
		if !f.add(fmt.Sprintf("id-%d", i)) {
			t.Fatalf("id-%d forgotten", i)
		}
	}
	// Adding another 100,000 takes the filter from 100,000 to 200,000 ids:
	// in theory 0.04% to 0.8% false positives, about 0.3% on average.
	falsePositives := 0
	for i := range n {
		if f.add(fmt.Sprintf("other-%d", i)) {
			falsePositives++
		}
	}
	if falsePositives > n/200 {
		t.Fatalf("%d false positives in %d (%.2f%%)", falsePositives, n, 100*float64(falsePositives)/n)
	}
}

// A run remembers the ids on their way exactly and those left in their DLQ
// in the filter, made when the first is left; a deleted message is
// forgotten.
func TestSeenForgetsWhatLeftTheDLQ(t *testing.T) {
	s := newSeen()
	for _, id := range []string{"deleted", "left"} {
		if s.add(id) {
			t.Fatalf("%s seen before it was added", id)
		}
		if !s.add(id) {
			t.Fatalf("%s on its way not seen again", id)
		}
	}
	s.done("deleted", true)
	if s.left != nil {
		t.Fatal("a filter was made with nothing left in the DLQ")
	}
	s.done("left", false)
	if s.left == nil || !s.add("left") {
		t.Fatal("a message left in the DLQ was not remembered")
	}
	if len(s.inFlight) != 0 {
		t.Fatalf("%d ids still on their way", len(s.inFlight))
	}
	if s.add("deleted") {
		t.Fatal("a deleted message was remembered")
	}
}

func TestInBatchesAccountsForEveryEntry(t *testing.T) {
	cause := errors.New("throttled")
	var calls []int
	errs := inBatches(23, func(start int, ids []string) ([]string, []types.BatchResultErrorEntry, error) {
		calls = append(calls, len(ids))
		switch start {
		case 0: // m1 failed, m2 missing from the answer
			return []string{"m0", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}, []types.BatchResultErrorEntry{{Id: aws.String("m1"), Code: aws.String("InternalError"), Message: aws.String("boom")}}, nil
		case 10:
			return nil, nil, cause
		default:
			return ids, nil, nil
		}
	})
	if fmt.Sprint(calls) != "[10 10 3]" {
		t.Fatalf("calls = %v", calls)
	}
	if len(errs) != 12 || errs[1] == nil || errs[1].Error() != "InternalError: boom" || errs[2] == nil || !errors.Is(errs[15], cause) || errs[20] != nil {
		t.Fatalf("errors = %v", errs)
	}
}

func TestHideStaysWithinTwelveHoursOfTheReceive(t *testing.T) {
	r := time.Unix(1_800_000_000, 0)
	now := r.Add(10 * time.Second)
	tests := []struct {
		until time.Time
		want  int32
	}{
		{now.Add(90 * time.Second), 90},
		{now.Add(1500 * time.Millisecond), 2},
		{now.Add(-time.Hour), 1},
		{now.Add(48 * time.Hour), int32((maxVisibility - 10*time.Second - time.Minute) / time.Second)},
	}
	for _, tt := range tests {
		if got := hide(tt.until, now, r); got != tt.want {
			t.Errorf("hide(%v) = %d, want %d", tt.until.Sub(now), got, tt.want)
		}
	}
}

// The pass reports the reason of the worker that ended it last: "drained"
// from a worker that found the DLQ empty does not hide a later deadline or
// cap; the first error stands over everything.
func TestTheStopReasonIsTheOneThatEndedThePass(t *testing.T) {
	tests := []struct {
		name  string
		stops []StopReason
		want  StopReason
	}{
		{"drained then deadline", []StopReason{StopDrained, StopDeadline}, StopDeadline},
		{"drained then cap", []StopReason{StopDrained, StopCap}, StopCap},
		{"deadline then drained", []StopReason{StopDeadline, StopDrained}, StopDeadline},
		{"drained twice", []StopReason{StopDrained, StopDrained}, StopDrained},
		{"error then deadline", []StopReason{StopError, StopDeadline}, StopError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, p := &run{}, &pass{}
			for _, s := range tt.stops {
				var err error
				if s == StopError {
					err = errors.New("boom")
				}
				r.end(p, s, err)
			}
			if p.stopped != tt.want {
				t.Fatalf("stopped %s, want %s", p.stopped, tt.want)
			}
		})
	}
}
