package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// metadataSeeds are values of our attribute: as the engine writes them
// (sealed under a key of another ledger: a copy from another lane), as a
// producer forges them, and what is not ours at all.
func metadataSeeds(f *testing.F) []string {
	at := time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC)
	written := replay.Metadata{ReplayCount: 2, FirstDeadLetteredAt: at, LastReplayAt: at.Add(time.Hour), OriginalMessageID: "0b6d3c1e-4a5f-4f5e-9a43-1d2c3b4a5f6e",
		Route: "orders", RunID: "3f9a1c52-7e1b-4d7e-9c1e-6a2b5c8d9e0f"}
	parked := written
	parked.Reason, parked.ParkedAt = replay.ReasonReplayExhausted, at.Add(2*time.Hour)
	key := make([]byte, 32)
	var seeds []string
	for _, m := range []replay.Metadata{
		written.Sealed(key, `{"orderId":"ORD-1"}`, "https://sqs.us-east-1.amazonaws.com/000000000000/orders"),
		parked.Sealed(key, `{"orderId":"ORD-1"}`, "https://sqs.us-east-1.amazonaws.com/000000000000/orders-parking"),
		{ReplayCount: 99, Refunds: 99, OriginalMessageID: "orig", LastReplayAt: at.Add(72 * time.Hour), Route: "orders", RunID: "run-x"},
		{ReplayCount: -1, OriginalMessageID: "orig"},
		{OriginalMessageID: strings.Repeat("x", 200)},
		{OriginalMessageID: "orig", Route: strings.Repeat("\u2028", 2000)}, // escaped sixfold when written again
	} {
		attrs, err := replay.Attributes(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, aws.ToString(attrs[replay.AttributeName].StringValue))
	}
	return append(seeds, `{"meta":{"originalMessageId":"m"},"overflow":{"z":{"t":"String","s":"v"}}}`, `{"meta":{}}`, `{`, "")
}

// FuzzRead decodes our metadata from attribute sets as SQS delivers them
// (homing-replay as the engine writes it or forged, beside homing-invalid,
// the .prev copies and a producer's own, up to ten). Properties:
//   - Read returns a typed error (envelope.ErrCorrupt, nothing else) or
//     metadata within the bounds of what the engine writes (an original id
//     of 1..128 bytes, counts 0..10,000, names of at most 256 bytes, a seal
//     of at most 64) and the producer's attributes (at most ten, never ours,
//     never more bytes than it was given);
//   - the round trip: Attributes of what Read returned succeeds and reads
//     back the same metadata and attributes.
//
// Whether metadata is ours is the seal's business, not Read's: see
// FuzzForeignMetadata.
func FuzzRead(f *testing.F) {
	for _, s := range metadataSeeds(f) {
		f.Add(s, "", uint8(0))
		f.Add(s, "traceId\x00String\x00Root=1-5759e988-bd862e3fe1be46a994272793\x00homing-replay.prev\x00String\x00"+s+"\x00", uint8(1))
	}
	f.Fuzz(func(t *testing.T, ours, spec string, repeat uint8) {
		attrs, ok := withOurs(sqsAttributes(spec, int(repeat)), ours)
		if !ok {
			return
		}
		before := maps.Clone(attrs)
		meta, producer, found, err := replay.Read(attrs)
		if !reflect.DeepEqual(attrs, before) {
			t.Fatal("Read modified its argument")
		}
		_, present := attrs[replay.AttributeName]
		switch {
		case found != present:
			t.Fatalf("found = %v, our attribute present = %v", found, present)
		case err != nil && (!errors.Is(err, envelope.ErrCorrupt) || producer != nil || !reflect.DeepEqual(meta, replay.Metadata{})):
			t.Fatalf("Read: %v, with %+v and %v: want ErrCorrupt and nothing else", err, meta, producer)
		case err != nil:
			return
		case !found && !reflect.DeepEqual(producer, attrs):
			t.Fatal("without our attribute, Read changed the attributes")
		case !found:
			return
		}
		if len(meta.OriginalMessageID) == 0 || len(meta.OriginalMessageID) > 128 || meta.ReplayCount < 0 || meta.ReplayCount > 10_000 ||
			meta.Refunds < 0 || meta.Refunds > 10_000 || len(meta.Route) > 256 || len(meta.RunID) > 256 || len(meta.Reason) > 256 ||
			len(meta.Corrupt) > 256 || len(meta.Seal) > 128 {
			t.Fatalf("metadata out of the bounds of what the engine writes: %+v", meta)
		}
		if _, ours := producer[replay.AttributeName]; ours || len(producer) > envelope.MaxAttributes {
			t.Fatalf("producer attributes %v: ours among them, or more than SQS carries", producer)
		}
		if got, in := envelope.MessageBytes(0, producer), envelope.MessageBytes(0, attrs); got > in {
			t.Fatalf("decoded %d bytes of attributes from %d", got, in)
		}
		again, err := replay.Attributes(producer, meta)
		if err != nil {
			t.Fatalf("Attributes refuses what Read returned: %v", err)
		}
		meta2, producer2, found, err := replay.Read(again)
		if err != nil || !found {
			t.Fatalf("Read of Attributes: found=%v err=%v", found, err)
		}
		if j1, j2 := jsonOf(t, meta), jsonOf(t, meta2); j1 != j2 {
			t.Fatalf("metadata changed in the round trip:\n got %s\nwant %s", j2, j1)
		}
		if !reflect.DeepEqual(producer2, producer) {
			t.Fatalf("attributes changed in the round trip:\n got %v\nwant %v", producer2, producer)
		}
	})
}

// FuzzForeignMetadata runs the engine (in memory, on a manual clock) over
// one dead letter that carries the fuzzed attributes: our attribute forged
// or copied (a valid seal needs the ledger's key, which no input holds),
// homing-invalid and the .prev copies among the producer's. Property:
// nothing decoded from a producer's attribute is ever taken as our own
// metadata. The message is replayed as a first replay (one replay, nothing
// parked, no error), and the copy in the source queue carries metadata the
// engine sealed saying so (ReplayCount 1, OriginalMessageId its own DLQ id,
// no refunds, no reason) beside every attribute the producer sent, ours
// under its neutral name.
func FuzzForeignMetadata(f *testing.F) {
	for _, s := range metadataSeeds(f) {
		f.Add(s, "")
		f.Add(s, invalid.AttributeName+"\x00String\x00{\"meta\":{\"reason\":\"replay-exhausted\"}}\x00homing-replay.prev\x00String\x00"+s+"\x00")
	}
	f.Fuzz(func(t *testing.T, ours, spec string) {
		attrs, ok := withOurs(sqsAttributes(spec, 1), ours)
		if !ok || envelope.MessageBytes(0, attrs) > 64<<10 {
			return
		}
		h := newHarness(t, false, nil)
		body := order("ORD-FUZZ-1")
		id := h.deadLetter(h.route, msg{body: body, attrs: attrs})
		h.clock.Advance(due)
		s := h.run(h.engine(func(o *replay.Options) { o.Logger = slog.New(slog.DiscardHandler); o.Metrics = nil }), replay.Request{})
		if s.Total.Replayed != 1 || s.Total.ParkedTotal() != 0 || s.Total.Errors != 0 {
			t.Fatalf("counts %+v; want one first replay", countsOf(s.Total))
		}
		got := h.stored(h.route.SourceURL)
		if len(got) != 1 || !got[0].hasMeta {
			t.Fatalf("%d messages in the source", len(got))
		}
		meta := got[0].meta
		if meta.ReplayCount != 1 || meta.OriginalMessageID != id || meta.Refunds != 0 || meta.Reason != "" || !meta.ResetAt.IsZero() {
			t.Fatalf("sent with %+v; want the first replay of %s", meta, id)
		}
		if meta.Sealed(h.sealKey(), body, h.route.SourceURL).Seal != meta.Seal {
			t.Fatal("sent metadata the engine did not seal")
		}
		want := maps.Clone(attrs)
		if theirs, ok := want[replay.AttributeName]; ok {
			delete(want, replay.AttributeName)
			want[envelope.Neutral(replay.AttributeName, attrs)] = theirs
		}
		if !reflect.DeepEqual(got[0].producer, want) {
			t.Fatalf("producer attributes sent:\n%v\nwant\n%v", got[0].producer, want)
		}
	})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withOurs adds our attribute with the String value ours (when not empty)
// to attrs; ok is false when SQS would refuse the message.
func withOurs(attrs map[string]types.MessageAttributeValue, ours string) (_ map[string]types.MessageAttributeValue, ok bool) {
	if ours != "" {
		if _, taken := attrs[replay.AttributeName]; !taken && len(attrs) == envelope.MaxAttributes || !sqsText(ours) {
			return nil, false
		}
		attrs[replay.AttributeName] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(ours)}
	}
	return attrs, envelope.MessageBytes(0, attrs) <= envelope.MaxMessageBytes
}

// sqsAttributes builds message attributes as SQS delivers them from spec:
// NUL-terminated triples name, data type, value. An attribute SQS refuses
// (an invalid name, an empty value) is skipped; a data type other than
// String, Number or Binary (each with an optional ".label") is String; a
// String or Number value loses the characters SQS refuses; each value is
// repeated `repeat` times (0 counts as once); the eleventh attribute and
// later are dropped. (internal/envelope's and invalid's fuzz targets have
// the same.)
func sqsAttributes(spec string, repeat int) map[string]types.MessageAttributeValue {
	fields := strings.Split(spec, "\x00")
	attrs := map[string]types.MessageAttributeValue{}
	for i := 0; i+2 < len(fields) && len(attrs) < envelope.MaxAttributes; i += 3 {
		name, typ, value := fields[i], fields[i+1], strings.Repeat(fields[i+2], max(repeat, 1))
		if !envelope.ValidName(name) || value == "" {
			continue
		}
		base, _, _ := strings.Cut(typ, ".")
		if base != "String" && base != "Number" && base != "Binary" || len(typ) > 256 || !sqsText(typ) {
			typ, base = "String", "String"
		}
		if base == "Binary" {
			attrs[name] = types.MessageAttributeValue{DataType: aws.String(typ), BinaryValue: []byte(value)}
			continue
		}
		if value = strings.Map(func(r rune) rune {
			if r == utf8.RuneError || !sqsRune(r) {
				return -1
			}
			return r
		}, value); value != "" {
			attrs[name] = types.MessageAttributeValue{DataType: aws.String(typ), StringValue: aws.String(value)}
		}
	}
	return attrs
}

func sqsText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !sqsRune(r) })
}

func sqsRune(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// A route's name travels in the metadata the engine seals, and metadata over
// the engine's bounds never verifies: with a longer name every replay was
// taken for a first one and MAX_REPLAYS never parked the message (found by
// FuzzLoadConfig, its corpus holds the environment). Such a route is refused.
func TestRouteNamesFitTheMetadata(t *testing.T) {
	tests := []struct {
		name    string
		bytes   int
		refused bool
	}{
		{"at the bound", 256, false},
		{"over the bound", 257, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			rt := h.route
			rt.Name = strings.Repeat("o", tt.bytes)
			h.deadLetter(h.route, msg{body: order("ORD-LONG")})
			var replays int
			for range replay.DefaultMaxReplays + 2 {
				h.clock.Advance(48 * time.Hour)
				s, err := h.tryRun(context.Background(), h.engine(), replay.Request{Routes: []replay.Route{rt}})
				if tt.refused {
					if !errors.Is(err, replay.ErrInvalidRequest) {
						t.Fatalf("err = %v, want ErrInvalidRequest", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				replays += s.Total.Replayed
				// The consumer fails it again: back to the DLQ, attributes and all.
				for _, m := range h.q.Messages(rt.SourceURL) {
					h.drainQueue(rt.SourceURL)
					h.deadLetter(h.route, msg{body: aws.ToString(m.Body), attrs: m.MessageAttributes})
				}
			}
			if parked := len(h.q.Messages(rt.ParkingURL)); replays != replay.DefaultMaxReplays || parked != 1 {
				t.Fatalf("replayed %d times, %d parked; want %d replays, then parked", replays, parked, replay.DefaultMaxReplays)
			}
		})
	}
}
