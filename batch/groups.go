package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/record"
	"github.com/homingdlq/homing/settings"
)

// The consumer's side of package hold: how a FIFO batch runs when
// Options.Groups is set. A group is free (no hold), Held (its head, named by
// its original id, has not been applied: every other record of the group is
// stored behind the hold) or Draining (the head was applied or released: the
// held records are applied in order before anything newer). Every write is
// done before the record it concerns is acknowledged, so a crash at any
// point leaves a record in the source queue, in the hold, or applied (and
// then absorbed by the lane's idempotent receiver when it comes again).

// drainPage is how many held records a drain reads at a time.
const drainPage = 10

// maxConflicts bounds the retries of a hold write that lost to a concurrent
// one (a copy of the batch in a second invocation).
const maxConflicts = 3

// errHoldsUnread fails the records of a batch whose holds could not be read:
// a record of a held group must not be applied.
var errHoldsUnread = errors.New("read the holds of the batch's message groups")

// readHolds reads the holds of the batch's FIFO groups in one call.
func (p *Processor) readHolds(ctx context.Context, records []events.SQSMessage) (map[string]hold.Hold, error) {
	if p.opts.Groups == nil {
		return nil, nil
	}
	var groups []string
	seen := map[string]bool{}
	for _, r := range records {
		if g := record.Group(r); settings.IsFIFO(r.EventSourceARN) && !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return nil, nil
	}
	holds, err := p.opts.Groups.Store.Holds(ctx, groups)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errHoldsUnread, err)
	}
	return holds, nil
}

// groupRun runs the records of one message group of a batch, in order, with
// the group's hold: h is nil while the group is free.
type groupRun struct {
	p     *Processor
	k     *hold.Keeper
	group string
	h     *hold.Hold
	err   error // the holds could not be read: every record fails
}

func (p *Processor) newGroupRun(first events.SQSMessage, holds map[string]hold.Hold, err error) *groupRun {
	g := &groupRun{p: p, k: p.opts.Groups, group: record.Group(first), err: err}
	if h, ok := holds[g.group]; ok {
		g.h = &h
	}
	return g
}

func (g *groupRun) run(ctx context.Context, records []events.SQSMessage, unit []int, outcomes []Outcome) {
	blocked := false
	for _, i := range unit {
		msg := records[i]
		reason := ""
		switch {
		case blocked:
			outcomes[i] = Blocked
			g.p.log(ctx, msg, Blocked, nil, nil, slog.String("reason", "earlier record of the message group failed"))
		case g.err != nil:
			outcomes[i] = Failed
			g.p.log(ctx, msg, Failed, nil, g.err)
		case g.p.tooLate(ctx):
			outcomes[i] = NotStarted
			g.notStarted(ctx, msg)
			g.p.log(ctx, msg, NotStarted, nil, nil, slog.String("reason", "invocation deadline too close"))
		default:
			outcomes[i], reason = g.record(ctx, msg)
		}
		if g.p.opts.OnOutcome != nil {
			g.p.opts.OnOutcome(ctx, outcomes[i], reason)
		}
		// A failed record holds its group, so the records after it are
		// held, not blocked: only a record the group could not be held
		// behind (its hold unwritten) blocks them, in the source.
		if !outcomes[i].acknowledged() && g.h == nil {
			blocked = true
		}
	}
}

// notStarted holds a free group behind a record that goes back unstarted:
// should every delivery of it run out of time, it would dead-letter with
// its group free, and the group's next record would be applied first.
func (g *groupRun) notStarted(ctx context.Context, msg events.SQSMessage) {
	if g.h != nil || g.err != nil || record.IsTrigger(msg) {
		return
	}
	if h, err := g.begin(ctx, msg, ""); err == nil {
		g.h = &h
	}
}

// begin holds the group behind msg, unless it is held already.
func (g *groupRun) begin(ctx context.Context, msg events.SQSMessage, parked string) (hold.Hold, error) {
	h := hold.Hold{Group: g.group, Head: record.Origin(msg), HeadBody: hold.HeadBodyOf(msg.Body), Parked: parked}
	return g.k.Store.Begin(ctx, h, g.p.opts.Now())
}

// record runs one record of the group as the group's hold says.
func (g *groupRun) record(ctx context.Context, msg events.SQSMessage) (Outcome, string) {
	if g.h != nil && g.h.State == hold.Draining {
		if err := g.drain(ctx); err != nil {
			return g.fail(ctx, msg, fmt.Errorf("drain the group's held records: %w", err))
		}
	}
	switch {
	case record.IsTrigger(msg):
		g.p.log(ctx, msg, Trigger, nil, nil)
		return Trigger, ""
	case g.h == nil:
		return g.free(ctx, msg)
	case g.h.State == hold.Held && record.Origin(msg) == g.h.Head:
		return g.head(ctx, msg)
	default:
		return g.store(ctx, msg)
	}
}

// free runs a record of a free group; a failure holds the group behind it.
// A record delivered again holds its group before it runs: its earlier
// delivery failed or died unfinished (an invocation past its timeout
// writes nothing), and should every delivery die so, it would dead-letter
// with its group free.
func (g *groupRun) free(ctx context.Context, msg events.SQSMessage) (Outcome, string) {
	if n, _ := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"]); n > 1 {
		h, err := g.begin(ctx, msg, "")
		if err != nil {
			return g.fail(ctx, msg, fmt.Errorf("hold the group of a record delivered again: %w", err))
		}
		g.h = &h
		if h.State == hold.Held && h.Head == record.Origin(msg) {
			return g.head(ctx, msg)
		}
		return g.store(ctx, msg)
	}
	o, reason := g.p.runRecord(ctx, msg)
	parked := ""
	switch {
	case o == Succeeded, o == Invalid && g.k.Skips():
		return o, reason
	case o == Invalid:
		parked = "invalid: " + reason
	}
	h, err := g.begin(ctx, msg, parked)
	if err != nil {
		// Not held: the record fails (an invalid one is published again
		// when it comes back), and the rest wait behind it in the source.
		g.p.opts.Logger.WarnContext(ctx, "hold", slog.String("group", g.group), slog.String("messageId", msg.MessageId), slog.String("error", err.Error()))
		return Failed, ""
	}
	g.h = &h
	g.logHold(ctx, "group held", msg)
	return o, reason
}

// head runs the head of a held group: applied, the group drains; invalid,
// it stays held (parked) unless the lane skips; failed, it stays the head.
func (g *groupRun) head(ctx context.Context, msg events.SQSMessage) (Outcome, string) {
	o, reason := g.p.runRecord(ctx, msg)
	var err error
	switch {
	case o == Succeeded, o == Invalid && g.k.Skips():
		err = g.set(ctx, func(h *hold.Hold) { h.State, h.Parked = hold.Draining, "" })
		if err == nil {
			g.logHold(ctx, "group draining", msg)
			err = g.drain(ctx)
		}
	case o == Invalid:
		err = g.set(ctx, func(h *hold.Hold) { h.Parked = "invalid: " + reason })
	default:
		return o, reason
	}
	if err != nil {
		// Applied but the hold not moved on: the record comes again,
		// the idempotent receiver absorbs it, and the move is retried.
		return g.fail(ctx, msg, fmt.Errorf("move the group's hold on: %w", err))
	}
	return o, reason
}

// store holds a record behind its group's hold.
func (g *groupRun) store(ctx context.Context, msg events.SQSMessage) (Outcome, string) {
	m, err := record.Held(msg)
	if err == nil && m.Seq == "" {
		err = errors.New("it has no SequenceNumber")
	}
	if err != nil {
		return g.fail(ctx, msg, fmt.Errorf("hold a record: %w", err))
	}
	h, err := g.k.Store.Append(ctx, g.group, m, g.p.opts.Now())
	if errors.Is(err, hold.ErrNotHeld) {
		g.h = nil // released meanwhile (a second copy of the batch drained it)
		return g.free(ctx, msg)
	}
	if err != nil {
		return g.fail(ctx, msg, fmt.Errorf("hold a record: %w", err))
	}
	g.h = &h
	g.p.log(ctx, msg, Held, nil, nil, slog.String("head", h.Head), slog.String("state", string(h.State)))
	return Held, ""
}

// fail reports msg failed for err; the group's later records are blocked
// in the source behind it.
func (g *groupRun) fail(ctx context.Context, msg events.SQSMessage, err error) (Outcome, string) {
	g.p.log(ctx, msg, Failed, nil, err)
	g.h = nil
	return Failed, ""
}

// set writes change to the group's hold. When a concurrent write changed
// the hold first, it reads it again and retries only if the hold still has
// the head and the state the change was made for (a record stored behind
// it); otherwise (a copy of the batch moved the group on) it fails with
// ErrConflict, and the record comes again.
func (g *groupRun) set(ctx context.Context, change func(*hold.Hold)) error {
	head, state := g.h.Head, g.h.State
	for range maxConflicts {
		h := *g.h
		change(&h)
		written, err := g.k.Store.Update(ctx, h, g.p.opts.Now())
		if err == nil {
			g.h = &written
			return nil
		}
		if !errors.Is(err, hold.ErrConflict) {
			return err
		}
		if err := g.reread(ctx); err != nil {
			return err
		}
		if g.h == nil {
			return hold.ErrNotHeld
		}
		if g.h.Head != head || g.h.State != state {
			return hold.ErrConflict
		}
	}
	return hold.ErrConflict
}

// reread reads the group's hold again (nil when it ended).
func (g *groupRun) reread(ctx context.Context) error {
	holds, err := g.k.Store.Holds(ctx, []string{g.group})
	if err != nil {
		return err
	}
	g.h = nil
	if h, ok := holds[g.group]; ok {
		g.h = &h
	}
	return nil
}

func (g *groupRun) logHold(ctx context.Context, msgText string, msg events.SQSMessage) {
	g.p.opts.Logger.LogAttrs(ctx, slog.LevelInfo, msgText, slog.String("group", g.group), slog.String("head", g.h.Head),
		slog.String("messageId", msg.MessageId), slog.String("parked", g.h.Parked))
}
