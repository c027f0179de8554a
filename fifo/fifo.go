package fifo

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// Park marks a parked group. Its counters tell a release when every record
// parked behind the head is back in the source and settled.
type Park struct {
	Group  string
	Reason string // why the head can never succeed
	Head   string // the head's message id
	Queue  string // where the head went: "invalid" or "parking"
	Since  time.Time
	// Parked counts the records sent to the parking queue, the head
	// included when it went there.
	Parked int
	// Moved counts the records releases sent back to the source; each
	// carries its number.
	Moved int
	// Applied is the highest number of a record sent back that the
	// consumer settled: applied, or parked again.
	Applied int
	// Releasing is the release round in progress ("" when none), the key
	// of its records' marks.
	Releasing string
	// Previous is the round a Repark ended: its records still in the
	// source are parked again.
	Previous string
	// Seq is the source sequence number of the last record counted.
	Seq string
	// LastMoved is the parking queue's message id last counted moved.
	LastMoved string
}

// Waiting is how many records wait in the parking queue.
func (p Park) Waiting() int { return max(p.Parked-p.Moved, 0) }

// Count is what the consumer did with a record of a parked group.
type Count struct {
	// Seq is the record's source sequence number (SeqKey): a record is
	// counted once. "" counts always.
	Seq string
	// Parked is 1 when the record went to the parking queue.
	Parked int
	// Index is the number of a record sent back, settled (0: none).
	Index int
}

// SeqKey returns the SQS sequence number seq in a form that orders as
// the number does ("" when seq is not one).
func SeqKey(seq string) string {
	if seq == "" || len(seq) > 40 || strings.Trim(seq, "0123456789") != "" {
		return ""
	}
	return strings.Repeat("0", 40-len(seq)) + seq
}

// Errors of a [Store].
var (
	// ErrNotParked: the group has no park.
	ErrNotParked = errors.New("fifo: the group is not parked")
	// ErrChanged: the park is not as the caller saw it.
	ErrChanged = errors.New("fifo: the park changed")
)

// Store keeps the parks of one lane. Every method is safe for concurrent
// use; every write but Release is idempotent.
type Store interface {
	// Parked returns the parks of groups, read consistently; a group not
	// parked is absent.
	Parked(ctx context.Context, groups []string) (map[string]Park, error)
	// Park parks p.Group unless it is parked (counters and round empty);
	// it returns the stored park.
	Park(ctx context.Context, p Park) (Park, error)
	// Repark names a new head, reason and queue of a parked group; a round
	// in progress ends and becomes Previous. ErrNotParked when it is not
	// parked.
	Repark(ctx context.Context, group, head, reason, queue string) error
	// Count adds c.Parked to Parked and raises Applied to c.Index, unless
	// c.Seq is not above Seq (counted already: nil). ErrNotParked when the
	// group is not parked.
	Count(ctx context.Context, group string, c Count) error
	// Begin starts round: Releasing is round, Previous "", Applied Moved.
	// ErrChanged unless no round is in progress and Applied >= Moved;
	// ErrNotParked when the group is not parked.
	Begin(ctx context.Context, group, round string) error
	// Move counts parking queue message id sent back as record number
	// index: Moved is index, LastMoved id. Counting id again is nil;
	// ErrChanged when Moved is not index-1. It reports whether round is
	// still the round in progress.
	Move(ctx context.Context, group, round, id string, index int) (current bool, err error)
	// Release removes the park if its counters and round are still those
	// of p (ErrChanged otherwise); a group not parked is not an error.
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
