package sim

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"sync"
	"time"
)

// Faults are the rates of the injected faults; zero injects none. Each
// decision is a [dice] roll, so it does not depend on the order in which
// goroutines make their calls.
type Faults struct {
	StoreErrors      float64 // idempotency store: a Claim, Complete or Release throttled
	CompleteErrors   float64 // idempotency store: a Complete fails (a storage hiccup after the effect)
	CrashAfterEffect float64 // the consumer dies right after the tax answer, before its completion
	InvalidSendError float64 // the invalid queue refuses a publish
	ESMDeleteErrors  float64 // the event source mapping fails to delete a processed record
	DoubleInvoke     float64 // the event source mapping invokes the function twice with one batch
	ConcurrentCopy   float64 // SQS hands a copy of the record to a second consumer during the tax call
	LedgerErrors     float64 // replay ledger: a call throttled
	// LedgerOutage: every ledger call fails until this long after the start.
	LedgerOutage     time.Duration
	ReplayQueueError float64 // the replay engine's SQS calls: a call fails
	CompletionsError float64 // the canary's completions read fails
	RunCrash         float64 // a replay run crashes at a chosen point
	RunOverlap       float64 // an operator run starts while a scheduled run waits on a slow send
	// GroupErrors: on a lane with Groups, a call of the consumer's parks,
	// or its send to the parking queue or change of a head's visibility,
	// fails (see groupBook.inject for the bounds of these faults).
	GroupErrors float64
	// ReleaseErrors: a call of the operator's release (its parks, its SQS
	// calls) fails; the operator takes the step again.
	ReleaseErrors float64
	OperatorRuns  int // on-demand runs during the workload
	// CrashFirstCompletion lists orderIds whose first completion dies
	// (a scenario's deterministic CrashAfterEffect).
	CrashFirstCompletion []string
	ClockJumps           int // forward jumps of the clock during the workload
	// Ticks are the faults of the replay's schedule.
	Ticks Ticks
}

// Ticks are the faults of the replay's schedule (EventBridge): a tick
// whose run starts late (a cold start, an asynchronous invocation retried
// after a throttle) or never, and windows in which the schedule is
// disabled (an operator paused it). Each tick's fate is a dice roll on its
// number.
type Ticks struct {
	Late   float64       // share of ticks whose run starts late
	LateBy time.Duration // by up to this much (uniform)
	Missed float64       // share of ticks that start no run
	Pauses []Window      // a tick within one starts no run
	// PauseAfterProbe, when set, disables the schedule for that long right
	// after the first run whose pass probed the lane's open breaker (a
	// scenario's: the probe that the next run, late, must judge).
	PauseAfterProbe time.Duration
}

// Window is a span of simulated time, as offsets from the start.
type Window struct{ From, To time.Duration }

// Injected errors. They are transient from the code's point of view.
var (
	errThrottled = errors.New("ProvisionedThroughputExceededException: rate of requests exceeds the allowed throughput (injected)")
	errSQS       = errors.New("ServiceUnavailable: the request could not be handled (injected)")
	errKilled    = errors.New("function instance stopped (injected crash or timeout)")
	errCrashed   = errors.New("replay function crashed (injected)")
	errKeyTooBig = errors.New("ValidationException: one or more parameter values were invalid: size of hashkey has exceeded the maximum size limit of 2048 bytes")
)

// DynamoDB key limits.
const (
	maxPartitionKeyBytes = 2048
	maxSortKeyBytes      = 1024
)

// dice decides faults from (seed, operation, key, attempt): the n-th roll
// for an (operation, key) pair always gives the same number for a seed. It
// is safe for concurrent use.
type dice struct {
	seed     uint64
	mu       sync.Mutex
	attempts map[string]int
}

func newDice(seed uint64) *dice { return &dice{seed: seed, attempts: map[string]int{}} }

// roll returns a number in [0,1) for the next attempt of op on key.
func (d *dice) roll(op, key string) float64 {
	k := op + "\x00" + key
	d.mu.Lock()
	n := d.attempts[k]
	d.attempts[k] = n + 1
	d.mu.Unlock()
	return d.at(op, key, n)
}

// at is the roll number n of op on key, without counting it.
func (d *dice) at(op, key string, n int) float64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], d.seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	h.Write(b[:])
	h.Write([]byte(op))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return float64(mix(h.Sum64())>>11) / (1 << 53)
}

// chance reports whether the next attempt of op on key hits a fault of
// probability p. It rolls only when p > 0, so a fault switched off does not
// move the other faults' attempt numbers.
func (d *dice) chance(op, key string, p float64) bool {
	return p > 0 && d.roll(op, key) < p
}

// mix is the splitmix64 finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
