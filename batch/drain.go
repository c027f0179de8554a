package batch

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/record"
)

// drain applies the group's held records in order, then ends the hold. A
// held record that fails becomes the group's head (it goes back to the
// source queue, where SQS retries and dead-letters it as any failure) and
// the rest stay held behind it. When the invocation's time runs short the
// drain pauses, the hold still Draining, and a trigger sent to the source
// has the next invocation go on.
func (g *groupRun) drain(ctx context.Context) error {
	for g.h != nil && g.h.State == hold.Draining {
		if g.p.tooLate(ctx) {
			return g.pause(ctx, "")
		}
		page, err := g.k.Store.Next(ctx, g.group, drainPage)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			if err := g.end(ctx); err != nil {
				return err
			}
			continue
		}
		for _, m := range page {
			if g.p.tooLate(ctx) {
				return g.pause(ctx, m.Seq)
			}
			if err := g.apply(ctx, m); err != nil {
				return err
			}
			if g.h.State != hold.Draining {
				return nil
			}
		}
	}
	return nil
}

// apply runs one held record; it leaves the hold once it is applied, or
// once it is the group's new head. A held copy of the head itself (left by
// a Remove that failed after it became the head) is only removed: the head
// was applied, or released past.
func (g *groupRun) apply(ctx context.Context, m hold.Message) error {
	r, err := record.Of(m)
	if err != nil {
		return err
	}
	origin := record.Origin(r)
	if origin == g.h.Head {
		return g.k.Store.Remove(ctx, g.group, m.Seq)
	}
	o, reason := g.p.runRecord(ctx, r)
	if g.p.opts.OnOutcome != nil {
		g.p.opts.OnOutcome(ctx, o, reason)
	}
	switch {
	case o == Succeeded, o == Invalid && g.k.Skips():
		return g.k.Store.Remove(ctx, g.group, m.Seq)
	case o == Invalid:
		if err := g.set(ctx, func(h *hold.Hold) { heldBehind(h, r, "invalid: "+reason) }); err != nil {
			return err
		}
	default:
		// Sent back before the hold names it: a crash in between leaves it
		// held and draining, so the next drain runs it again (SQS drops
		// the second send of one version of the hold within five minutes;
		// a later copy is absorbed by the idempotent receiver). Held again
		// after its Remove failed, and released past, it is sent anew.
		if err := record.SendBack(ctx, g.k, *g.h, r, m.Seq); err != nil {
			return err
		}
		if err := g.set(ctx, func(h *hold.Hold) { heldBehind(h, r, "") }); err != nil {
			return err
		}
	}
	g.logHold(ctx, "group held", r)
	return g.k.Store.Remove(ctx, g.group, m.Seq)
}

// heldBehind makes r the head of hold h, held, with parked as its reason.
func heldBehind(h *hold.Hold, r events.SQSMessage, parked string) {
	h.Head = record.Origin(r)
	h.HeadBody = hold.HeadBodyOf(r.Body)
	h.State = hold.Held
	h.Parked = parked
}

// end ends the hold once nothing is held in it; a record held meanwhile (a
// concurrent copy of a batch) makes End fail, and the drain goes on.
func (g *groupRun) end(ctx context.Context) error {
	err := g.k.Store.End(ctx, *g.h)
	if errors.Is(err, hold.ErrConflict) {
		return g.reread(ctx)
	}
	if err != nil {
		return err
	}
	g.p.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "group free", slog.String("group", g.group), slog.String("head", g.h.Head))
	g.h = nil
	return nil
}

// pause leaves the hold draining and sends a trigger for the rest.
func (g *groupRun) pause(ctx context.Context, next string) error {
	if err := g.k.Trigger(ctx, g.group, "resume-"+next); err != nil {
		return err
	}
	g.p.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "group drain paused", slog.String("group", g.group), slog.String("next", next))
	return nil
}
