package replaytest_test

import (
	"testing"
	"time"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// memoryQueueHarness declares what MemoryQueue lacks of SQS's documented
// behaviour: like ministack, it refuses a receipt handle whose message is
// already deleted; and it has neither DeadLetterQueueSourceArn nor
// ListDeadLetterSourceQueues, which the engine does not use. It runs on a
// manual clock, so the FIFO lock tests' waits take no time.
func memoryQueueHarness() replaytest.QueueHarness {
	clock := replaytest.NewClock(time.Now())
	q := replaytest.NewMemoryQueue(clock.Now)
	features := replaytest.SQSFeatures()
	features.DeadLetterSourceARN = false
	features.ListDeadLetterSources = false
	return replaytest.QueueHarness{
		Queue: q,
		NewQueue: func(t *testing.T, name string) string {
			url, err := q.CreateQueue(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			return url
		},
		NewQueueWithAttributes: func(t *testing.T, name string, attrs map[string]string) (string, string) {
			url, err := q.CreateQueue(name, attrs)
			if err != nil {
				t.Fatal(err)
			}
			return url, q.ARN(url)
		},
		Now:      clock.Now,
		Sleep:    clock.Sleep,
		Features: features,
	}
}

func TestMemoryQueueContract(t *testing.T) {
	replaytest.RunQueue(t, memoryQueueHarness())
}

func TestMemoryQueueGaps(t *testing.T) {
	replaytest.RunQueueGaps(t, memoryQueueHarness())
}

func TestMemoryCompletionsContract(t *testing.T) {
	replaytest.RunCompletions(t, replaytest.CompletionsHarness{NewPair: func(*testing.T) (idempotency.Store, replay.Completions) {
		s := idempotency.NewMemoryStore()
		return s, &replaytest.MemoryCompletions{Store: s, Scope: replaytest.CompletionsScope}
	}})
}

func TestClockSleepAdvances(t *testing.T) {
	c := replaytest.NewClock(time.Unix(0, 0))
	if err := c.Sleep(t.Context(), time.Minute); err != nil || c.Now() != time.Unix(60, 0) {
		t.Fatalf("now = %v, err = %v", c.Now(), err)
	}
}
