package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Posting is what to append: one captured payment.
type Posting struct {
	PaymentID   string
	AccountID   string
	AmountMinor int64
	Currency    string
	CapturedAt  time.Time
}

// Entry is a posting in its account, at its place.
type Entry struct {
	Posting
	Seq int64 // 1, 2, ... within the account
}

// Ref is the entry's reference, "<accountId>/<seq>": the result the
// idempotent receiver records for a payment.
func (e Entry) Ref() string { return fmt.Sprintf("%s/%d", e.AccountID, e.Seq) }

// Ledger is the port the example's consumer writes through. Implementations
// are safe for concurrent use.
type Ledger interface {
	// Append adds p at the end of its account and returns the new entry.
	// When p.PaymentID is in the ledger already it adds nothing and returns
	// the entry it has, whatever its content. It returns [ErrFrozen] or
	// [ErrContended] (both wrapped in a [*NotAppliedError]) when nothing was
	// written; any other error may or may not have written.
	Append(ctx context.Context, p Posting) (Entry, error)
	// Lookup returns the entry of a payment and found=true, or found=false
	// when the payment was never appended. It reads what every Append
	// acknowledged before it started (a consistent read).
	Lookup(ctx context.Context, paymentID string) (e Entry, found bool, err error)
	// Entries returns an account's entries in sequence order.
	Entries(ctx context.Context, accountID string) ([]Entry, error)
	// Freeze freezes (frozen=true) or thaws an account.
	Freeze(ctx context.Context, accountID string, frozen bool) error
}

// Errors of an Append that wrote nothing.
var (
	// ErrFrozen: the account is frozen; retry after it is thawed.
	ErrFrozen = errors.New("ledger: account is frozen")
	// ErrContended: another append to the account came first; retry.
	ErrContended = errors.New("ledger: account's head moved during the append")
)

// NotAppliedError wraps an Append error after which the payment is known
// not to be in the ledger. Its NotApplied method is the behaviour homing's
// idempotent receiver looks for: it releases its claim at once instead of
// asking a resolver.
type NotAppliedError struct{ Err error }

func (e *NotAppliedError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *NotAppliedError) Unwrap() error { return e.Err }

// NotApplied reports true.
func (e *NotAppliedError) NotApplied() bool { return true }

// FailureClass is the failure class homing's batch processor records for
// the payment: "ledger-frozen" or "ledger-contended" for those causes,
// "ledger-not-applied" otherwise.
func (e *NotAppliedError) FailureClass() string {
	switch {
	case errors.Is(e.Err, ErrFrozen):
		return "ledger-frozen"
	case errors.Is(e.Err, ErrContended):
		return "ledger-contended"
	}
	return "ledger-not-applied"
}

func notApplied(format string, args ...any) error {
	return &NotAppliedError{Err: fmt.Errorf(format, args...)}
}
