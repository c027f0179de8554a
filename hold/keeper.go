package hold

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// OnError is what a lane does with a group whose head can never succeed
// (invalid, or parked by the replay).
type OnError string

// The choices of [Keeper.OnError].
const (
	// KeepHeld (the default) keeps the group held until an operator
	// releases it: order is the promise of a FIFO lane.
	KeepHeld OnError = "hold"
	// Skip releases the group at once, past its head, as Powertools'
	// skipGroupOnError does: the head is routed (invalid queue) or parked,
	// and the group's later records are applied without it.
	Skip OnError = "skip"
)

// ParseOnError parses the lane setting ("" is KeepHeld).
func ParseOnError(s string) (OnError, error) {
	switch OnError(s) {
	case "", KeepHeld:
		return KeepHeld, nil
	case Skip:
		return Skip, nil
	}
	return "", fmt.Errorf("hold: on error %q: want %q or %q", s, KeepHeld, Skip)
}

// Sender sends a message to a queue (an *sqs.Client).
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Keeper holds the groups of one FIFO lane: the store of its holds, and the
// lane's source queue, where a held record that fails goes back as its
// group's new head and where drain triggers go.
type Keeper struct {
	Store     Store
	Source    Sender
	SourceURL string
	OnError   OnError // default KeepHeld
}

// Validate reports a Keeper that cannot hold a group.
func (k *Keeper) Validate() error {
	var errs []error
	if k.Store == nil {
		errs = append(errs, errors.New("hold: Keeper has no Store"))
	}
	if k.Source == nil || k.SourceURL == "" {
		errs = append(errs, errors.New("hold: Keeper has no source queue (Source and SourceURL)"))
	}
	if _, err := ParseOnError(string(k.OnError)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Skips reports whether the lane releases a group past a head that can
// never succeed.
func (k *Keeper) Skips() bool { return k.OnError == Skip }

// SendBack sends a held record of h's group, with body and its producer's
// attrs, to the source queue as the group's head: its original id goes in
// [Attribute]. Sends of one record (origin and seq) from one version of
// the hold are deduplicated by SQS for five minutes: a drain that stopped
// between the send and its write of the hold sends it again as the same
// message, unless a record was held behind the hold meanwhile (a new
// version: the second copy is absorbed by the idempotent receiver). The
// record held again and sent back later (its group released past the
// first copy meanwhile) is a new message. record.SendBack sends a
// [Message].
func (k *Keeper) SendBack(ctx context.Context, h Hold, body string, attrs map[string]types.MessageAttributeValue, origin, seq string) error {
	out := maps.Clone(attrs)
	if out == nil {
		out = map[string]types.MessageAttributeValue{}
	}
	out[Attribute] = markerAttribute(marker{Origin: origin})
	_, err := k.Source.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(k.SourceURL), MessageBody: aws.String(body), MessageAttributes: out,
		MessageGroupId:         aws.String(h.Group),
		MessageDeduplicationId: aws.String(dedupID("back", origin, seq, strconv.FormatInt(h.Version, 10))),
	})
	if err != nil {
		return fmt.Errorf("hold: send held record %s back to the source: %w", origin, err)
	}
	return nil
}

// Trigger sends a drain trigger for group to the source queue; triggers with
// the same nonce within five minutes are one.
func (k *Keeper) Trigger(ctx context.Context, group, nonce string) error {
	_, err := k.Source.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(k.SourceURL), MessageBody: aws.String(TriggerBody),
		MessageAttributes: map[string]types.MessageAttributeValue{Attribute: markerAttribute(marker{Drain: true})},
		MessageGroupId:    aws.String(group), MessageDeduplicationId: aws.String(dedupID("drain", group, nonce)),
	})
	if err != nil {
		return fmt.Errorf("hold: send a drain trigger to group %q: %w", group, err)
	}
	return nil
}

// Release lets a held group go on past its head (an operator's release, or
// a head that can never succeed on a lane that skips): the hold turns
// Draining and a trigger goes to the source, so the held records are
// applied in order without the head. It returns the hold as written.
func (k *Keeper) Release(ctx context.Context, h Hold, now time.Time) (Hold, error) {
	if h.State != Draining {
		// No head while it drains: a copy of the released head brought
		// back later is applied where it comes, not taken for the head's.
		h.State = Draining
		h.Head = ""
		h.HeadBody = ""
		var err error
		if h, err = k.Store.Update(ctx, h, now); err != nil {
			return Hold{}, err
		}
	}
	return h, k.Trigger(ctx, h.Group, "release-"+strconv.FormatInt(h.Version, 10))
}

// Parked is the replay's word that it parked the dead letter origin of
// group for reason. When it is the group's head, the hold says so (and a
// lane that skips releases the group); otherwise it changes nothing.
func (k *Keeper) Parked(ctx context.Context, group, origin, reason string, now time.Time) error {
	h, ok, err := k.headed(ctx, group, origin)
	if err != nil || !ok {
		return err
	}
	h.Parked = "parked: " + reason
	if h, err = k.Store.Update(ctx, h, now); err != nil {
		return err
	}
	if k.Skips() {
		_, err = k.Release(ctx, h, now)
	}
	return err
}

// Applied is the replay's word that the effect of origin, of group, is
// applied already (its completion record says so): it removed origin's
// dead letter (the consumer applied it, then could not move its hold on
// before the record's last delivery), or its sweep found the group held
// behind it (a copy acknowledged elsewhere). When it is the group's head,
// the group drains: the head will not come back, and it needs not.
// Otherwise it changes nothing.
func (k *Keeper) Applied(ctx context.Context, group, origin string, now time.Time) error {
	h, ok, err := k.headed(ctx, group, origin)
	if err != nil || !ok {
		return err
	}
	h.Parked = ""
	_, err = k.Release(ctx, h, now)
	return err
}

// headed returns the hold of group when origin is its head and it is held.
func (k *Keeper) headed(ctx context.Context, group, origin string) (Hold, bool, error) {
	hs, err := k.Store.Holds(ctx, []string{group})
	if err != nil {
		return Hold{}, false, err
	}
	h, ok := hs[group]
	return h, ok && h.Head == origin && h.State == Held, nil
}

// Sweep is the scheduled run's care of the lane's holds: a hold left
// Draining for longer than stale (its consumer crashed, or its trigger was
// lost) gets a trigger, and on a lane that skips a parked head's group is
// released. It returns every hold, as listed before the sweep, and the
// first error (the others are tried all the same).
func (k *Keeper) Sweep(ctx context.Context, now time.Time, stale time.Duration) ([]Hold, error) {
	holds, err := k.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, h := range holds {
		switch {
		case h.State == Draining && now.Sub(h.Updated) >= stale:
			// One trigger per stale period of the hold's age: a sweep
			// every run sends it again only once the last one is stale too.
			period := int64(now.Sub(h.Updated) / max(stale, time.Second))
			errs = append(errs, k.Trigger(ctx, h.Group, "sweep-"+strconv.FormatInt(h.Version, 10)+"-"+strconv.FormatInt(period, 10)))
		case h.State == Held && h.Parked != "" && k.Skips():
			_, err := k.Release(ctx, h, now)
			errs = append(errs, err)
		}
	}
	return holds, errors.Join(errs...)
}

// dedupID is a FIFO deduplication id for parts (at most 128 characters).
func dedupID(kind string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return kind + "-" + hex.EncodeToString(h.Sum(nil))
}
