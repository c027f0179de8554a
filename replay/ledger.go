package replay

import (
	"context"
	"time"

	"github.com/homingdlq/homing/internal/record"
)

// defaultRecordLifetime is how long ledger records live: longer than the
// longest DLQ retention (14 days) with a margin.
const defaultRecordLifetime = 30 * 24 * time.Hour

// Ledger is the replay ledger: [github.com/homingdlq/homing/dynamo.NewLedger]
// on DynamoDB, [github.com/homingdlq/homing/replay/replaytest.NewMemoryLedger]
// in memory. Its records are the project's own (docs/ENGINE.md), so no other
// package implements it. Each method is atomic with respect to the others,
// a record whose ExpiresAt has passed counts as absent (TTL deletion is not
// relied on), and the ledger is safe for concurrent use.
type Ledger interface {
	// Mark writes r as the record of (r.HistoryKey, r.ID()) when the
	// stored record allows the transition to r.State at r.At:
	//
	//	SEEN           when absent;
	//	INTENT         when absent, SEEN, or INTENT whose lease has passed
	//	               or whose RunID and MessageID are r's (FirstSeenAt is kept);
	//	SENT, PARKED,
	//	RESOLVED       when INTENT with r's RunID and MessageID (FirstSeenAt is kept).
	//
	// It returns ok=true and the record it replaced (zero when there was
	// none: the message is seen for the first time), otherwise ok=false
	// and the stored record (zero when absent).
	Mark(ctx context.Context, r record.Message) (current record.Message, ok bool, err error)
	// History returns the records of a history key (see HistoryKey), in
	// no particular order.
	History(ctx context.Context, historyKey string) ([]record.Message, error)
	// MarkBatch applies Mark's rule to each record (distinct records: no
	// two share an ID): each transition is atomic on its own, not the set. It
	// returns one result per record, in order.
	MarkBatch(ctx context.Context, records []record.Message) []record.Marked
	// PutRun stores a run summary, keeping it until expiresAt.
	PutRun(ctx context.Context, s Summary, expiresAt time.Time) error
	// LastRun returns the summary with the latest StartedAt; found is false
	// when there is none.
	LastRun(ctx context.Context) (s Summary, found bool, err error)
	// Runs returns up to n summaries, the latest first.
	Runs(ctx context.Context, n int) ([]Summary, error)
}

// Completions tells which business keys the consumer has completed: its
// completion record of the key (for a consumer built on package
// idempotency, the record "<consumer>#<key>") is COMPLETED. Only a route
// whose consumer writes such records ([Route.Records]) reads them.
type Completions interface {
	// Completed returns the payload hash each completed key among keys
	// completed with (as payload.Hash.Sum wrote it); a key absent from the
	// map has not completed (or its record has expired).
	Completed(ctx context.Context, keys []string) (map[string]string, error)
}
