package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/parking"
	"github.com/homingdlq/homing/internal/settings"
)

// The consumer's side of package fifo: how a FIFO batch runs when
// Options.Groups is set. A failed head stays in the source with its
// visibility set to a backoff, so SQS holds its group; a head that can
// never succeed parks its group. Every write is done before the record it
// concerns is acknowledged. docs/ORDER.md has the protocol.

// readParks reads the parks of the batch's FIFO groups in one call.
func (p *Processor) readParks(ctx context.Context, records []events.SQSMessage) (map[string]fifo.Park, error) {
	k := p.opts.Groups
	if k == nil || k.Store == nil {
		return nil, nil
	}
	var groups []string
	seen := map[string]bool{}
	for _, r := range records {
		if g := groupOf(r); settings.IsFIFO(r.EventSourceARN) && !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return nil, nil
	}
	parks, err := k.Store.Parked(ctx, groups)
	if err != nil {
		return nil, fmt.Errorf("read the parks of the batch's message groups: %w", err)
	}
	return parks, nil
}

func groupOf(r events.SQSMessage) string { return r.Attributes["MessageGroupId"] }

// groupRun runs the records of one message group of a batch, in order.
type groupRun struct {
	p     *Processor
	k     *fifo.Keeper
	group string
	park  *fifo.Park // nil: the group is not parked
	err   error      // the parks could not be read: every record fails
}

func (p *Processor) newGroupRun(first events.SQSMessage, parks map[string]fifo.Park, err error) *groupRun {
	g := &groupRun{p: p, k: p.opts.Groups, group: groupOf(first), err: err}
	if pk, ok := parks[g.group]; ok {
		g.park = &pk
	}
	return g
}

func (g *groupRun) run(ctx context.Context, records []events.SQSMessage, unit []int, outcomes []Outcome) {
	blocked := false
	for _, i := range unit {
		msg := records[i]
		reason := ""
		n := g.number(msg)
		kind := endedNot
		if g.park != nil && n == 0 {
			kind = g.ended(msg)
		}
		switch {
		case blocked:
			outcomes[i] = Blocked
			g.p.log(ctx, msg, Blocked, nil, nil, slog.String("reason", "earlier record of the message group failed"))
		case g.err != nil:
			outcomes[i] = Failed
			g.p.log(ctx, msg, Failed, nil, g.err)
		case g.park != nil && g.park.Queue == "invalid" && msg.MessageId == g.park.Head:
			// A copy of the batch ran it: it is in the invalid queue.
			outcomes[i] = Invalid
			reason = strings.TrimPrefix(g.park.Reason, "invalid: ")
			g.p.log(ctx, msg, Invalid, nil, nil, slog.String("reason", reason), slog.String("detail", "the group's parked head, in the invalid queue already"))
		case kind == endedKept:
			// A copy of an ended round, delivered again, whose record
			// stays in the parking queue.
			outcomes[i] = Parked
			g.p.log(ctx, msg, Parked, nil, nil, slog.String("reason", fifo.ReasonGroupParked), slog.String("group", g.group),
				slog.String("detail", "a release's copy delivered again after its round ended; its record stays in the parking queue"))
		case kind == endedSettled:
			// Settled in its round: it runs again (idempotent).
			outcomes[i], reason = g.p.runRecord(ctx, msg)
		case g.park != nil && n == 0:
			outcomes[i] = g.parkBehind(ctx, msg)
		case n > 0 && g.park.Stop > 0 && n >= g.park.Stop:
			// At or behind the copy that parked the group again: its
			// record stays in the parking queue.
			outcomes[i] = g.drop(ctx, msg, n)
		case g.p.tooLate(ctx):
			outcomes[i] = NotStarted
			g.p.log(ctx, msg, NotStarted, nil, nil, slog.String("reason", "invocation deadline too close"))
		default:
			outcomes[i], reason = g.head(ctx, msg, n)
		}
		if !outcomes[i].acknowledged() {
			reason = classOf(ctx, msg)
		}
		if g.p.opts.OnOutcome != nil {
			g.p.opts.OnOutcome(ctx, outcomes[i], reason)
		}
		if !outcomes[i].acknowledged() {
			blocked = true
		} else if receives(msg) > 1 && outcomes[i] != Blocked {
			g.delete(ctx, msg)
		}
	}
}

// number returns msg's number if it is a copy of a parked record sent
// back by the park's release round (0 when it is not, or there is no
// park).
func (g *groupRun) number(msg events.SQSMessage) int {
	if g.park == nil || g.park.Releasing == "" {
		return 0
	}
	return parking.Released(MessageAttributes(msg.MessageAttributes), msg.Body, g.park.Releasing)
}

// What a copy of an ended round is.
const (
	endedNot     = iota // no copy of the park's ended rounds
	endedSettled        // run (applied or rejected) in its round
	endedKept           // at or behind its round's stop: its record stays parked
)

// ended says whether msg is a copy of one of the park's ended rounds, and
// which kind.
func (g *groupRun) ended(msg events.SQSMessage) int {
	attrs := MessageAttributes(msg.MessageAttributes)
	for _, r := range g.park.Rounds {
		round, stop, _ := strings.Cut(r, "/")
		if n := parking.Released(attrs, msg.Body, round); n > 0 {
			if s, _ := strconv.Atoi(stop); s > 0 && n >= s {
				return endedKept
			}
			return endedSettled
		}
	}
	return endedNot
}

// count writes c for msg to the group's park. A count that parks the
// group again reads the park back: another delivery of the copy may have
// settled it first, and then its stop is not stored.
func (g *groupRun) count(ctx context.Context, msg events.SQSMessage, c fifo.Count) error {
	c.Seq = parking.SeqKey(msg.Attributes["SequenceNumber"])
	if c.Index > 0 {
		c.Round = g.park.Releasing
	}
	err := g.k.Store.Count(ctx, g.group, c)
	if err == nil && c.Stop > 0 {
		var parks map[string]fifo.Park
		if parks, err = g.k.Store.Parked(ctx, []string{g.group}); err == nil {
			pk, ok := parks[g.group]
			if !ok {
				err = fifo.ErrNotParked
			}
			g.park = &pk
		}
	}
	if err != nil {
		if errors.Is(err, fifo.ErrNotParked) {
			g.park = nil
		}
		return fmt.Errorf("count a record of the parked group: %w", err)
	}
	if c.Stop > 0 {
		if g.park.Stop == c.Stop && g.park.Head == c.Head {
			g.p.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "group parked again", slog.String("group", g.group),
				slog.String("head", c.Head), slog.String("reason", c.Reason))
		}
		return nil
	}
	g.park.Parked += c.Parked
	g.park.Settled = max(g.park.Settled, c.Index)
	return nil
}

// drop acknowledges copy n of a release round that is not to run.
func (g *groupRun) drop(ctx context.Context, msg events.SQSMessage, n int) Outcome {
	if n > g.park.Settled {
		if err := g.count(ctx, msg, fifo.Count{Index: n}); err != nil {
			o, _ := g.fail(ctx, msg, err)
			return o
		}
	}
	g.p.log(ctx, msg, Parked, nil, nil, slog.String("reason", fifo.ReasonGroupParked), slog.String("group", g.group),
		slog.String("detail", "a release's copy of a record that stays in the parking queue"))
	return Parked
}

// head runs the first record of the group that is not parked, or copy
// n > 0 of a release round.
func (g *groupRun) head(ctx context.Context, msg events.SQSMessage, n int) (Outcome, string) {
	receives := receives(msg)
	if n > 0 && n <= g.park.Settled {
		// Settled already, by an invocation that died after: it runs
		// again (idempotent) and is acknowledged whatever its deliveries.
		return g.p.runRecord(ctx, msg)
	}
	if n > 0 && n > g.park.Sent {
		// A copy the release sent but could not count: counted here, its
		// round does not end before it settles.
		if err := g.k.Store.Sent(ctx, g.group, g.park.Releasing, n); err != nil {
			return g.fail(ctx, msg, fmt.Errorf("count a copy the release sent: %w", err))
		}
		g.park.Sent = n
	}
	if why := g.parkReason(msg, receives, false); why != "" {
		return g.parkFor(ctx, msg, n, why)
	}
	leased := receives > 1 && g.hide(ctx, msg, receives)
	o, reason := g.p.runRecord(ctx, msg)
	var err error
	switch {
	case o == Succeeded && n > 0:
		err = g.count(ctx, msg, fifo.Count{Index: n})
	case o == Invalid && n > 0: // its record is in the invalid queue: those after it stay parked
		err = g.count(ctx, msg, fifo.Count{Index: n, Stop: n + 1, Head: msg.MessageId, Reason: "invalid: " + reason, Queue: "invalid"})
	case o == Invalid && g.k.OnError != fifo.Skip:
		err = g.parkGroup(ctx, msg, "invalid: "+reason, "invalid")
	case o != Succeeded && o != Invalid:
		if why := g.parkReason(msg, receives, true); why != "" {
			return g.parkFor(ctx, msg, n, why)
		}
		if !leased {
			g.hide(ctx, msg, receives)
		}
	}
	if err != nil {
		return g.fail(ctx, msg, err)
	}
	return o, reason
}

// parkReason says why the head must be parked ("" when it need not):
// before it runs, delivered too often, or so close to its expiry (half
// the margin) that it may not run again; after it failed, within the
// margin of its expiry, too close to wait for a backoff. A record
// delivered often behind a failing head runs before it may be parked.
func (g *groupRun) parkReason(msg events.SQSMessage, n int, failed bool) string {
	if !failed && n >= g.maxReceives() {
		return fifo.ReasonDeliveredTooOften
	}
	limit := g.margin() / 2
	if failed {
		limit = g.margin()
	}
	if left, ok := g.lifeLeft(msg); ok && left < limit {
		return fifo.ReasonExpiring
	}
	return ""
}

// parkFor parks the head msg for why: copy n > 0 of a release round
// stops the round; another head parks its group.
func (g *groupRun) parkFor(ctx context.Context, msg events.SQSMessage, n int, why string) (Outcome, string) {
	if n == 0 {
		return g.parkHead(ctx, msg, why), why
	}
	// Its record stays at the head of the parking queue.
	if err := g.count(ctx, msg, fifo.Count{Index: n, Stop: n, Head: msg.MessageId, Reason: why, Queue: "parking"}); err != nil {
		return g.fail(ctx, msg, err)
	}
	switch {
	case g.park.Stop == n && g.park.Head == msg.MessageId:
		g.p.log(ctx, msg, Parked, nil, nil, slog.String("reason", why), slog.String("group", g.group))
		return Parked, why
	case g.park.Stop > 0 && n >= g.park.Stop:
		return g.drop(ctx, msg, n), ""
	}
	// Another delivery of the copy settled it first: it runs again
	// (idempotent).
	return g.p.runRecord(ctx, msg)
}

// hide sets msg's visibility to its backoff: an exponential of its
// deliveries n, with jitter, and ending a margin before it would expire. A
// head delivered again is hidden before it runs, so that a record that
// kills its invocation waits as long as one that fails. It reports whether
// the visibility was set.
func (g *groupRun) hide(ctx context.Context, msg events.SQSMessage, n int) bool {
	d := g.backoff(msg, n)
	_, err := g.k.Queue.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(g.k.SourceURL), ReceiptHandle: aws.String(msg.ReceiptHandle), VisibilityTimeout: int32(d / time.Second)})
	if err != nil {
		g.p.opts.Logger.WarnContext(ctx, "group backoff", slog.String("messageId", msg.MessageId), slog.String("group", g.group), slog.String("error", err.Error()))
		return false
	}
	return true
}

func (g *groupRun) backoff(msg events.SQSMessage, n int) time.Duration {
	d := g.minBackoff() << min(max(n-1, 0), 20)
	d = min(d, settings.MaxGroupBackoff)
	r := rand.Float64
	if g.k.Rand != nil {
		r = g.k.Rand
	}
	d = time.Duration(float64(d) * (0.75 + 0.25*r()))
	if left, ok := g.lifeLeft(msg); ok {
		d = min(d, left-g.margin()/2)
	}
	return max(d, 0).Truncate(time.Second)
}

// lifeLeft is how long msg has before its retention ends.
func (g *groupRun) lifeLeft(msg events.SQSMessage) (time.Duration, bool) {
	ms, err := strconv.ParseInt(msg.Attributes["SentTimestamp"], 10, 64)
	if err != nil {
		return 0, false
	}
	return time.UnixMilli(ms).Add(g.retention()).Sub(g.p.opts.Now()), true
}

func (g *groupRun) retention() time.Duration {
	return orDefault(g.k.Retention, settings.DefaultSourceRetention)
}
func (g *groupRun) minBackoff() time.Duration {
	return orDefault(g.k.MinBackoff, settings.DefaultGroupMinBackoff)
}

// margin is how long before its expiry a head is parked: an eighth of the
// retention, at most six hours.
func (g *groupRun) margin() time.Duration { return min(g.retention()/8, 6*time.Hour) }

func (g *groupRun) maxReceives() int {
	if g.k.MaxReceives > 0 {
		return g.k.MaxReceives
	}
	return settings.DefaultMaxReceives
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func receives(msg events.SQSMessage) int {
	n, _ := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	return n
}

// parkHead parks the group behind msg, which goes to the parking queue
// for why; on a lane that skips only msg is parked.
func (g *groupRun) parkHead(ctx context.Context, msg events.SQSMessage, why string) Outcome {
	if g.k.OnError != fifo.Skip {
		if err := g.parkGroup(ctx, msg, why, "parking"); err != nil {
			o, _ := g.fail(ctx, msg, err)
			return o
		}
	}
	if err := g.toParking(ctx, msg, why); err != nil {
		o, _ := g.fail(ctx, msg, err)
		return o
	}
	g.p.log(ctx, msg, Parked, nil, nil, slog.String("reason", why), slog.String("group", g.group))
	return Parked
}

// parkGroup writes the group's park with msg as its head, so that the
// group's later records go to the parking queue.
func (g *groupRun) parkGroup(ctx context.Context, msg events.SQSMessage, why, queue string) error {
	pk, err := g.k.Store.Park(ctx, fifo.Park{Group: g.group, Reason: why, Head: msg.MessageId, Queue: queue, Since: g.p.opts.Now().UTC()})
	if err != nil {
		return fmt.Errorf("park the message group: %w", err)
	}
	g.park = &pk
	g.p.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "group parked", slog.String("group", g.group),
		slog.String("head", pk.Head), slog.String("reason", pk.Reason))
	return nil
}

// parkBehind sends a record of a parked group to the parking queue, behind
// its head.
func (g *groupRun) parkBehind(ctx context.Context, msg events.SQSMessage) Outcome {
	if err := g.toParking(ctx, msg, fifo.ReasonGroupParked); err != nil {
		o, _ := g.fail(ctx, msg, err)
		return o
	}
	g.p.log(ctx, msg, Parked, nil, nil, slog.String("reason", fifo.ReasonGroupParked), slog.String("group", g.group), slog.String("head", g.park.Head))
	return Parked
}

// toParking counts msg in the group's park, then sends it to the parking
// queue under its group. When the park is gone (released meanwhile), msg
// fails, to run when it comes again.
func (g *groupRun) toParking(ctx context.Context, msg events.SQSMessage, why string) error {
	if g.park != nil {
		if err := g.count(ctx, msg, fifo.Count{Parked: 1}); err != nil {
			return err
		}
	}
	producer := MessageAttributes(msg.MessageAttributes)
	attrs, err := parking.Attributes(producer, msg.MessageId, why, g.p.opts.Now())
	if err != nil || envelope.MessageBytes(len(msg.Body), attrs) > envelope.MaxMessageBytes {
		// No room for the note: the record goes as it came; its park
		// says why.
		attrs = producer
	}
	_, err = g.k.Queue.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(g.k.ParkingURL), MessageBody: aws.String(msg.Body), MessageAttributes: attrs,
		MessageGroupId: aws.String(g.group), MessageDeduplicationId: aws.String(msg.MessageId)})
	if err != nil {
		return fmt.Errorf("send to the parking queue: %w", err)
	}
	return nil
}

// delete deletes msg from the source at once: it came before, so an
// invocation that dies on a later record of the batch (a timeout, out of
// memory) may be what brings it back; deleted, it does not come again.
func (g *groupRun) delete(ctx context.Context, msg events.SQSMessage) {
	_, err := g.k.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(g.k.SourceURL), ReceiptHandle: aws.String(msg.ReceiptHandle)})
	if err != nil {
		g.p.opts.Logger.WarnContext(ctx, "delete a settled record", slog.String("messageId", msg.MessageId), slog.String("group", g.group), slog.String("error", err.Error()))
	}
}

// fail reports msg failed for err; the group's later records wait behind
// it in the source.
func (g *groupRun) fail(ctx context.Context, msg events.SQSMessage, err error) (Outcome, string) {
	g.p.log(ctx, msg, Failed, nil, err)
	return Failed, ""
}
