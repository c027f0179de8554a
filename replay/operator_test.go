package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/record"
	"github.com/homingdlq/homing/replay"
)

// OnProgress sees each route's pass start, then every batch, and its last
// report matches the summary.
func TestOnProgressReportsEachBatch(t *testing.T) {
	h := newHarness(t, false, nil)
	h.orders("P", 25)
	h.clock.Advance(time.Hour)
	var got []replay.Progress
	e := h.engine(func(o *replay.Options) { o.OnProgress = func(p replay.Progress) { got = append(got, p) } })
	s := h.run(e, replay.Request{})

	if len(got) < 4 { // the start, then 3 batches of up to 10
		t.Fatalf("%d progress reports, want at least 4: %+v", len(got), got)
	}
	if first := got[0]; first.Route != "orders" || first.Depth != 25 || first.Counts.Examined != 0 || first.RunID != s.RunID {
		t.Fatalf("first report = %+v", first)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Counts.Examined < got[i-1].Counts.Examined {
			t.Fatalf("examined went down: %+v", got)
		}
	}
	if last := got[len(got)-1]; fmt.Sprint(countsOf(last.Counts)) != fmt.Sprint(countsOf(s.Routes[0].Counts)) {
		t.Fatalf("last report %+v, summary %+v", last.Counts, s.Routes[0].Counts)
	}
}

// An order that exhausted its replays is parked again when it comes back
// from the parking queue, unless the count is reset; after a reset, later
// runs count only the replays since the reset.
func TestResetCountRestartsTheReplayCount(t *testing.T) {
	h := newHarness(t, false, nil)
	ctx := context.Background()
	const id = "ORD-RESET-1"
	// Three replays in the ledger and in the metadata, then parked.
	for i := range 3 {
		rec := record.Message{
			HistoryKey: record.HistoryKey(id, ""), MessageID: fmt.Sprintf("old-%d", i), State: record.Intent, Route: "orders",
			Key: id, RunID: "run-old", At: h.clock.Now(), LeaseUntil: h.clock.Now().Add(time.Minute), ExpiresAt: h.clock.Now().Add(24 * time.Hour),
		}
		for _, s := range []record.State{record.Intent, record.Sent} {
			rec.State = s
			if _, ok, err := h.ledger.Mark(ctx, rec); err != nil || !ok {
				t.Fatalf("mark %s: ok %v, err %v", s, ok, err)
			}
		}
	}
	parked := replay.Route{Name: "orders/parking", DLQURL: h.route.ParkingURL, SourceURL: h.route.SourceURL, ParkingURL: h.route.ParkingURL}
	h.deadLetter(parked, msg{body: order(id), meta: &replay.Metadata{
		ReplayCount: 3, OriginalMessageID: "m-orig", Reason: replay.ReasonReplayExhausted, FirstDeadLetteredAt: h.clock.Now(),
	}})
	h.clock.Advance(time.Hour)
	e := h.engine()

	dry := h.run(e, replay.Request{Routes: []replay.Route{parked}, DryRun: true})
	checkCounts(t, dry.Total, counts{Examined: 1, Parked: map[string]int{replay.ReasonReplayExhausted: 1}})

	h.clock.Advance(time.Minute)
	resetAt := h.clock.Now()
	s := h.run(e, replay.Request{Routes: []replay.Route{parked}, ResetCount: true})
	checkCounts(t, s.Total, counts{Examined: 1, Replayed: 1})
	src := h.stored(h.route.SourceURL)
	if len(src) != 1 || src[0].meta.ReplayCount != 1 || !src[0].meta.ResetAt.Equal(resetAt) || src[0].meta.OriginalMessageID != "m-orig" {
		t.Fatalf("source = %+v", src)
	}

	// It fails again and is dead-lettered: the next run counts one replay
	// (the one since the reset), not four.
	got, err := h.q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(h.route.SourceURL), MaxNumberOfMessages: 10})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive from the source: %v, %v", got, err)
	}
	if _, err := h.q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(h.route.SourceURL), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("m0"), ReceiptHandle: got.Messages[0].ReceiptHandle},
	}}); err != nil {
		t.Fatal(err)
	}
	h.deadLetter(h.route, msg{body: src[0].body, meta: &src[0].meta})
	h.clock.Advance(time.Hour)
	s = h.run(e, replay.Request{})
	checkCounts(t, s.Total, counts{Examined: 1, Replayed: 1})
	if src = h.stored(h.route.SourceURL); len(src) != 1 || src[0].meta.ReplayCount != 2 || !src[0].meta.ResetAt.Equal(resetAt) {
		t.Fatalf("source = %+v", src)
	}
}
