package replay

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// item is one received message on its way through a batch: what the plan
// decided (its outcome, along the lifecycle: see lifecycle.go), then what
// the claim, the send and the finish did.
type item struct {
	msg     message
	outcome Outcome // undecided until planned
	reason  string  // OutcomeParked: the parking reason; OutcomeApplied: ReasonAlreadyApplied
	delay   int32   // OutcomeDelayed: the visibility timeout that hides it until due, in seconds
	facts   facts
	refund  bool // its last replay failed in a run whose replays all failed: given back
	dest    string
	entry   types.SendMessageBatchRequestEntry
	count   int // the replay count in the metadata sent

	completed bool      // its key completed with the same payload (see applied)
	claimed   bool      // the run tried to write its INTENT record
	first     bool      // the ledger had no record of it
	intent    bool      // the run holds its INTENT record
	lease     time.Time // the run holds the message (visibility, and INTENT when intent) until then
	sent      bool      // the send succeeded (or, applied, nothing needed sending)
	err       error     // why it failed (OutcomeFailed)
	warn      error     // a failure after the move: the ledger record, or the delete
}

// batch is one received batch: its items in receive order, and the moves
// and replays its plan reserved under the run's cap and the canary limit.
type batch struct {
	items      []*item
	receivedAt time.Time
	plan       *planner
	moves      int
	replays    int
}

// planner decides a batch from what its messages carry (their metadata and
// system attributes): no call, no lock, no clock of its own. The route loop
// fills it under the run's lock and takes back what it reserved.
type planner struct {
	policy     Policy
	route      Route
	runID      string
	now        time.Time
	receivedAt time.Time
	retention  time.Duration // the DLQ's; 0 when unknown
	sourceMax  int           // the source queue's MaximumMessageSize
	filter     Filter
	reset      bool     // Request.ResetCount
	gated      bool     // a gate is closed: no replays, the rescue goes on
	breaker    *Breaker // the route's; nil when it never opened
	key        sealer   // the seal keys (see seal.go)
	movesLeft  int      // moves the run's cap still allows
	replayLeft int      // replays the canary still allows; -1 unlimited
	probe      bool     // the limit is a probe of the open breaker (see slot)
	knownLimit bool     // the limit judges a run of known failures alone (see slot)
	refill     bool     // the refill gate judges the DLQ's growth (see waits)
	blind      bool     // the recent runs, and so the breaker, are unknown (see decide)
}

// knownFailure reports whether the item is a known failure: its replay
// count, after any refund, is one or more, so an earlier replay of it
// failed in a run that the breaker did not take for an outage's. Its
// outcome is no evidence about the system (see gate_canary.go).
func (it *item) knownFailure() bool { return it.facts.ReplayCount > 0 }

// slot reports whether a replay of it takes one of the canary's replays: a
// known failure takes none (it fails on its own, and judging the next run
// by it would hold the lane behind one failing producer or key), except in
// a probe, which replays at most its limit whatever it picks, and under a
// limit that known failures alone brought (they are the evidence then).
func (pl *planner) slot(it *item) bool { return pl.probe || pl.knownLimit || !it.knownFailure() }

// waits reports whether a replay of it waits for the next run: a replay of
// ours back in the DLQ, while the refill gate judges whether the DLQ
// refills with replays that came back (see refillGate.watch), is not sent back
// before its verdict.
func (pl *planner) waits(it *item) bool { return pl.refill && freshBack(it.msg) }

// plan decides every item in receive order: the filter first, then a
// closed gate (which holds all but the parks: the expiry rescue and the
// replay-exhausted), the policy, the FIFO order of each group, the cap and
// the canary limit; and builds the messages to send. It returns the moves
// and replays it reserved.
func (pl *planner) plan(items []*item) (moves, replays int) {
	order := newGroupOrder(pl.route)
	for _, it := range items {
		pl.decide(it)
		order.block(it)
		switch it.outcome {
		case OutcomeReplayed:
			slot := pl.slot(it)
			switch {
			case pl.movesLeft > 0 && !pl.waits(it) && (pl.replayLeft != 0 || !slot):
				if slot {
					replays++
					if pl.replayLeft > 0 {
						pl.replayLeft--
					}
				}
			case pl.movesLeft > 0 && pl.policy.expiring(it.facts, pl.now):
				it.park(ReasonExpiryRescue)
			default:
				it.to(OutcomeDeferred)
			}
		case OutcomeParked:
			if pl.movesLeft <= 0 {
				it.to(OutcomeDeferred)
			}
		}
		if it.outcome.moves() {
			pl.movesLeft--
			moves++
			if slot := pl.slot(it); pl.prepare(it) && slot {
				// Parked as too large after all: the canary's slot is free.
				replays--
				if pl.replayLeft >= 0 {
					pl.replayLeft++
				}
			}
		}
		order.note(it)
	}
	return moves, replays
}

// prepare builds the message a mover sends and reports whether a replay
// became a park (too large for its source) or failed on the way.
func (pl *planner) prepare(it *item) (lostReplay bool) {
	wasReplay := it.outcome == OutcomeReplayed
	if err := pl.build(it); err != nil {
		it.fail(err)
	}
	return wasReplay && it.outcome != OutcomeReplayed
}

// decide applies the filter, a closed gate and the policy to one item.
func (pl *planner) decide(it *item) {
	if pl.reset {
		it.msg.meta.ReplayCount = 0
		it.msg.meta.Refunds = 0 // the bound of 2 x MaxReplays starts again too
		it.msg.meta.LastReplayAt = time.Time{}
		it.msg.meta.ResetAt = pl.now
	}
	if !pl.filter.match(it.msg, pl.now) || pl.route.Invalid && isPart(it.msg.producer) {
		// Filters apply first: a run for some messages leaves the others
		// alone, whatever their state. A part of an invalid body too large
		// to travel whole is no message to replay on its own.
		it.to(OutcomeSkipped)
		return
	}
	count := it.msg.meta.ReplayCount
	if pl.breaker.failed(it.msg.meta.RunID) && count > 0 && pl.policy.refundable(it.msg.meta.Refunds) {
		// Its last replay failed in a run whose replays all failed: the
		// failure was the system's, so that replay is given back (at most
		// MaxReplays times: then its replays count again, and it is
		// parked after MaxReplays more).
		count--
		it.refund = true
	}
	it.facts = facts{
		ReplayCount:    count,
		DeadLetteredAt: it.msg.deadLetteredAt,
		LastReplayAt:   it.msg.meta.LastReplayAt,
		ExpiresAt:      pl.expiresAt(it.msg),
		JitterKey:      it.msg.originalID(),
		Reset:          pl.reset,
	}
	d := pl.policy.decide(it.facts, pl.now)
	if pl.blind && d.Reason == ReasonReplayExhausted && it.msg.meta.RunID != "" &&
		pl.policy.refundable(it.msg.meta.Refunds) && !pl.policy.expiring(it.facts, pl.now) {
		// The breaker is unknown: it may give this message's last replay
		// back. Its park waits for a run that can read it.
		it.to(OutcomeDeferred)
		return
	}
	if pl.gated && !pl.policy.expiring(it.facts, pl.now) && d.Reason != ReasonReplayExhausted {
		// Nothing is replayed: only what is about to expire, or has had
		// its replays (with any refund above: the park every later run
		// would make, which a gate does not hold), needs a decision; the
		// rest is left for a later run without a call.
		it.to(OutcomeDeferred)
		return
	}
	switch d.Outcome {
	case OutcomeDelayed:
		it.delayFor(hide(d.Until, pl.now, pl.receivedAt))
	case OutcomeParked:
		it.park(d.Reason)
	default:
		it.to(d.Outcome)
	}
}

// expiresAt is when the DLQ drops m; zero when unknown.
func (pl *planner) expiresAt(m message) time.Time {
	if m.sentAt.IsZero() || pl.retention <= 0 {
		return time.Time{}
	}
	return m.sentAt.Add(pl.retention)
}

// hide is the visibility timeout, in seconds, that hides a message received
// at receivedAt until until: at least 1 s, and within SQS's 12 hours from
// the receive (with a minute to spare).
func hide(until, now, receivedAt time.Time) int32 {
	limit := maxVisibility - now.Sub(receivedAt) - time.Minute
	d := min(max(until.Sub(now), time.Second), limit)
	return int32(math.Ceil(d.Seconds()))
}

// rescue turns a replay that cannot go out (the ledger is down) into a
// park for the expiry rescue when the message is about to expire; it
// reports whether it did.
func (pl *planner) rescue(it *item) bool {
	if it.outcome != OutcomeReplayed || !pl.policy.expiring(it.facts, pl.now) {
		return false
	}
	it.park(ReasonExpiryRescue)
	if err := pl.build(it); err != nil {
		it.fail(err)
	}
	return true
}

// build prepares the message a mover sends: the body and the producer's
// attributes unchanged, plus our metadata.
func (pl *planner) build(it *item) error {
	m := it.msg
	meta := pl.metadata(it)
	attrs, err := envelope.Pack(m.producer, attributeName, meta)
	if err != nil {
		return fmt.Errorf("pack metadata of %s: %w", m.id, err)
	}
	if it.outcome == OutcomeReplayed && envelope.MessageBytes(len(m.body), attrs) > pl.sourceMax {
		// With our metadata it no longer fits its source queue: it would
		// fail every run until it expired. Park it for an operator.
		it.park(ReasonTooLarge)
		return pl.build(it)
	}
	it.entry = types.SendMessageBatchRequestEntry{MessageBody: aws.String(m.body), MessageAttributes: attrs}
	if pl.route.FIFO() {
		group := m.group
		if group == "" {
			group = pl.route.Name
		}
		it.entry.MessageGroupId = aws.String(group)
		it.entry.MessageDeduplicationId = aws.String(pl.deduplicationID(m, meta))
	}
	return nil
}

// metadata is the sealed metadata a mover carries (unsealed when the run
// cannot seal: see seal.go), and sets its destination and replay count.
func (pl *planner) metadata(it *item) Metadata {
	m := it.msg
	meta := Metadata{
		ReplayCount:         it.facts.ReplayCount,
		FirstDeadLetteredAt: m.firstDeadLettered(),
		LastReplayAt:        m.meta.LastReplayAt,
		OriginalMessageID:   m.originalID(),
		Route:               pl.route.Name,
		RunID:               pl.runID,
		ResetAt:             m.meta.ResetAt,
		Refunds:             m.meta.Refunds,
	}
	if it.refund {
		meta.Refunds++
	}
	it.dest = pl.route.ParkingURL
	if it.outcome == OutcomeReplayed {
		meta.ReplayCount++
		meta.LastReplayAt = pl.now
		it.dest = pl.route.SourceURL
	} else {
		meta.Reason = it.reason
		meta.ParkedAt = pl.now
	}
	it.count = meta.ReplayCount
	return pl.key.seal(meta, m.body, queueName(it.dest))
}

// deduplicationID is the FIFO deduplication id of a mover with meta.
func (pl *planner) deduplicationID(m message, meta Metadata) string {
	// After a reset the counts start again, so the ids must differ from
	// those of the first replays, and be the same when the reset run is
	// retried: the run that resets names the message it resets (its id in
	// the queue it reads, the same on every retry); later runs name the
	// reset time their metadata carries.
	dedup := meta.Reason
	switch {
	case pl.reset:
		dedup += "\nreset of " + m.id
	case !meta.ResetAt.IsZero():
		dedup += "\nreset " + meta.ResetAt.UTC().Format(time.RFC3339Nano)
	}
	// A replay given back by the breaker is sent again under the same
	// count: a new send, so a new id (SQS would drop it as a duplicate
	// within its 5-minute window, and the DLQ copy would be deleted).
	if meta.Refunds > 0 {
		dedup += "\nrefunds " + strconv.Itoa(meta.Refunds)
	}
	return deduplicationID(m.id, meta.ReplayCount, dedup)
}
