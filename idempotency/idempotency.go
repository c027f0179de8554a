package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/wait"
	"github.com/homingdlq/homing/payload"
)

// Status is the state of a record.
type Status string

// The states of a record.
const (
	InProgress Status = "IN_PROGRESS"
	Completed  Status = "COMPLETED"
)

// defaultLifetime is the [Receiver]'s default record lifetime, the
// consumer's RECORD_LIFETIME as package settings declares it: it outlives
// the longest source (4 days) plus DLQ (14 days) retention with a margin, so
// a replay 14 days later is still recognised.
const defaultLifetime = settings.DefaultRecordLifetime

// inProgress is ErrInProgress: a failure class of its own, so that a
// delivery that found the key locked is not recorded under Go's type name.
type inProgress struct{}

func (inProgress) Error() string        { return "idempotency: key is being processed by another invocation" }
func (inProgress) FailureClass() string { return "in-progress" }

// defaultLockTimeout bounds a lock when ctx has no deadline.
const defaultLockTimeout = 15 * time.Minute

// Errors returned by the package. Match them with errors.Is.
var (
	// ErrInProgress: another live invocation holds the key, or an expired
	// one of another payload does whose effect could not be resolved, or
	// this call keeps its claim because its own effect is in doubt and the
	// resolver could not tell (see [Receiver.DoResolving]). Transient; its
	// failure record's class (package batch) is "in-progress".
	ErrInProgress error = inProgress{}
	// ErrConflict: the key completed (or was found applied) before with a
	// different payload: a different payload hash of the same version.
	ErrConflict = errors.New("idempotency: key completed before with a different payload")
	// ErrLeaseLost: the caller's claim was taken over or released; returned
	// by [Store.Complete] and [Store.Release].
	ErrLeaseLost = errors.New("idempotency: claim no longer held")
	// ErrInvalidScope: the [Receiver]'s Scope is empty or contains the key
	// separator ('#', settings.KeySeparator), which ends the scope in a key
	// ([Key]), so that two scopes could spell the same key. Returned,
	// wrapped with the scope, by [Receiver.Validate], Do and DoResolving.
	ErrInvalidScope = errors.New("idempotency: the scope must be non-empty and must not contain '" + settings.KeySeparator + "', the key separator")
	// ErrEmptyKey: Do or DoResolving was given an empty business key; the
	// messages without one would all share one record. Returned wrapped.
	ErrEmptyKey = errors.New("idempotency: the key must not be empty")
	// ErrNoStore: the [Receiver] has no Store. Returned by
	// [Receiver.Validate], Do and DoResolving.
	ErrNoStore = errors.New("idempotency: the receiver has no Store")
)

// Record is the stored state of a key.
type Record struct {
	Key           string
	Status        Status
	PayloadHash   string    // versioned, as payload.Hash writes it, or an earlier build's unversioned hash
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
	// Supersedes is empty for an ordinary claim. When set, it is the Token
	// of an expired IN_PROGRESS claim of another payload that the caller
	// found void (the downstream never applied the key, see [Resolver]):
	// [Store.Claim] may then take that claim over as well.
	Supersedes string
}

// Store is the persistence port of the idempotent receiver. Implementations
// must make each method atomic with respect to the others and be safe for
// concurrent use.
type Store interface {
	// Claim writes an IN_PROGRESS record for l.Key (l.PayloadHash, l.Token,
	// l.Until, l.ExpiresAt) when the key is claimable:
	//   - no record, or an expired record (l.Now at or past its ExpiresAt);
	//   - an IN_PROGRESS lock past its expiry (l.Now at or past
	//     LockExpiresAt) whose PayloadHash equals l.PayloadHash;
	//   - an IN_PROGRESS lock past its expiry whose Token equals
	//     l.Supersedes, whatever its payload: a claim the caller found void
	//     (never applied); the new payload's hash replaces the old one.
	// Any other record stands: a live COMPLETED record (whatever its Token),
	// a live lock, or an expired lock of another payload that l does not
	// supersede (a takeover compares the payload like any claim, until the
	// caller has resolved the doubt). The check and the write are one atomic
	// step: a record that changed since the caller saw it (another token)
	// is not superseded.
	//
	// It returns claimed=false with the standing record, or claimed=true
	// with, as current, the IN_PROGRESS record it replaced when it took over
	// an expired lock of a live record (the takeover is in doubt: the
	// holder's effect may have happened), and the zero Record otherwise.
	Claim(ctx context.Context, l Lease) (current Record, claimed bool, err error)
	// Complete turns the IN_PROGRESS record of l.Token into COMPLETED with
	// result, expiring at l.ExpiresAt; it keeps the record's PayloadHash.
	// A record COMPLETED by l.Token already is done (nil, unchanged): a
	// completion retried after its answer was lost is not an error.
	// ErrLeaseLost if l.Token no longer holds the key. l.Token is the
	// caller's own claim, or an expired claim of another payload whose
	// effect the caller's resolver found applied.
	Complete(ctx context.Context, l Lease, result string) error
	// Release deletes the caller's IN_PROGRESS record. ErrLeaseLost if l.Token
	// no longer holds the key.
	Release(ctx context.Context, l Lease) error
}

// Resolver asks the downstream whether it applied the effect of key (the
// business key, the downstream's idempotency key), whichever payload applied
// it. It returns the result and applied=true, applied=false when never
// applied, or an error when it cannot tell: the receiver then keeps its claim
// and fails with [ErrInProgress]. It must be safe for concurrent use.
type Resolver interface {
	Lookup(ctx context.Context, key string) (result string, applied bool, err error)
}

// ResolverFunc adapts a function to [Resolver].
type ResolverFunc func(ctx context.Context, key string) (result string, applied bool, err error)

// Lookup calls f.
func (f ResolverFunc) Lookup(ctx context.Context, key string) (string, bool, error) {
	return f(ctx, key)
}

// Resolution is what the [Resolver] answered for an in-doubt takeover.
type Resolution string

// The resolutions of an in-doubt takeover; the empty Resolution means the
// call was not in doubt.
const (
	// ResolvedApplied: the downstream had applied the key; its result was
	// recorded and the effect did not run again.
	ResolvedApplied Resolution = "applied"
	// ResolvedNotApplied: the downstream never applied the key; the effect ran.
	ResolvedNotApplied Resolution = "not-applied"
	// Unresolved: no resolver is configured; the effect ran again, and only a
	// downstream that honours the key keeps it from applying twice.
	Unresolved Resolution = "unresolved"
)

// Outcome is the result of [Receiver.Do].
type Outcome struct {
	Result    string // the effect's result, fresh, stored, or found by the resolver
	Duplicate bool   // true when the stored result was returned without running the effect
	// Unrecorded is true when the effect happened (or was found applied) but
	// its completion could not be recorded within the time left: the caller
	// acknowledges the message anyway (a redelivery would redo the effect),
	// and the receiver has reported it through OnUnrecorded.
	Unrecorded bool
	// InDoubt is true when this call took over an expired IN_PROGRESS claim,
	// of the same payload (the earlier holder's effect may have happened) or
	// of another payload found void by the resolver, or when its own effect
	// failed ambiguously and the resolver found it applied.
	InDoubt bool
	// Resolution says how an in-doubt takeover was resolved; "" when not
	// InDoubt.
	Resolution Resolution
}

// EventUnrecorded is the stable value of the "event" key of the log line a
// consumer writes from [Receiver].OnUnrecorded; metric filters and alarms
// match it.
const EventUnrecorded = "completion-unrecorded"

// defaultCompleteBudget bounds the retries of a completion after the effect
// when ctx has no deadline (or a later one).
const defaultCompleteBudget = 3 * time.Second

// storeTimeout bounds a store call made after ctx may be done (a release, a
// completion of another claim). It bounds I/O, so it is real time, unlike
// the deadlines the receiver reads on its own clock.
const storeTimeout = 2 * time.Second

// completeMargin is left before ctx's deadline when retrying a completion,
// so the caller can still report its batch.
const completeMargin = 250 * time.Millisecond

// Receiver runs an effect at most once per key. Set Store and Scope, and call
// [Receiver.Validate] where the configuration is read; Do refuses an invalid
// receiver, touching nothing. It is safe for concurrent use. An effect's
// error whose NotApplied() bool method says true (errors.As) releases the
// claim for a retry; any other is ambiguous (docs/PACKAGES.md#idempotency).
type Receiver struct {
	Store    Store
	Scope    string              // the consumer's name: non-empty, without '#'; keys are Key(Scope, key)
	Lifetime time.Duration       // how long a completed record is kept; default 720h
	Now      func() time.Time    // default time.Now
	NewToken func() string       // default: 128 random bits
	OnError  func(error, string) // called with errors it can only report (a failed release); may be nil
	// Sleep waits between completion attempts; default: it waits d, or
	// until ctx is done (then it returns ctx.Err()). Tests inject one that
	// advances their clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnUnrecorded is called once for every effect whose completion could
	// not be recorded (see [Outcome].Unrecorded), with the business key, the
	// result and the last error, so that the caller can count it (a log
	// line, a metric). May be nil. Must be safe for concurrent use.
	OnUnrecorded func(key, result string, err error)
}

// Validate reports every reason the receiver cannot run, joined: no Store
// ([ErrNoStore]), a Scope that is empty or contains '#' ([ErrInvalidScope]).
// Match them with errors.Is.
func (r *Receiver) Validate() error {
	var errs []error
	if r.Store == nil {
		errs = append(errs, ErrNoStore)
	}
	if r.Scope == "" || strings.Contains(r.Scope, settings.KeySeparator) {
		errs = append(errs, fmt.Errorf("scope %q: %w", r.Scope, ErrInvalidScope))
	}
	return errors.Join(errs...)
}

// Do runs effect unless key has run before; it is DoResolving without a
// resolver.
func (r *Receiver) Do(ctx context.Context, key, payloadHash string, effect func(context.Context) (string, error)) (Outcome, error) {
	return r.DoResolving(ctx, key, payloadHash, nil, effect)
}

// DoResolving runs effect unless key has run before, asking resolver (nil:
// none) whether an effect in doubt was applied. payloadHash is
// [payload.Hash.Sum] of the body; the lock expires at ctx's deadline (in 15
// minutes without one). It refuses an empty key ([ErrEmptyKey]) and an
// invalid receiver; it returns [ErrConflict], [ErrInProgress] (transient),
// the effect's error or a store error
// (docs/PACKAGES.md#receiverdoresolving-case-by-case).
func (r *Receiver) DoResolving(ctx context.Context, key, payloadHash string, resolver Resolver, effect func(context.Context) (string, error)) (Outcome, error) {
	if err := r.Validate(); err != nil {
		return Outcome{}, err
	}
	if key == "" {
		return Outcome{}, fmt.Errorf("receiver of scope %q: %w", r.Scope, ErrEmptyKey)
	}
	l := r.lease(ctx, key, payloadHash)
	current, claimed, err := r.Store.Claim(ctx, l)
	if err != nil {
		return Outcome{}, fmt.Errorf("claim %s: %w", l.Key, err)
	}
	if !claimed && expiredLockOfAnotherVersion(l, current) {
		// Not comparable, so not another payload: take the lock over as
		// one of this payload, in doubt (the store compares hashes as
		// bytes, so the claim names the lock it supersedes).
		l.Supersedes = current.Token
		if current, claimed, err = r.Store.Claim(ctx, l); err != nil {
			return Outcome{}, fmt.Errorf("claim %s over a lock of another hash version: %w", l.Key, err)
		}
	}
	var out Outcome
	switch {
	case claimed && current.Status == InProgress:
		// Took over an expired lock of the same payload: in doubt.
		out.InDoubt = true
		out.Resolution = Unresolved
		if resolver != nil {
			result, applied, err := resolver.Lookup(ctx, key)
			if err != nil {
				// Keep the claim: the doubt must survive until a lookup
				// answers (the lock expires at this call's deadline).
				return Outcome{}, fmt.Errorf("resolve the in-doubt takeover of %s, claim kept: %w (%w)", l.Key, err, ErrInProgress)
			}
			out.Resolution = ResolvedNotApplied
			if applied {
				out.Resolution = ResolvedApplied
				return r.complete(ctx, l, key, result, out), nil
			}
		}
	case claimed:
	case expiredLockOfAnother(l, current) && resolver != nil:
		if err := r.resolveAnother(ctx, l, key, current, resolver); err != nil {
			return Outcome{}, err
		}
		l.Supersedes = current.Token
		if current, claimed, err = r.Store.Claim(ctx, l); err != nil {
			return Outcome{}, fmt.Errorf("claim %s over a void claim: %w", l.Key, err)
		}
		if !claimed {
			return standing(l, current) // the lock changed meanwhile
		}
		out.InDoubt = true
		out.Resolution = ResolvedNotApplied
	default:
		return standing(l, current)
	}
	result, err := effect(ctx)
	if err != nil {
		return r.failed(ctx, l, key, resolver, out, err)
	}
	return r.complete(ctx, l, key, result, out), nil
}

// failed handles the error effectErr of the effect run under l: see
// DoResolving.
func (r *Receiver) failed(ctx context.Context, l Lease, key string, resolver Resolver, out Outcome, effectErr error) (Outcome, error) {
	if resolver == nil || notApplied(effectErr) {
		r.release(ctx, l, key)
		return Outcome{}, effectErr
	}
	result, applied, err := resolver.Lookup(ctx, key)
	switch {
	case err != nil:
		return Outcome{}, fmt.Errorf("resolve the failed effect of %s (%v), claim kept: %w (%w)", l.Key, effectErr, err, ErrInProgress)
	case !applied:
		r.release(ctx, l, key)
		return Outcome{}, effectErr
	}
	out.InDoubt = true
	out.Resolution = ResolvedApplied
	return r.complete(ctx, l, key, result, out), nil
}

// notApplied reports whether err says that the effect certainly did not
// happen (see [Receiver]).
func notApplied(err error) bool {
	var na interface{ NotApplied() bool }
	return errors.As(err, &na) && na.NotApplied()
}

// lease is the claim of key by this call.
func (r *Receiver) lease(ctx context.Context, key, payloadHash string) Lease {
	now := r.now()
	until, ok := ctx.Deadline()
	if !ok {
		until = now.Add(defaultLockTimeout)
	}
	lifetime := r.Lifetime
	if lifetime <= 0 {
		lifetime = defaultLifetime
	}
	return Lease{
		Key:         Key(r.Scope, key),
		PayloadHash: payloadHash,
		Token:       r.token(),
		Now:         now,
		Until:       until,
		ExpiresAt:   now.Add(lifetime),
	}
}

// expiredLockOfAnother reports whether current, a record that stood against
// l, is an IN_PROGRESS lock of another payload past its expiry: in doubt.
func expiredLockOfAnother(l Lease, current Record) bool {
	return current.Status == InProgress && !samePayload(current.PayloadHash, l.PayloadHash) && !l.Now.Before(current.LockExpiresAt)
}

// expiredLockOfAnotherVersion reports whether current, a record that stood
// against l, is an IN_PROGRESS lock past its expiry whose payload hash is of
// another version than l's: the store saw two different hashes, the
// receiver sees a lock it may take over as of the same payload.
func expiredLockOfAnotherVersion(l Lease, current Record) bool {
	return current.Status == InProgress && current.PayloadHash != l.PayloadHash &&
		samePayload(current.PayloadHash, l.PayloadHash) && !l.Now.Before(current.LockExpiresAt)
}

// samePayload reports whether a record's payload hash and a caller's may be
// of the same payload: equal, or of different versions
// ([payload.HashVersionOf]: one versioned and one not, or two versions),
// which are not comparable and so never tell another payload.
func samePayload(recorded, incoming string) bool {
	return recorded == incoming || payload.HashVersionOf(recorded) != payload.HashVersionOf(incoming)
}

// resolveAnother asks resolver about the expired lock stale of another
// payload. It returns nil when the key was never applied (stale is void),
// ErrConflict after recording stale's result when it was, and ErrInProgress
// with the lookup's error when it cannot tell.
func (r *Receiver) resolveAnother(ctx context.Context, l Lease, key string, stale Record, resolver Resolver) error {
	result, applied, err := resolver.Lookup(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("resolve the expired lock of another payload on %s: %w (%w)", l.Key, err, ErrInProgress)
	case !applied:
		return nil
	}
	// The holder applied the key and died before recording it: record it
	// for the holder's payload, by the holder's token, so that its next
	// delivery finds the result. A failure here is only reported: that
	// delivery would take the lock over and ask the resolver itself.
	held := l
	held.PayloadHash = stale.PayloadHash
	held.Token = stale.Token
	held.Until = stale.LockExpiresAt
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := r.Store.Complete(cctx, held, result); err != nil && r.OnError != nil {
		r.OnError(fmt.Errorf("complete the expired claim of %s found applied: %w", l.Key, err), key)
	}
	return fmt.Errorf("claim %s (the expired lock of another payload had applied it): %w", l.Key, ErrConflict)
}

// standing turns a claim that found a standing record into the outcome.
func standing(l Lease, current Record) (Outcome, error) {
	switch {
	case current.Status == Completed && samePayload(current.PayloadHash, l.PayloadHash):
		return Outcome{Result: current.Result, Duplicate: true}, nil
	case current.Status == Completed:
		return Outcome{}, fmt.Errorf("claim %s: %w", l.Key, ErrConflict)
	case expiredLockOfAnother(l, current):
		// Unresolved: see DoResolving for why this is not a conflict.
		return Outcome{}, fmt.Errorf("claim %s (expired lock of another payload, in doubt): %w", l.Key, ErrInProgress)
	default:
		return Outcome{}, fmt.Errorf("claim %s (lock until %s): %w", l.Key, current.LockExpiresAt.Format(time.RFC3339), ErrInProgress)
	}
}

// release gives the claim back after a failure before the effect, even when
// ctx is done, so the retry does not wait for the lock to expire.
func (r *Receiver) release(ctx context.Context, l Lease, key string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := r.Store.Release(rctx, l); err != nil && r.OnError != nil {
		r.OnError(fmt.Errorf("release %s: %w", l.Key, err), key)
	}
}

// complete records result after the effect happened, retrying with backoff
// within the time left, even when ctx is done by now, so that a redelivery
// finds it instead of running the effect again. It never fails: what cannot
// be recorded is flagged and reported.
func (r *Receiver) complete(ctx context.Context, l Lease, key, result string, out Outcome) Outcome {
	out.Result = result
	// The deadline is read on the receiver's clock, like the lock's expiry
	// (Lease.Until): never on the real one, which a simulation or a test
	// does not share.
	end := r.now().Add(defaultCompleteBudget)
	if dl, ok := ctx.Deadline(); ok {
		if byCtx := dl.Add(-completeMargin); byCtx.Before(end) {
			end = byCtx
		}
	}
	lifetime := l.ExpiresAt.Sub(l.Now)
	bg := context.WithoutCancel(ctx)
	delay := 25 * time.Millisecond
	var err error
	for {
		l.ExpiresAt = r.now().Add(lifetime)
		actx, cancel := context.WithTimeout(bg, max(end.Sub(r.now()), time.Second))
		err = r.Store.Complete(actx, l, result)
		cancel()
		if err == nil {
			return out
		}
		// A lost lease means another invocation took the key over: it is in
		// doubt there, and resolved by its lookup.
		if errors.Is(err, ErrLeaseLost) || r.now().Add(delay).After(end) {
			break
		}
		if r.sleep(bg, delay) != nil {
			break
		}
		delay = min(2*delay, time.Second)
	}
	out.Unrecorded = true
	if r.OnUnrecorded != nil {
		r.OnUnrecorded(key, result, fmt.Errorf("complete %s: %w", l.Key, err))
	}
	return out
}

func (r *Receiver) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	return wait.Sleep(ctx, d)
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
