package fifo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// OnError is what a lane does with a group whose head can never succeed.
type OnError string

// The choices of [Keeper.OnError].
const (
	// Hold (the default) parks the group until an operator releases it.
	Hold OnError = "hold"
	// Skip routes the head and lets the group go on without it, as
	// Powertools' skipGroupOnError does.
	Skip OnError = "skip"
)

// ParseOnError parses the lane setting GROUP_ORDER ("" is Hold).
func ParseOnError(s string) (OnError, error) {
	switch OnError(s) {
	case "", Hold:
		return Hold, nil
	case Skip:
		return Skip, nil
	}
	return "", fmt.Errorf("fifo: group order %q: want %q or %q", s, Hold, Skip)
}

// The reasons a head is parked for, besides "invalid: <reason>".
const (
	// ReasonExpiring: the head would expire from the source before its
	// next delivery.
	ReasonExpiring = "expiring"
	// ReasonDeliveredTooOften: the head reached Keeper.MaxReceives
	// deliveries; it dies unfinished (a timeout, out of memory).
	ReasonDeliveredTooOften = "delivered-too-often"
	// ReasonGroupParked: a record parked behind its group's head.
	ReasonGroupParked = "group-parked"
)

// Park marks a parked group. The counters tell a release when every record
// parked behind the head is back and applied.
type Park struct {
	Group  string
	Reason string // why the head can never succeed
	Head   string // the head's message id
	Queue  string // where the head went: "invalid" or "parking"
	Since  time.Time
	// Parked counts the records sent to the parking queue, the head
	// included when it went there.
	Parked int
	// Moved counts the records a release sent back to the source.
	Moved int
	// Applied counts the records of a release the consumer settled:
	// applied, or parked again.
	Applied int
	// Releasing names the release round in progress ("" when none):
	// records that carry it are the parked ones, sent back in order.
	Releasing string
	// Previous names the round a Repark ended: its records still in the
	// source are parked again with the order key they carry.
	Previous string
}

// Waiting is how many records wait in the parking queue.
func (p Park) Waiting() int { return max(p.Parked-p.Moved, 0) }

// Errors of a [Store].
var (
	// ErrNotParked: the group has no park.
	ErrNotParked = errors.New("fifo: the group is not parked")
	// ErrChanged: the park is not as the caller saw it.
	ErrChanged = errors.New("fifo: the park changed")
)

// Store keeps the parks of one lane. Every method is safe for concurrent
// use.
type Store interface {
	// Parked returns the parks of groups, read consistently; a group not
	// parked is absent.
	Parked(ctx context.Context, groups []string) (map[string]Park, error)
	// Park parks p.Group unless it is parked; it returns the stored park.
	Park(ctx context.Context, p Park) (Park, error)
	// Repark names a new head and reason of a parked group and ends its
	// release round; the round's records sent back and not applied count
	// as applied (each goes back to the parking queue, counted again, or
	// is the new head). ErrNotParked when it is not parked.
	Repark(ctx context.Context, group, head, reason, queue string) error
	// Count adds parked, moved and applied to the park's counters. When
	// round is not "", it adds only while the park's Releasing is round
	// (ErrChanged otherwise). ErrNotParked when the group is not parked.
	Count(ctx context.Context, group string, parked, moved, applied int, round string) error
	// Begin starts release round on a parked group: ErrNotParked when it
	// is not parked.
	Begin(ctx context.Context, group, round string) error
	// Release removes the park if its counters are still those of p
	// (ErrChanged otherwise); a group not parked is not an error.
	Release(ctx context.Context, p Park) error
	// List returns every park, ordered by group.
	List(ctx context.Context) ([]Park, error)
}

// Queue is the part of the SQS client the consumer uses on a FIFO lane.
type Queue interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Defaults of [Keeper].
const (
	DefaultRetention   = 4 * 24 * time.Hour // SQS's default retention
	DefaultMaxReceives = 90
	DefaultMinBackoff  = 30 * time.Second
	MaxBackoff         = 12 * time.Hour // SQS's bound on a visibility timeout
)

// Keeper is the consumer's configuration of a FIFO lane's group order.
type Keeper struct {
	Store      Store
	Queue      Queue
	SourceURL  string // where a failed head's visibility is set
	ParkingURL string // where a parked group's records go
	OnError    OnError
	// Retention is the source queue's message retention: a head is parked
	// before it would expire. Default DefaultRetention.
	Retention time.Duration
	// MaxReceives parks a head delivered this often; keep it below the
	// redrive policy's maxReceiveCount. Default DefaultMaxReceives.
	MaxReceives int
	// MinBackoff is the first failure's visibility. Default
	// DefaultMinBackoff.
	MinBackoff time.Duration
	// Rand returns a number in [0, 1) for the jitter. Default math/rand/v2.
	Rand func() float64
}

// Validate reports a Keeper that cannot keep a group's order.
func (k *Keeper) Validate() error {
	var errs []error
	if k.Queue == nil || k.SourceURL == "" || k.ParkingURL == "" {
		errs = append(errs, errors.New("fifo: Keeper needs Queue, SourceURL and ParkingURL"))
	}
	if k.Store == nil && k.OnError != Skip {
		errs = append(errs, errors.New("fifo: Keeper has no Store (only a lane that skips needs none)"))
	}
	if _, err := ParseOnError(string(k.OnError)); err != nil {
		errs = append(errs, err)
	}
	if k.Retention < 0 || k.MaxReceives < 0 || k.MinBackoff < 0 {
		errs = append(errs, errors.New("fifo: Keeper has a negative Retention, MaxReceives or MinBackoff"))
	}
	return errors.Join(errs...)
}
