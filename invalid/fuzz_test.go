package invalid_test

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/clip"
	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/invalid"
)

// FuzzRead decodes the verdict of attribute sets as SQS delivers them: our
// attribute homing-invalid as Stamp writes it or forged, beside a
// producer's (its .prev copies, the replay's attribute, up to ten in all).
// Properties:
//   - Read returns a typed error (ErrCorrupt, nothing else) or a verdict
//     whose every field is within its bound (MaxReasonBytes and the others,
//     plus the cut marker) and the producer's attributes (at most ten, never
//     ours, never more bytes than it was given);
//   - the round trip: Stamp of what Read returned succeeds and reads back
//     the same verdict and the same attributes.
//
// The input: ours is the String value of homing-invalid, spec the other
// attributes (NUL-terminated triples name, data type, value), each value
// repeated `repeat` times.
func FuzzRead(f *testing.F) {
	stamped := func(producer map[string]types.MessageAttributeValue, m invalid.Metadata) string {
		attrs, err := invalid.Stamp(producer, m)
		if err != nil {
			f.Fatal(err)
		}
		return aws.ToString(attrs[invalid.AttributeName].StringValue)
	}
	at := time.Date(2026, 11, 30, 10, 5, 0, 0, time.UTC)
	verdict := invalid.Metadata{Reason: "invalid-tax-id", Detail: "customer.taxId 12.ABC: not a valid CNPJ", SourceQueue: "arn:aws:sqs:us-east-1:000000000000:orders",
		MessageID: "0b6d3c1e-4a5f-4f5e-9a43-1d2c3b4a5f6e", Consumer: "invoice", At: at}
	f.Add(stamped(nil, verdict), "", uint8(0))
	f.Add(stamped(nil, invalid.Metadata{Detail: "x" + strings.Repeat("é", invalid.MaxDetailBytes)}), "", uint8(0)) // cut before a rune
	f.Add(`{"meta":{"reason":"`+strings.Repeat("r", invalid.MaxReasonBytes+1)+`"}}`, "", uint8(0))
	f.Add(`{"meta":{"reason":"x","at":"2026-11-30T10:05:00+05:00"}}`, "homing-invalid.prev\x00String\x00{\"meta\":{}}\x00", uint8(1))
	f.Add(`{"meta":null}`, "homing-replay\x00String\x00{\"meta\":{\"originalMessageId\":\"m\"}}\x00", uint8(1))
	f.Add(`{`, "trace\x00String\x00t-1\x00", uint8(0))
	f.Fuzz(func(t *testing.T, ours, spec string, repeat uint8) {
		attrs := sqsAttributes(spec, int(repeat))
		if ours != "" {
			if _, taken := attrs[invalid.AttributeName]; !taken && len(attrs) == envelope.MaxAttributes || !sqsText(ours) {
				return // SQS refuses it
			}
			attrs[invalid.AttributeName] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(ours)}
		}
		if envelope.MessageBytes(0, attrs) > envelope.MaxMessageBytes {
			return // SQS never delivers it
		}
		before := maps.Clone(attrs)
		meta, producer, found, err := invalid.Read(attrs)
		if !reflect.DeepEqual(attrs, before) {
			t.Fatal("Read modified its argument")
		}
		_, present := attrs[invalid.AttributeName]
		switch {
		case found != present:
			t.Fatalf("found = %v, our attribute present = %v", found, present)
		case err != nil && (!errors.Is(err, invalid.ErrCorrupt) || producer != nil || meta != (invalid.Metadata{})):
			t.Fatalf("Read: %v, with %+v and %v: want ErrCorrupt and nothing else", err, meta, producer)
		case err != nil:
			return
		case !found && !reflect.DeepEqual(producer, attrs):
			t.Fatal("without our attribute, Read changed the attributes")
		case !found:
			return
		}
		checkBounded(t, meta)
		if _, ours := producer[invalid.AttributeName]; ours || len(producer) > envelope.MaxAttributes {
			t.Fatalf("producer attributes %v: ours among them, or more than SQS carries", producer)
		}
		if got, in := envelope.MessageBytes(0, producer), envelope.MessageBytes(0, attrs); got > in {
			t.Fatalf("decoded %d bytes of attributes from %d", got, in)
		}

		again, err := invalid.Stamp(producer, meta)
		if err != nil {
			t.Fatalf("Stamp refuses what Read returned: %v", err)
		}
		meta2, producer2, found, err := invalid.Read(again)
		if err != nil || !found {
			t.Fatalf("Read of Stamp: found=%v err=%v", found, err)
		}
		if !sameVerdict(meta, meta2) {
			t.Fatalf("the verdict changed in the round trip:\n got %+v\nwant %+v", meta2, meta)
		}
		if !reflect.DeepEqual(producer2, producer) {
			t.Fatalf("attributes changed in the round trip:\n got %v\nwant %v", producer2, producer)
		}
	})
}

// A verdict Stamp cut reads back and is stamped again unchanged: the cut
// is not cut again (found by FuzzRead: a detail cut before a two-byte rune
// grew a dot at each stamp, since clip.String cut its own marker).
func TestStampCutsOnce(t *testing.T) {
	tests := []struct {
		name   string
		detail string
	}{
		{"cut on a rune boundary", strings.Repeat("é", invalid.MaxDetailBytes)},
		{"cut before a rune", "x" + strings.Repeat("é", invalid.MaxDetailBytes)},
		{"at the bound", strings.Repeat("d", invalid.MaxDetailBytes)},
		{"ends like a cut", strings.Repeat("d", invalid.MaxDetailBytes-3) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs, err := invalid.Stamp(nil, invalid.Metadata{Reason: "r", Detail: tt.detail})
			if err != nil {
				t.Fatal(err)
			}
			once, _, _, err := invalid.Read(attrs)
			if err != nil {
				t.Fatal(err)
			}
			if attrs, err = invalid.Stamp(nil, once); err != nil {
				t.Fatal(err)
			}
			twice, _, _, err := invalid.Read(attrs)
			if err != nil || twice.Detail != once.Detail {
				t.Fatalf("stamped again: %d bytes ending %q (err %v), was %d ending %q", len(twice.Detail), twice.Detail[max(0, len(twice.Detail)-6):], err,
					len(once.Detail), once.Detail[max(0, len(once.Detail)-6):])
			}
		})
	}
}

// checkBounded fails unless every field of m is within what Stamp writes.
func checkBounded(t *testing.T, m invalid.Metadata) {
	t.Helper()
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"reason", m.Reason, invalid.MaxReasonBytes},
		{"detail", m.Detail, invalid.MaxDetailBytes},
		{"sourceQueue", m.SourceQueue, invalid.MaxNameBytes},
		{"messageId", m.MessageID, invalid.MaxNameBytes},
		{"consumer", m.Consumer, invalid.MaxNameBytes},
	} {
		if len(f.v) > f.max+len(clip.Marker) || !utf8.ValidString(f.v) {
			t.Fatalf("%s of %d bytes decoded, bound %d", f.name, len(f.v), f.max)
		}
	}
}

// sameVerdict compares two verdicts as they travel: field by field, the
// times as instants in their JSON form.
func sameVerdict(a, b invalid.Metadata) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// sqsAttributes builds message attributes as SQS delivers them from spec:
// NUL-terminated triples name, data type, value. An attribute SQS refuses
// (an invalid name, an empty value) is skipped; a data type other than
// String, Number or Binary (each with an optional ".label") is String; a
// String or Number value loses the characters SQS refuses; each value is
// repeated `repeat` times (0 counts as once); the eleventh attribute and
// later are dropped. (internal/envelope's fuzz target has the same.)
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
