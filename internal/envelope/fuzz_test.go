package envelope_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// FuzzUnpack decodes attribute sets as SQS delivers them (at most ten
// attributes with valid names, ours among them or forged, String, Number
// and Binary values, a message within SQS's 1 MiB) under each of our names.
// Properties:
//   - Unpack returns a typed error (ErrCorrupt, nothing else) or the
//     producer's attributes: at most ten, every native one unchanged, at
//     most one restored from the overflow section and only when nine stay
//     native, under a valid name that is not reserved and not present;
//   - what it returns is never larger than what it was given (no
//     amplification: decoding costs at most the input, which SQS bounds);
//   - the round trip: Pack of what Unpack returned succeeds (Pack takes
//     whatever Unpack accepts), grows the message by at most
//     MetadataReserveBytes, and Unpacks to the same attributes and metadata.
//
// The input: ours is the String value of our attribute (the document Pack
// writes, or anything), spec the other attributes (see sqsAttributes), each
// value repeated `repeat` times so that sizes reach SQS's limits.
func FuzzUnpack(f *testing.F) {
	doc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		return string(b)
	}
	nine := ""
	for _, n := range []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"} {
		nine += n + "\x00String\x00v\x00"
	}
	f.Add("", "", uint8(0))
	f.Add(`{"meta":{"reason":"x"}}`, "traceparent\x00String\x0000-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\x00", uint8(1))
	f.Add(doc(map[string]any{"meta": map[string]string{"reason": "x"}, "overflow": map[string]envelope.Attribute{"a9": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}}}}), nine, uint8(1))
	f.Add(doc(map[string]any{"meta": nil, "overflow": map[string]envelope.Attribute{"AWS.x": {DataType: "String", StringValue: aws.String("v")}}}), nine, uint8(3))
	f.Add(`{"meta":{},"overflow":{"z":{"t":"String","b":"dmFsdWU="}}}`, nine+"homing-invalid\x00String\x00{}\x00", uint8(200))
	// Folded attributes Pack never writes: a Binary one as a string, one
	// with both values, one with none, one without a type.
	for _, folded := range []string{`{"t":"Binary","s":"\u0001\u0001\u0001\u0001"}`, `{"t":"String","s":"x","b":"eQ=="}`, `{"t":"String"}`, `{"s":"x"}`} {
		f.Add(`{"meta":{},"overflow":{"z":`+folded+`}}`, nine, uint8(1))
	}
	f.Add(`not json`, "homing-replay.prev\x00String\x00{\"meta\":{}}\x00", uint8(2))
	f.Add(`{"meta":"`+strings.Repeat("x", envelope.MaxMetadataBytes)+`"}`, "", uint8(1))
	f.Fuzz(func(t *testing.T, ours, spec string, repeat uint8) {
		attrs := sqsAttributes(spec, int(repeat))
		if ours != "" {
			if !validString(ours) || len(attrs) == envelope.MaxAttributes && attrs[envelope.ReplayAttributeName].DataType == nil {
				return // SQS refuses it
			}
			attrs[envelope.ReplayAttributeName] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(ours)}
		}
		if envelope.MessageBytes(0, attrs) > envelope.MaxMessageBytes {
			return // SQS never delivers it
		}
		for _, name := range []string{envelope.ReplayAttributeName, envelope.InvalidAttributeName} {
			checkUnpack(t, attrs, name)
		}
	})
}

func checkUnpack(t *testing.T, attrs map[string]types.MessageAttributeValue, name string) {
	t.Helper()
	before := maps.Clone(attrs)
	var meta json.RawMessage
	producer, found, err := envelope.Unpack(attrs, name, &meta)
	if !reflect.DeepEqual(attrs, before) {
		t.Fatal("Unpack modified its argument")
	}
	_, present := attrs[name]
	switch {
	case found != present:
		t.Fatalf("found = %v with the attribute %s present = %v", found, name, present)
	case err != nil && (!errors.Is(err, envelope.ErrCorrupt) || producer != nil):
		t.Fatalf("Unpack: %v (attributes %v): want ErrCorrupt and none", err, producer)
	case err != nil:
		return
	case !found && !reflect.DeepEqual(producer, attrs):
		t.Fatal("without our attribute, Unpack changed the attributes")
	case !found:
		return
	}
	if len(producer) > envelope.MaxAttributes {
		t.Fatalf("%d producer attributes", len(producer))
	}
	if _, ok := producer[name]; ok {
		t.Fatalf("our attribute %s returned as the producer's", name)
	}
	restored := 0
	for n, a := range producer {
		if native, ok := attrs[n]; ok {
			if !reflect.DeepEqual(a, native) {
				t.Fatalf("native attribute %q changed: %v, was %v", n, a, native)
			}
			continue
		}
		restored++
		if !envelope.ValidName(n) || envelope.Reserved(n) || !sqsAccepts(a) {
			t.Fatalf("restored attribute %q = %+v: SQS would refuse it, or its name is reserved", n, a)
		}
	}
	if restored > 1 || restored == 1 && len(attrs) != envelope.MaxAttributes {
		t.Fatalf("%d attributes restored beside %d native ones", restored, len(attrs)-1)
	}
	if got, in := envelope.MessageBytes(len(meta), producer), envelope.MessageBytes(0, attrs); got > in {
		t.Fatalf("decoded %d bytes from %d", got, in)
	}

	packed, err := envelope.Pack(producer, name, meta)
	if err != nil {
		t.Fatalf("Pack refuses what Unpack returned: %v", err)
	}
	if len(packed) > envelope.MaxAttributes {
		t.Fatalf("packed %d attributes", len(packed))
	}
	if size := envelope.MessageBytes(0, producer); size <= envelope.MaxSourceMessageBytes {
		if grown := envelope.MessageBytes(0, packed) - size; grown > envelope.MetadataReserveBytes {
			t.Fatalf("Pack grew %d bytes of attributes by %d, more than the reserve %d", size, grown, envelope.MetadataReserveBytes)
		}
	}
	var again json.RawMessage
	back, found, err := envelope.Unpack(packed, name, &again)
	if err != nil || !found {
		t.Fatalf("Unpack of Pack: found=%v err=%v", found, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, meta); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, compact.Bytes()) {
		t.Fatalf("metadata %s came back as %s", compact.Bytes(), again)
	}
	if !reflect.DeepEqual(back, producer) {
		t.Fatalf("attributes changed in the round trip:\n got %v\nwant %v", back, producer)
	}
}

// sqsAttributes builds message attributes as SQS delivers them from spec:
// NUL-terminated triples name, data type, value. An attribute SQS refuses
// (an invalid name, an empty value) is skipped; a data type other than String, Number or Binary (each with an
// optional ".label") is String; a String or Number value loses the
// characters SQS refuses; each value is repeated `repeat` times (0 counts as
// once); the eleventh attribute and later are dropped.
func sqsAttributes(spec string, repeat int) map[string]types.MessageAttributeValue {
	fields := strings.Split(spec, "\x00")
	attrs := map[string]types.MessageAttributeValue{}
	for i := 0; i+2 < len(fields) && len(attrs) < envelope.MaxAttributes; i += 3 {
		name, typ, value := fields[i], fields[i+1], strings.Repeat(fields[i+2], max(repeat, 1))
		if !envelope.ValidName(name) || value == "" {
			continue // SQS refuses an invalid name, and an empty value
		}
		base, _, _ := strings.Cut(typ, ".")
		if base != "String" && base != "Number" && base != "Binary" || len(typ) > 256 || !validString(typ) {
			typ, base = "String", "String"
		}
		if base == "Binary" {
			attrs[name] = types.MessageAttributeValue{DataType: aws.String(typ), BinaryValue: []byte(value)}
			continue
		}
		if value = sqsString(value); value != "" {
			attrs[name] = types.MessageAttributeValue{DataType: aws.String(typ), StringValue: aws.String(value)}
		}
	}
	return attrs
}

// sqsAccepts reports whether SQS takes a as a message attribute's value: a
// data type String, Number or Binary (optionally with a ".label", at most
// 256 bytes), and a non-empty value of that kind (String and Number values
// of the characters SQS allows).
func sqsAccepts(a types.MessageAttributeValue) bool {
	typ := aws.ToString(a.DataType)
	base, _, _ := strings.Cut(typ, ".")
	switch {
	case len(typ) > 256 || !validString(typ):
		return false
	case base == "Binary":
		return a.StringValue == nil && len(a.BinaryValue) > 0
	case base == "String" || base == "Number":
		return a.BinaryValue == nil && aws.ToString(a.StringValue) != "" && validString(*a.StringValue)
	}
	return false
}

// sqsString keeps the characters SQS allows in a String value: #x9, #xA,
// #xD, #x20 to #xD7FF, #xE000 to #xFFFD, #x10000 to #x10FFFF.
func sqsString(v string) string {
	var s strings.Builder
	for len(v) > 0 {
		r, n := utf8.DecodeRuneInString(v)
		v = v[n:]
		if allowed(r) && !(r == utf8.RuneError && n == 1) {
			s.WriteRune(r)
		}
	}
	return s.String()
}

func validString(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !allowed(r) })
}

func allowed(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}
