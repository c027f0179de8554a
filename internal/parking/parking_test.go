package parking_test

import (
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/internal/parking"
	"github.com/homingdlq/homing/replay"
)

func str(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// producer returns n attributes of a producer.
func producer(n int) map[string]types.MessageAttributeValue {
	out := map[string]types.MessageAttributeValue{}
	for i := range n {
		out[string(rune('a'+i))+"-attr"] = str("value é \"<" + string(rune('a'+i)))
	}
	if n > 0 {
		out["a-attr"] = types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte{0, 0xff}}
	}
	return out
}

func equal(a, b map[string]types.MessageAttributeValue) bool {
	return maps.EqualFunc(a, b, func(x, y types.MessageAttributeValue) bool {
		return aws.ToString(x.DataType) == aws.ToString(y.DataType) && aws.ToString(x.StringValue) == aws.ToString(y.StringValue) &&
			string(x.BinaryValue) == string(y.BinaryValue)
	})
}

// A record parked, then released, carries the producer's attributes
// (none, one, or all ten: one folded into our note) at every step, our
// note of why it was parked, then the release round; the parked one
// names no round.
func TestAttributesThroughAParkAndARelease(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, n := range []int{0, 1, 10} {
		attrs := producer(n)
		parked, err := parking.Attributes(attrs, "m-1", fifo.ReasonExpiring, at)
		if err != nil {
			t.Fatalf("%d attributes: %v", n, err)
		}
		if len(parked) > 10 {
			t.Fatalf("%d attributes parked with %d", n, len(parked))
		}
		meta, got, found, err := replay.Read(parked)
		if err != nil || !found || meta.OriginalMessageID != "m-1" || meta.Reason != fifo.ReasonExpiring || !equal(got, attrs) {
			t.Fatalf("%d attributes, parked: %+v %v %v %v", n, meta, got, found, err)
		}
		if n := parking.Released(parked, "body", "r-1"); n != 0 {
			t.Fatalf("a parked record is number %d of a round", n)
		}
		released, err := parking.ReleasedAttributes(parked, "p-1", "body", "r-1", 7)
		if err != nil {
			t.Fatal(err)
		}
		meta, got, found, err = replay.Read(released)
		if err != nil || !found || meta.OriginalMessageID != "p-1" || !equal(got, attrs) {
			t.Fatalf("%d attributes, released: %+v %v %v %v", n, meta, got, found, err)
		}
		if n := parking.Released(released, "body", "r-1"); n != 7 {
			t.Fatalf("a released record is number %d of its round, want 7", n)
		}
	}
}

// A release mark holds only for the round that wrote it and the body it
// was written over: a producer's copy of a released record's attributes
// on another body, a made-up mark, or a mark of another round names no
// record sent back.
func TestReleaseMarksCannotBeForged(t *testing.T) {
	released, err := parking.ReleasedAttributes(producer(2), "p-1", `{"id":1}`, "r-1", 3)
	if err != nil {
		t.Fatal(err)
	}
	forged := func(release string) map[string]types.MessageAttributeValue {
		attrs, err := envelope.Pack(producer(2), envelope.ReplayAttributeName, map[string]string{"originalMessageId": "p-1", "release": release})
		if err != nil {
			t.Fatal(err)
		}
		return attrs
	}
	for name, tt := range map[string]struct {
		attrs       map[string]types.MessageAttributeValue
		body, round string
	}{
		"another body":        {released, `{"id":2}`, "r-1"},
		"another round":       {released, `{"id":1}`, "r-2"},
		"no round":            {released, `{"id":1}`, ""},
		"a made-up mark":      {forged("3.00112233445566778899aabbccddeeff"), `{"id":1}`, "r-1"},
		"a number, no mark":   {forged("3"), `{"id":1}`, "r-1"},
		"the round as a mark": {forged("r-1"), `{"id":1}`, "r-1"},
	} {
		if n := parking.Released(tt.attrs, tt.body, tt.round); n != 0 {
			t.Errorf("%s: number %d", name, n)
		}
	}
	if n := parking.Released(released, `{"id":1}`, "r-1"); n != 3 {
		t.Fatalf("the true record: number %d, want 3", n)
	}
}

// An attribute of our name that is not ours is the producer's: it is kept
// under another name (one the producer does not use) through a park and a
// release, and names no round.
func TestAProducersGarbageUnderOurNameIsKept(t *testing.T) {
	for _, taken := range []string{"", "homing-corrupt", "homing-corrupt-1"} {
		attrs := producer(3)
		want := producer(3)
		for _, name := range []string{"homing-corrupt", "homing-corrupt-1"} {
			if name == taken || taken == "homing-corrupt-1" {
				attrs[name] = str("the producer's " + name)
				want[name] = attrs[name]
			}
		}
		attrs[envelope.ReplayAttributeName] = str("not json")
		if n := parking.Released(attrs, "body", "r-1"); n != 0 {
			t.Fatalf("garbage is number %d of a round", n)
		}
		parked, err := parking.Attributes(attrs, "m-1", fifo.ReasonGroupParked, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		released, err := parking.ReleasedAttributes(parked, "p-1", "body", "r-1", 1)
		if err != nil {
			t.Fatal(err)
		}
		_, got, _, err := replay.Read(released)
		if err != nil {
			t.Fatal(err)
		}
		want[map[string]string{"": "homing-corrupt", "homing-corrupt": "homing-corrupt-1", "homing-corrupt-1": "homing-corrupt-2"}[taken]] = str("not json")
		if !equal(got, want) {
			t.Fatalf("producer using %q: released with %v, want %v", taken, got, want)
		}
	}
}

// Attributes beyond what SQS carries cannot be packed: an error, not a
// message that loses some.
func TestElevenAttributesAreRefused(t *testing.T) {
	attrs := producer(10)
	attrs["k-attr"] = str("eleventh")
	if _, err := parking.Attributes(attrs, "m-1", fifo.ReasonGroupParked, time.Now()); err == nil {
		t.Fatal("eleven attributes packed")
	}
}

func TestParseOnError(t *testing.T) {
	for in, want := range map[string]fifo.OnError{"": fifo.Hold, "hold": fifo.Hold, "skip": fifo.Skip} {
		if got, err := fifo.ParseOnError(in); err != nil || got != want {
			t.Errorf("ParseOnError(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := fifo.ParseOnError("drop"); err == nil {
		t.Error(`ParseOnError("drop") accepted`)
	}
}

// Validate reports every Keeper that cannot keep order, at once.
func TestKeeperValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		k    fifo.Keeper
		ok   bool
	}{
		{"zero", fifo.Keeper{}, false},
		{"hold", fifo.Keeper{Store: store{}, Queue: queue{}, SourceURL: "s", ParkingURL: "p"}, true},
		{"skip without a store", fifo.Keeper{Queue: queue{}, SourceURL: "s", ParkingURL: "p", OnError: fifo.Skip}, true},
		{"hold without a store", fifo.Keeper{Queue: queue{}, SourceURL: "s", ParkingURL: "p"}, false},
		{"no parking queue", fifo.Keeper{Store: store{}, Queue: queue{}, SourceURL: "s"}, false},
		{"unknown OnError", fifo.Keeper{Store: store{}, Queue: queue{}, SourceURL: "s", ParkingURL: "p", OnError: "drop"}, false},
		{"negative backoff", fifo.Keeper{Store: store{}, Queue: queue{}, SourceURL: "s", ParkingURL: "p", MinBackoff: -time.Second}, false},
	} {
		if err := tt.k.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate = %v", tt.name, err)
		}
	}
}

type store struct{ fifo.Store }
type queue struct{ fifo.Queue }
