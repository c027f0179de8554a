package fifo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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

// Park marks a parked group. The parking queue keeps the group's records
// in order; a release round sends its first ones back to the source as
// numbered copies and takes them out once the consumer settled them.
type Park struct {
	Group  string
	Reason string // why the head can never succeed
	Head   string // the head's message id
	Queue  string // where the head went: "invalid" or "parking"
	Since  time.Time
	// Parked counts the records the consumer sent to the parking queue.
	Parked int
	// Moved counts the records releases took out of the parking queue.
	Moved int
	// Releasing is the release round in progress ("" when none), the key
	// of its copies' marks.
	Releasing string
	// Batch names the round's records: their parking queue message ids,
	// in order. Copy n is Batch[n-1].
	Batch []string
	// Keys are the deduplication ids of Batch's records (their message ids
	// in the source), and Recent those of the last records taken out, at
	// most 20: a record parked twice is taken out once.
	Keys, Recent []string
	// Rounds are the last rounds ended (at most 8), each as
	// "<round>/<stop>": a copy of one, delivered again, was settled.
	Rounds []string
	// Sent counts the copies sent to the source.
	Sent int
	// Settled counts the copies the consumer settled, in order.
	Settled int
	// Stop is the number of the copy that parked the group again (0:
	// none): its record and those after it stay in the parking queue, or
	// for an invalid head, those after it.
	Stop int
	// Seq is the source sequence number of the last record counted.
	Seq string
}

// Waiting is how many records wait in the parking queue.
func (p Park) Waiting() int { return max(p.Parked-p.Moved, 0) }

// Taken is how many of the round's records leave the parking queue once
// every copy is settled.
func (p Park) Taken() int {
	if p.Stop > 0 {
		return min(p.Stop-1, p.Sent)
	}
	return p.Sent
}

// recentKeys bounds Park.Recent: a record is parked again at most one
// batch (ten records) after it was parked first. endedRounds bounds
// Park.Rounds.
const (
	recentKeys  = 20
	endedRounds = 8
)

// Ended returns p as ending its round leaves it: the round's Taken
// records counted in Moved and their keys in Recent, the round in Rounds.
func (p Park) Ended() Park {
	taken := p.Taken()
	p.Moved += taken
	if taken <= len(p.Keys) {
		p.Recent = append(slices.Clone(p.Recent), p.Keys[:taken]...)
		p.Recent = p.Recent[max(len(p.Recent)-recentKeys, 0):]
	}
	p.Rounds = append(slices.Clone(p.Rounds), p.Releasing+"/"+strconv.Itoa(p.Stop))
	p.Rounds = p.Rounds[max(len(p.Rounds)-endedRounds, 0):]
	p.Releasing, p.Batch, p.Keys, p.Sent, p.Settled, p.Stop = "", nil, nil, 0, 0, 0
	return p
}

// Count is what the consumer did with a record of a parked group.
type Count struct {
	// Seq is the record's source sequence number (parking.SeqKey in the consumer): a record is
	// counted once. "" counts always.
	Seq string
	// Parked is 1 when the record went to the parking queue.
	Parked int
	// Round and Index name a copy of a release round, settled.
	Round string
	Index int
	// Stop, when not 0, is the copy that parks the group again, for
	// Reason, as Head, its record in Queue.
	Stop                int
	Head, Reason, Queue string
}

// Errors of a [Store].
var (
	// ErrNotParked: the group has no park.
	ErrNotParked = errors.New("fifo: the group is not parked")
	// ErrChanged: the park is not as the caller saw it.
	ErrChanged = errors.New("fifo: the park changed")
)

// Store keeps the parks of one lane. Every method is safe for concurrent
// use. ErrNotParked when the group is not parked, for all but Parked,
// Park, Release and List.
type Store interface {
	// Parked returns the parks of groups, read consistently; a group not
	// parked is absent.
	Parked(ctx context.Context, groups []string) (map[string]Park, error)
	// Park parks p.Group unless it is parked (counters and round empty);
	// it returns the stored park.
	Park(ctx context.Context, p Park) (Park, error)
	// Count adds c.Parked to Parked; with c.Index it raises Settled to
	// c.Index (ErrChanged unless the round is c.Round), and with c.Stop
	// sets Stop, Head, Reason and Queue. Nothing changes when c.Seq is not
	// above Seq, or Settled is c.Index already: counted, nil.
	Count(ctx context.Context, group string, c Count) error
	// Begin starts round with batch and its keys: ErrChanged while a round
	// is in progress.
	Begin(ctx context.Context, group, round string, batch, keys []string) error
	// Sent raises the round's Sent to n: ErrChanged unless the round is
	// round.
	Sent(ctx context.Context, group, round string, n int) error
	// End ends round, leaving the park as Park.Ended: ErrChanged unless
	// round is in progress with every copy sent settled.
	End(ctx context.Context, group, round string) error
	// Release removes the park if no round is in progress and Parked and
	// Moved are still those of p (ErrChanged otherwise); a group not parked
	// is not an error.
	Release(ctx context.Context, p Park) error
	// List returns every park, ordered by group.
	List(ctx context.Context) ([]Park, error)
}

// Queue is the part of the SQS client the consumer uses on a FIFO lane.
type Queue interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// Keeper is the consumer's configuration of a FIFO lane's group order.
type Keeper struct {
	Store      Store
	Queue      Queue
	SourceURL  string // where a failed head's visibility is set
	ParkingURL string // where a parked group's records go
	OnError    OnError
	// Retention is the source queue's message retention: a head is parked
	// before it would expire. Default 96h (SQS's default).
	Retention time.Duration
	// MaxReceives parks a head delivered this often; keep it below the
	// redrive policy's maxReceiveCount. Default 90.
	MaxReceives int
	// MinBackoff is the first failure's visibility. Default 30s; the
	// backoff doubles up to SQS's bound on a visibility timeout, 12h.
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
