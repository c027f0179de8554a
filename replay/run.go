package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// run is the state of one Run. Its routes are served one after the other;
// the workers of a route share the run's lock for what they share.
type run struct {
	e          *Engine
	req        Request
	id         string
	start      time.Time
	max        int
	rate       float64
	visibility time.Duration // the receive visibility timeout
	limiter    *limiter
	health     []Gate
	key        sealer // the seal keys; zero when none could be read (see seal.go)

	mu      sync.Mutex    // guards the fields below and the pass's shared state
	moved   int           // messages moved (or, in a dry run, that would be) or reserved so far
	longest time.Duration // the longest batch so far: the estimate of the next one
	seen    *seen
}

func (e *Engine) newRun(req Request) *run {
	r := &run{e: e, req: req, id: req.RunID, start: e.opts.Now(), max: req.Max, rate: req.Rate, longest: time.Second, seen: newSeen()}
	if r.id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		r.id = "run-" + r.start.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	}
	if r.max == 0 {
		r.max = e.opts.MaxPerRun
	}
	if r.rate == 0 {
		r.rate = e.opts.Rate
	}
	r.limiter = newLimiter(r.rate, e.opts.Now, e.opts.Sleep)
	// Long enough to decide, and to wait for the rate limit of one batch
	// of every worker; outside lockstep a batch received ahead also waits
	// behind its worker's batch in hand, so twice that.
	ahead := 1
	if !e.opts.Lockstep {
		ahead = 2
	}
	r.visibility = e.opts.DecisionWindow + time.Duration(float64(ahead*e.opts.Workers*maxBatch)/r.rate*float64(time.Second))
	return r
}

func (r *run) now() time.Time { return r.e.opts.Now() }

// stop says why the run must not start another batch, or "".
func (r *run) stop(ctx context.Context) StopReason {
	if ctx.Err() != nil {
		return StopCanceled
	}
	r.mu.Lock()
	moved, longest := r.moved, r.longest
	r.mu.Unlock()
	if moved >= r.max {
		return StopCap
	}
	if deadline, ok := ctx.Deadline(); ok {
		need := r.e.opts.DeadlineMargin + longest
		if !r.req.DryRun {
			need += r.limiter.delay()
		}
		if deadline.Sub(r.now()) < need {
			return StopDeadline
		}
	}
	return ""
}
