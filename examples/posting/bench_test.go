package posting_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/homingdlq/homing/batch/batchtest"
	"github.com/homingdlq/homing/fifo/fifotest"
	"github.com/homingdlq/homing/idempotency"

	"github.com/homingdlq/homing/examples/ledger"
	"github.com/homingdlq/homing/examples/posting"
)

// BenchmarkConsumerLane measures the payments consumer of a FIFO lane that
// keeps its accounts in order, end to end in memory (batchtest.Lane: the
// queues, the group lock, the event source mapping): 500 payments over 20
// accounts are published and drained. With one account frozen, its head
// fails until it is parked (three deliveries) and its later payments go to
// the parking queue. It reports the time per payment published.
func BenchmarkConsumerLane(b *testing.B) {
	const accounts, payments = 20, 500
	for _, frozen := range []bool{false, true} {
		b.Run(fmt.Sprintf("frozen=%t", frozen), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				ctx := context.Background()
				lane := batchtest.NewLane("payments.fifo", batchtest.LaneOptions{MaxReceiveCount: 100})
				book := &ledger.Memory{}
				if frozen {
					_ = book.Freeze(ctx, "acct-0", true)
				}
				keeper := lane.Keeper(&fifotest.Memory{})
				cfg := posting.Config{InvalidQueueURL: lane.InvalidURL, ConsumerName: "payments", Concurrency: 4,
					RecordLifetime: 24 * time.Hour, MaxPayloadBytes: 256 << 10, GroupOrder: "hold", MaxReceives: 3,
					SourceQueueURL: lane.Route.SourceURL, ParkingQueueURL: lane.Route.ParkingURL, SourceRetention: 4 * 24 * time.Hour}
				p := posting.NewProcessor(cfg, posting.Deps{Sender: lane.Queue, Store: idempotency.NewMemoryStore(), Ledger: book,
					Queue: keeper.Queue, Parks: keeper.Store, Logger: slog.New(slog.DiscardHandler), Now: lane.Clock.Now})
				for i := range payments {
					acct := fmt.Sprintf("acct-%d", i%accounts)
					if _, err := lane.Publish(ctx, body(fmt.Sprintf("P%d", i), acct, "1.00"), acct); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := lane.Drain(ctx, p.Process); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				wantApplied(b, book, accounts, payments, frozen)
				b.StartTimer()
			}
		})
	}
}

// wantApplied fails b unless every account's payments were applied, but
// the frozen account's (acct-0) when frozen.
func wantApplied(b *testing.B, book *ledger.Memory, accounts, payments int, frozen bool) {
	for a := range accounts {
		entries, err := book.Entries(context.Background(), fmt.Sprintf("acct-%d", a))
		want := payments / accounts
		if frozen && a == 0 {
			want = 0
		}
		if err != nil || len(entries) != want {
			b.Fatalf("acct-%d: %d entries, %v; want %d", a, len(entries), err, want)
		}
	}
}
