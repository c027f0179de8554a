package replay

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/hold"
)

// The held groups of a FIFO route whose consumer keeps each group in order
// through failure ([Route.Groups], package hold). The consumer holds a
// group when one of its records fails and stores the group's later records
// behind it; the head dead-letters, and the engine replays it as any dead
// letter. The engine has two duties more: when it parks a message (for any
// reason), it tells the route's keeper once the message is in the parking
// queue (hold.Keeper.Parked: the hold of a group whose head it is says why,
// and a lane that skips releases the group); and at the start of each run
// it sweeps the route's holds once (hold.Keeper.Sweep: a trigger for a
// drain left by a crash, the release of a parked head on a lane that
// skips; then, on a route with Records, the drain of a group held behind
// a head the consumer's completion records say it applied), and reports
// them in the route's summary ([GroupHolds]). Neither
// changes what becomes of a message: a failure is a warning.

// DefaultHoldStale is the default of [Options.HoldStale]: Lambda's longest
// function timeout, so that no consumer's drain under way is taken for a
// stalled one.
const DefaultHoldStale = 15 * time.Minute

// GroupHolds is what a run saw of the held groups of a route with
// [Route.Groups]: the holds as its sweep listed them at the start of the
// run, and the parks it could not tell them of. Its zero value (nothing
// held, nothing failed) is left out of the summary.
type GroupHolds struct {
	Held     int `json:"held,omitempty"`     // groups held behind a head not yet applied
	Draining int `json:"draining,omitempty"` // groups whose held records are being applied
	// ParkedHeads counts the held groups whose head will not come back by
	// itself (parked, or routed to the invalid queue): each waits for an
	// operator's release (dlq), unless the lane skips; then the sweep
	// released it.
	ParkedHeads int `json:"parkedHeads,omitempty"`
	// ParkErrors counts the messages this run parked or removed as applied
	// whose hold could not be told (each is also its message's warning,
	// counted in Errors): if one was its group's head, the group stays
	// held (without the reason), until an operator releases it.
	ParkErrors int `json:"parkErrors,omitempty"`
	// AppliedHeads counts the held groups the sweep let drain because the
	// consumer's completion records say their head was applied (with the
	// same payload): a copy of the head acknowledged by one invocation
	// while another held the group behind it, so that no copy would ever
	// come to move the hold on. Only a route with Records can tell.
	AppliedHeads int `json:"appliedHeads,omitempty"`
	// Error says why the holds were not swept: no keeper for the route
	// ([Options.Holds]), or the sweep's error.
	Error string `json:"error,omitempty"`
}

// see counts holds, as listed.
func (g *GroupHolds) see(holds []hold.Hold) {
	for _, h := range holds {
		switch {
		case h.State == hold.Draining:
			g.Draining++
		case h.Parked != "":
			g.Held++
			g.ParkedHeads++
		default:
			g.Held++
		}
	}
}

// HoldsOf returns the [Options.Holds] of a lane whose holds are in store:
// each route's keeper sends to the route's source queue through source and
// does with a head that can never succeed what the route's Groups says. It
// returns nil (holds off) when store is nil.
func HoldsOf(store hold.Store, source hold.Sender) func(Route) *hold.Keeper {
	if store == nil {
		return nil
	}
	return func(rt Route) *hold.Keeper {
		onError, _ := hold.ParseOnError(rt.Groups) // Route.Validate refuses any other
		return &hold.Keeper{Store: store, Source: source, SourceURL: rt.SourceURL, OnError: onError}
	}
}

// errNoKeeper says a route with Groups has no keeper of its holds.
var errNoKeeper = errors.New("no keeper of the route's holds (Options.Holds): its holds are not swept, and not told of its parks")

// routeHolds is a route's keeper in a run, and what the run saw of its
// holds. The run's sweep writes seen before the routes' passes start; the
// passes only read them.
type routeHolds struct {
	keeper *hold.Keeper // nil: the route's holds are off (see seen.Error)
	seen   GroupHolds
}

// keepers returns the keepers of the routes with Groups, by route name.
func (e *Engine) keepers(routes []Route) map[string]*routeHolds {
	out := map[string]*routeHolds{}
	for _, rt := range routes {
		if rt.Groups == "" {
			continue
		}
		rh := &routeHolds{}
		var err error
		if rh.keeper, err = e.keeperOf(rt); err != nil {
			rh.seen.Error = err.Error()
		}
		out[rt.Name] = rh
	}
	return out
}

// keeperOf returns the keeper of rt's holds, or why it has none.
func (e *Engine) keeperOf(rt Route) (*hold.Keeper, error) {
	var k *hold.Keeper
	if e.opts.Holds != nil {
		k = e.opts.Holds(rt)
	}
	if k == nil {
		return nil, errNoKeeper
	}
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("the keeper of the route's holds: %w", err)
	}
	return k, nil
}

// keeper is the keeper of route's holds in the run; nil when it has none.
func (r *run) keeper(route string) *hold.Keeper {
	if rh := r.holds[route]; rh != nil {
		return rh.keeper
	}
	return nil
}

// sweep sweeps the holds of every route with a keeper, once per run,
// before any route's pass, one route after the other in the request's
// order (a round trip per route, and the calls in a fixed order for a
// deterministic replay of a run); a dry run lists them and changes
// nothing. Each route with Groups gets one log line.
func (r *run) sweep(ctx context.Context) {
	for _, rt := range r.req.Routes {
		rh := r.holds[rt.Name]
		if rh == nil {
			continue
		}
		if rh.keeper != nil {
			r.sweepRoute(ctx, rt, rh)
		}
		r.logHolds(ctx, rt, rh.seen)
	}
}

// sweepRoute sweeps one route's holds and counts what it listed.
func (r *run) sweepRoute(ctx context.Context, rt Route, rh *routeHolds) {
	var holds []hold.Hold
	var err error
	if r.req.DryRun {
		holds, err = rh.keeper.Store.List(ctx)
	} else {
		holds, err = rh.keeper.Sweep(ctx, r.now(), r.e.opts.HoldStale)
		err = errors.Join(err, r.drainApplied(ctx, rt, rh, holds))
	}
	rh.seen.see(holds)
	if err != nil {
		rh.seen.Error = fmt.Sprintf("sweep the held groups: %v", err)
	}
}

// appliedChecks bounds the held heads one run's sweep asks the completion
// records about (one read of their holds' bodies, one of the records): a
// lane with more groups held has a window of them checked each run, its
// start moved by the run's id: of n such groups, each is reached in about
// n/appliedChecks runs.
const appliedChecks = 100

// drainApplied lets drain each group held behind a head (not parked) that
// the consumer's completion records say it applied with the same payload,
// read from the body each hold keeps of its head ([heldHeads] picks them).
// Nothing else would move such a hold on when every copy of its head is
// gone (one acknowledged while another invocation held the group behind
// it). A head that is being applied now may be drained past a moment
// before its consumer would: its write of the hold loses, its record comes
// again, and the idempotent receiver absorbs it.
func (r *run) drainApplied(ctx context.Context, rt Route, rh *routeHolds, listed []hold.Hold) error {
	if r.e.opts.Completions == nil || !rt.Records {
		return nil
	}
	ln, err := rt.compile() // cannot fail for a valid request
	if err != nil {
		return err
	}
	groups := heldHeads(listed, r.id, appliedChecks)
	if len(groups) == 0 {
		return nil
	}
	holds, err := rh.keeper.Store.Holds(ctx, groups)
	if err != nil {
		return fmt.Errorf("read the held heads' bodies: %w", err)
	}
	var heads []hold.Hold
	var keys []string
	for _, g := range groups {
		h, ok := holds[g]
		if !ok || h.State != hold.Held || h.Parked != "" {
			continue // moved on since the listing
		}
		if key, ok := ln.key.Of([]byte(h.HeadBody)); ok && completable(key) {
			heads = append(heads, h)
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	done, err := r.e.opts.Completions.Completed(ctx, keys)
	if err != nil {
		return fmt.Errorf("read the completions of the held heads: %w", err)
	}
	var errs []error
	for i, h := range heads {
		recorded, ok := done[keys[i]]
		if same, comparable := ln.hash.Same(recorded, []byte(h.HeadBody)); !ok || !same || !comparable {
			continue
		}
		if err := retryConflict(func() error { return rh.keeper.Applied(ctx, h.Group, h.Head, r.now()) }); err != nil {
			errs = append(errs, fmt.Errorf("drain group %q past its applied head %s: %w", h.Group, h.Head, err))
			continue
		}
		rh.seen.AppliedHeads++
	}
	return errors.Join(errs...)
}

// heldHeads returns the groups of listed (ordered by group) held behind a
// head that is not parked: all of them when they are at most n, else n of
// them in a row, from a start the run's id picks, wrapping around.
func heldHeads(listed []hold.Hold, runID string, n int) []string {
	var groups []string
	for _, h := range listed {
		if h.State == hold.Held && h.Parked == "" {
			groups = append(groups, h.Group)
		}
	}
	if len(groups) <= n {
		return groups
	}
	f := fnv.New32a()
	f.Write([]byte(runID))
	start := int(f.Sum32() % uint32(len(groups)))
	return slices.Concat(groups[start:min(start+n, len(groups))], groups[:max(0, start+n-len(groups))])
}

func (r *run) logHolds(ctx context.Context, rt Route, g GroupHolds) {
	level := slog.LevelInfo
	attrs := []slog.Attr{slog.String("runId", r.id), slog.String("route", rt.Name), slog.String("queue", rt.SourceURL),
		slog.Int("held", g.Held), slog.Int("draining", g.Draining), slog.Int("parkedHeads", g.ParkedHeads), slog.Int("appliedHeads", g.AppliedHeads)}
	if g.Error != "" {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", g.Error))
	}
	r.e.opts.Logger.LogAttrs(ctx, level, "replay holds", attrs...)
}

// originOf is the original id of m as package hold names a group's head
// (hold.OriginOf), on a route with a keeper; "" on others.
func (p *pass) originOf(m types.Message) string {
	if p.keeper == nil {
		return ""
	}
	return hold.OriginOf(aws.ToString(m.MessageId), m.MessageAttributes)
}

// tellAttempts bounds the tries of one hold.Keeper.Parked or Applied: a
// conflict is the consumer storing a record behind the hold between the
// keeper's read and its write, and the next try reads the hold again.
const tellAttempts = 3

// retryConflict runs tell until it does not lose to a concurrent write of
// the hold, at most tellAttempts times.
func retryConflict(tell func() error) error {
	var err error
	for range tellAttempts {
		if err = tell(); !errors.Is(err, hold.ErrConflict) {
			return err
		}
	}
	return err
}

// tellHolds tells the route's holds of the messages of b that left the DLQ
// for good now, in receive order: parked (in the parking queue, by this
// run or by an earlier one that stopped before its delete), and
// removed as already applied (a head whose consumer applied it but could
// not move its hold on: its group drains). A failure is the message's
// warning and changes nothing else: the message left. It runs even when
// ctx is done: the park or the removal happened.
func (r *run) tellHolds(ctx context.Context, p *pass, b *batch) {
	if p.keeper == nil {
		return
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	failed := 0
	for _, it := range b.items {
		var tell func() error
		switch {
		case it.msg.group == "":
		case it.outcome == OutcomeParked && it.sent:
			tell = func() error { return p.keeper.Parked(hctx, it.msg.group, it.msg.origin, it.reason, r.now()) }
		case it.outcome == OutcomeRecovered && it.parkedAs != "":
			// An earlier run parked it and stopped before the delete.
			tell = func() error { return p.keeper.Parked(hctx, it.msg.group, it.msg.origin, it.parkedAs, r.now()) }
		case it.outcome == OutcomeApplied:
			tell = func() error { return p.keeper.Applied(hctx, it.msg.group, it.msg.origin, r.now()) }
		}
		if tell == nil {
			continue
		}
		if err := retryConflict(tell); err != nil {
			it.warn = errors.Join(it.warn, fmt.Errorf("tell the hold of group %q that %s left the DLQ (%s): %w", it.msg.group, it.msg.origin, it.outcome, err))
			failed++
		}
	}
	if failed > 0 {
		r.mu.Lock()
		p.rs.Holds.ParkErrors += failed
		r.mu.Unlock()
	}
}
