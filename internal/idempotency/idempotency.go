package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Status is the state of a record.
type Status string

// The states of a record.
const (
	InProgress Status = "IN_PROGRESS"
	Completed  Status = "COMPLETED"
)

// Defaults of [Receiver].
const (
	// DefaultLifetime outlives the longest source (4 days) plus DLQ
	// (14 days) retention with a margin, so a replay 14 days later is
	// still recognised.
	DefaultLifetime = 30 * 24 * time.Hour
	// MinLifetime is source plus DLQ retention at their defaults.
	MinLifetime = 18 * 24 * time.Hour
	// DefaultLockTimeout bounds a lock when ctx has no deadline.
	DefaultLockTimeout = 15 * time.Minute
)

// Errors returned by the package. Match them with errors.Is.
var (
	// ErrInProgress: another live invocation holds the key. Transient.
	ErrInProgress = errors.New("idempotency: key is being processed by another invocation")
	// ErrConflict: the key completed before with a different payload.
	ErrConflict = errors.New("idempotency: key completed before with a different payload")
	// ErrLeaseLost: the caller's claim was taken over or released; returned
	// by [Store.Complete] and [Store.Release].
	ErrLeaseLost = errors.New("idempotency: claim no longer held")
)

// Record is the stored state of a key.
type Record struct {
	Key           string
	Status        Status
	PayloadHash   string
	Result        string    // set when Completed
	Token         string    // identifies the claim that wrote the record
	LockExpiresAt time.Time // IN_PROGRESS only: the holder's deadline
	ExpiresAt     time.Time // after this the record counts as absent
}

// Lease is one claim of a key by one invocation.
type Lease struct {
	Key         string
	PayloadHash string
	Token       string    // unique per claim
	Now         time.Time // the clock of the claimer, used in the conditions
	Until       time.Time // the lock expires then (the invocation deadline)
	ExpiresAt   time.Time // the record's lifetime end
}

// Store is the persistence port of the idempotent receiver. Implementations
// must make each method atomic with respect to the others and be safe for
// concurrent use.
type Store interface {
	// Claim writes an IN_PROGRESS record for l.Key unless a live record
	// stands: one that has not expired and is COMPLETED or locked until
	// after l.Now. It returns claimed=true on success, or the standing
	// record and claimed=false.
	Claim(ctx context.Context, l Lease) (current Record, claimed bool, err error)
	// Complete turns the caller's IN_PROGRESS record into COMPLETED with
	// result, expiring at l.ExpiresAt. ErrLeaseLost if l.Token no longer
	// holds the key.
	Complete(ctx context.Context, l Lease, result string) error
	// Release deletes the caller's IN_PROGRESS record. ErrLeaseLost if l.Token
	// no longer holds the key.
	Release(ctx context.Context, l Lease) error
}

// Outcome is the result of [Receiver.Do].
type Outcome struct {
	Result    string // the effect's result, fresh or stored
	Duplicate bool   // true when the stored result was returned without running the effect
}

// Receiver runs an effect at most once per key. Its zero value is not
// usable; set Store and Scope. It is safe for concurrent use.
type Receiver struct {
	Store    Store
	Scope    string              // the consumer's name; keys are "<Scope>#<key>"
	Lifetime time.Duration       // how long a completed record is kept; default DefaultLifetime
	Now      func() time.Time    // default time.Now
	NewToken func() string       // default: 128 random bits
	OnError  func(error, string) // called with errors it can only report (a failed release); may be nil
}

// Do runs effect unless key has run before. The lock it takes expires at
// ctx's deadline (or after DefaultLockTimeout). It returns ErrInProgress,
// ErrConflict (both wrapped), the effect's error (wrapped), or a store error.
// If the effect fails, the claim is released so that a retry can run it.
func (r *Receiver) Do(ctx context.Context, key, payloadHash string, effect func(context.Context) (string, error)) (Outcome, error) {
	now := r.now()
	until, ok := ctx.Deadline()
	if !ok {
		until = now.Add(DefaultLockTimeout)
	}
	lifetime := r.Lifetime
	if lifetime <= 0 {
		lifetime = DefaultLifetime
	}
	l := Lease{
		Key:         r.Scope + "#" + key,
		PayloadHash: payloadHash,
		Token:       r.token(),
		Now:         now,
		Until:       until,
		ExpiresAt:   now.Add(lifetime),
	}
	current, claimed, err := r.Store.Claim(ctx, l)
	if err != nil {
		return Outcome{}, fmt.Errorf("claim %s: %w", l.Key, err)
	}
	if !claimed {
		switch {
		case current.Status != Completed:
			return Outcome{}, fmt.Errorf("claim %s (lock until %s): %w", l.Key, current.LockExpiresAt.Format(time.RFC3339), ErrInProgress)
		case current.PayloadHash != payloadHash:
			return Outcome{}, fmt.Errorf("claim %s: %w", l.Key, ErrConflict)
		default:
			return Outcome{Result: current.Result, Duplicate: true}, nil
		}
	}
	result, err := effect(ctx)
	if err != nil {
		// Release even when ctx is done, so the retry does not wait for
		// the lock to expire.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if rerr := r.Store.Release(rctx, l); rerr != nil && r.OnError != nil {
			r.OnError(fmt.Errorf("release %s: %w", l.Key, rerr), key)
		}
		return Outcome{}, err
	}
	// The effect happened: record it even when ctx is done by now, and try
	// twice, so that a redelivery finds it instead of running it again.
	l.ExpiresAt = r.now().Add(lifetime)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	err = r.Store.Complete(cctx, l, result)
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		err = r.Store.Complete(cctx, l, result)
	}
	if err != nil {
		return Outcome{Result: result}, fmt.Errorf("complete %s: %w", l.Key, err)
	}
	return Outcome{Result: result}, nil
}

func (r *Receiver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Receiver) token() string {
	if r.NewToken != nil {
		return r.NewToken()
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
