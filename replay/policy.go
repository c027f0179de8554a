package replay

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/homingdlq/homing/internal/settings"
)

// Parking reasons, and the reason of a message that carries none of ours.
const (
	ReasonReplayExhausted = "replay-exhausted" // replayed MaxReplays times
	ReasonExpiryRescue    = "expiry-rescue"    // about to expire in the DLQ and not replayable now
	ReasonDeadLettered    = "dead-lettered"    // moved to the DLQ by the broker; no reason of ours
	ReasonTooLarge        = "too-large"        // with our metadata it exceeds the source queue's MaximumMessageSize
	// ReasonCorruptMetadata was given by earlier versions to a message whose
	// metadata did not decode; such an attribute is now the producer's
	// (kept as data under a neutral name) and the message is replayed as one
	// without metadata. Kept so old parked messages still read.
	ReasonCorruptMetadata = "corrupt-metadata"
	// ReasonAlreadyApplied is the reason of a [Resolved] ledger record: the
	// consumer had completed its key with the same payload, so the dead
	// letter was removed instead of replayed.
	ReasonAlreadyApplied = "already-applied"
)

// Defaults of [Policy]: the replay function's settings' defaults, as
// package settings declares them (MAX_REPLAYS, BACKOFF_BASE, BACKOFF_MAX,
// EXPIRY_RESCUE_WINDOW).
const (
	defaultMaxReplays         = settings.DefaultMaxReplays
	defaultBackoffBase        = settings.DefaultBackoffBase
	defaultBackoffMax         = settings.DefaultBackoffMax
	defaultExpiryRescueWindow = settings.DefaultExpiryRescueWindow
)

// Policy decides per message. Zero fields take the defaults; it is a value
// and safe for concurrent use.
type Policy struct {
	MaxReplays         int           // default defaultMaxReplays
	BackoffBase        time.Duration // backoff ceiling before the first replay; doubles per replay; default defaultBackoffBase
	BackoffMax         time.Duration // caps the ceiling; default defaultBackoffMax
	ExpiryRescueWindow time.Duration // park when this close to expiry and not replayable; default defaultExpiryRescueWindow
}

// Facts are what a decision depends on.
type facts struct {
	ReplayCount    int       // the larger of the metadata's and the ledger's count
	DeadLetteredAt time.Time // when the message was (first) dead-lettered, or an approximation
	LastReplayAt   time.Time // zero when never replayed
	ExpiresAt      time.Time // when the DLQ drops it; zero when unknown
	JitterKey      string    // the original message id: fixes the jitter across runs
	Reset          bool      // an operator restarted the count in this run: no backoff
}

// Decision is the verdict for one message.
type decision struct {
	Outcome Outcome   // OutcomeReplayed, OutcomeParked or OutcomeDelayed
	Reason  string    // parked only: the parking reason
	Due     time.Time // when the message may be replayed (zero when parked for exhaustion)
	Until   time.Time // delayed only: hide it until then (Due, or the start of its rescue window when earlier)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (p Policy) withDefaults() Policy {
	if p.MaxReplays <= 0 {
		p.MaxReplays = defaultMaxReplays
	}
	if p.BackoffBase <= 0 {
		p.BackoffBase = defaultBackoffBase
	}
	if p.BackoffMax <= 0 {
		p.BackoffMax = defaultBackoffMax
	}
	if p.BackoffBase > p.BackoffMax {
		p.BackoffBase = p.BackoffMax
	}
	if p.ExpiryRescueWindow <= 0 {
		p.ExpiryRescueWindow = defaultExpiryRescueWindow
	}
	return p
}

// Decide returns what to do with a message described by f at now.
func (p Policy) decide(f facts, now time.Time) decision {
	p = p.withDefaults()
	if f.ReplayCount >= p.MaxReplays {
		return decision{Outcome: OutcomeParked, Reason: ReasonReplayExhausted}
	}
	if f.Reset {
		return decision{Outcome: OutcomeReplayed, Due: now}
	}
	ref := f.LastReplayAt
	if ref.IsZero() {
		ref = f.DeadLetteredAt
	}
	due := ref.Add(p.Backoff(f.ReplayCount, f.JitterKey))
	if now.Before(due) {
		if p.expiring(f, now) {
			return decision{Outcome: OutcomeParked, Reason: ReasonExpiryRescue, Due: due}
		}
		// A hide never reaches past the start of the rescue window: the
		// message must be seen again before it can expire.
		until := due
		if !f.ExpiresAt.IsZero() {
			until = minTime(until, f.ExpiresAt.Add(-p.ExpiryRescueWindow))
		}
		return decision{Outcome: OutcomeDelayed, Due: due, Until: until}
	}
	return decision{Outcome: OutcomeReplayed, Due: due}
}

// refundable reports whether a message whose replays were given back
// refunds times may have one more given back: a message's replays, refunds
// included, stay under 2 x MaxReplays, so a message that fails on its own
// in runs whose other replays fail too (the breaker takes them all for an
// outage) is parked in the end rather than replayed for ever.
func (p Policy) refundable(refunds int) bool {
	return refunds < p.withDefaults().MaxReplays
}

// Expiring reports whether the message is within the rescue window of its
// expiry at now. Unknown expiry is never expiring.
func (p Policy) expiring(f facts, now time.Time) bool {
	p = p.withDefaults()
	return !f.ExpiresAt.IsZero() && !now.Before(f.ExpiresAt.Add(-p.ExpiryRescueWindow))
}

// Backoff is the wait before replay number count+1: exponential backoff with
// full jitter, a duration in [0, min(BackoffMax, BackoffBase·2^count)). The
// jitter is a hash of key and count, so it is the same in every run.
func (p Policy) Backoff(count int, key string) time.Duration {
	return time.Duration(jitter(key, count) * float64(p.ceiling(count)))
}

// ceiling is min(BackoffMax, BackoffBase·2^count).
func (p Policy) ceiling(count int) time.Duration {
	p = p.withDefaults()
	ceiling := p.BackoffBase
	for range max(count, 0) {
		if ceiling >= p.BackoffMax/2 {
			return p.BackoffMax
		}
		ceiling *= 2
	}
	return min(ceiling, p.BackoffMax)
}

// jitter is a fraction in [0,1) fixed by key and count.
func jitter(key string, count int) float64 {
	sum := sha256.Sum256([]byte(key + "\n" + strconv.Itoa(count)))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}
