package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/replay"
)

// Forgery is replay metadata that a producer puts on a message it
// publishes: well formed, in our attribute, but not written by the engine
// for that message. The engine must never take it as its own (DESIGN,
// "Scheduled replay" 8): a forged count must not park a good order, a
// forged id must not block a move or the rescue, and two messages with one
// copy must not share a FIFO deduplication id.
type Forgery struct {
	// What names the forgery in traces.
	What string
	// Copy, when set, copies our attribute from the latest message the
	// engine sent before the publication, to the source queue ("replayed")
	// or to the parking queue ("parked"): a producer that forwards the
	// attributes of a message it consumed. Meta stands in while the engine
	// has sent nothing there yet.
	Copy string
	// Share names a copy that several publications carry alike: the first
	// of them published takes it, the others carry the same (two FIFO
	// orders with one copied metadata).
	Share string
	// Meta is the made-up metadata (when Copy is empty, or nothing to copy
	// was sent yet).
	Meta replay.Metadata
	// Note, when set, is the made-up document in our attribute instead of
	// Meta: a FIFO lane's release note ({"originalMessageId", "release"}).
	Note string
}

// The copies a Forgery can take.
const (
	copyReplayed = "replayed"
	copyParked   = "parked"
	// copyReleased copies the attribute of the latest record the
	// operator's release sent back to a FIFO lane's source: its round.
	copyReleased = "released"
)

// forgedIDBytes is the size of a forged originalMessageId: over every bound
// of the engine's (Pack takes 16 KiB of metadata; SQS ids are 100 bytes).
const forgedIDBytes = 20 << 10

// The forgeries, for a publication at offset at.
func forgeCount(at time.Duration) *Forgery {
	return &Forgery{What: "replayCount 99", Meta: replay.Metadata{
		ReplayCount: 99, FirstDeadLetteredAt: Start.Add(at - time.Hour), LastReplayAt: Start.Add(at - 30*time.Minute),
		OriginalMessageID: "m-0000001", Route: "orders", RunID: "sched-0001",
	}}
}

func forgeRefunds(at time.Duration) *Forgery {
	return &Forgery{What: "refunds 99", Meta: replay.Metadata{
		ReplayCount: 1, Refunds: 99, FirstDeadLetteredAt: Start.Add(at - time.Hour), LastReplayAt: Start.Add(at - 30*time.Minute),
		OriginalMessageID: "m-0000002", Route: "orders", RunID: "sched-0001",
	}}
}

func forgeFuture(at time.Duration) *Forgery {
	return &Forgery{What: "lastReplayAt in a year", Meta: replay.Metadata{
		ReplayCount: 1, FirstDeadLetteredAt: Start.Add(at), LastReplayAt: Start.Add(at + 365*24*time.Hour),
		OriginalMessageID: "m-0000003", Route: "orders", RunID: "sched-0001",
	}}
}

func forgeBigID(at time.Duration) *Forgery {
	return &Forgery{What: "20 KiB originalMessageId", Meta: replay.Metadata{
		FirstDeadLetteredAt: Start.Add(at), OriginalMessageID: strings.Repeat("x", forgedIDBytes), Route: "orders",
	}}
}

// forgeCopy copies the attribute of the latest message the engine sent to
// the source queue (copyReplayed) or the parking queue (copyParked); until
// there is one, a made-up copy of such a message stands in.
func forgeCopy(of string, share string, at time.Duration) *Forgery {
	meta := replay.Metadata{
		ReplayCount: 1, FirstDeadLetteredAt: Start.Add(at - time.Hour), LastReplayAt: Start.Add(at - 10*time.Minute),
		OriginalMessageID: "m-0000004", Route: "orders", RunID: "sched-0002",
	}
	if of == copyParked {
		meta.Reason = replay.ReasonReplayExhausted
		meta.ParkedAt = Start.Add(at - 5*time.Minute)
	}
	return &Forgery{What: "copy of a " + of + " message", Copy: of, Share: share, Meta: meta}
}

// forgeRound is a release note with a made-up round, or, with copy, a
// copy of the latest released record's note (its round), which stands in
// until one was sent.
func forgeRound(copy bool) *Forgery {
	f := &Forgery{What: "made-up release round", Note: `{"originalMessageId":"m-0000005","release":"5d41402abc4b2a76b9719d911017c592"}`}
	if copy {
		f.What, f.Copy = "copy of a released record's round", copyReleased
	}
	return f
}

// randomForgery draws a forgery for publication n of the random workload.
func randomForgery(rng *rand.Rand, at time.Duration) *Forgery {
	switch rng.IntN(6) {
	case 0:
		return forgeCount(at)
	case 1:
		return forgeRefunds(at)
	case 2:
		return forgeFuture(at)
	case 3:
		return forgeBigID(at)
	case 4:
		return forgeCopy(copyParked, "", at)
	default:
		share := ""
		if rng.IntN(2) == 0 {
			share = fmt.Sprintf("copy-%d", rng.IntN(3)) // some orders carry one copy alike
		}
		return forgeCopy(copyReplayed, share, at)
	}
}

// metadataAttribute is our attribute holding meta, as the engine writes it
// (envelope.Pack). A producer is not bound by Pack's limit on the size of
// the metadata: over it, the same document is written by hand.
func metadataAttribute(meta replay.Metadata) types.MessageAttributeValue {
	if attrs, err := envelope.Pack(nil, envelope.ReplayAttributeName, meta); err == nil {
		return attrs[envelope.ReplayAttributeName]
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		panic(err)
	}
	doc, err := json.Marshal(map[string]json.RawMessage{"meta": raw})
	if err != nil {
		panic(err)
	}
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(doc))}
}

// forged returns the attributes p is published with: its own, plus the
// forged metadata; and what the forgery is, for the trace.
func (s *Sim) forged(p *Publication) (map[string]types.MessageAttributeValue, string) {
	f := p.Forge
	attrs := maps.Clone(p.Attrs)
	if attrs == nil {
		attrs = map[string]types.MessageAttributeValue{}
	}
	s.book.Lock()
	defer s.book.Unlock()
	if a, ok := s.shared[f.Share]; ok && f.Share != "" {
		attrs[envelope.ReplayAttributeName] = a.attr
		return attrs, f.What + " (" + a.what + ", shared " + f.Share + ")"
	}
	what := f.What + " (made up)"
	a := sentAttribute{attr: metadataAttribute(f.Meta), what: "made up"}
	if f.Note != "" {
		attrs, err := envelope.Pack(nil, envelope.ReplayAttributeName, json.RawMessage(f.Note))
		if err != nil {
			panic(err)
		}
		a.attr = attrs[envelope.ReplayAttributeName]
	}
	if last, ok := s.lastSent[f.Copy]; ok && f.Copy != "" {
		a = last
		what = f.What + " (" + a.what + ")"
	}
	if f.Share != "" {
		s.shared[f.Share] = a
	}
	attrs[envelope.ReplayAttributeName] = a.attr
	return attrs, what
}

// sentAttribute is our attribute on a message the engine sent, for a
// producer to copy.
type sentAttribute struct {
	attr types.MessageAttributeValue
	what string // "copy of <id>"
}
