package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/settings"
)

// MaxAttributes is SQS's limit of message attributes per message.
const MaxAttributes = 10

// Sizes, in the bytes SQS counts for a message (see [MessageBytes]).
const (
	// MaxMessageBytes is SQS's largest message; the invalid, parking and
	// dead-letter queues take it (settings declares it for the construct too).
	MaxMessageBytes = settings.MaxMessageBytes
	// MetadataReserveBytes is kept free on the source queue for what [Pack]
	// adds: our attribute's name (at most 256 bytes) and type, the document
	// around the metadata, the metadata itself (at most [MaxMetadataBytes]),
	// and the growth of the one producer attribute folded when all ten slots
	// are taken. Pack folds the attribute whose encoding grows least, and a
	// folded value grows by at most a third (base64) or not at all, so with
	// at least nine candidates sharing at most [MaxSourceMessageBytes], the
	// growth stays under MaxSourceMessageBytes/27 + 600 bytes: about 37 KiB,
	// plus 16 KiB of metadata, plus 1 KiB of names, under 64 KiB.
	// Package settings declares it, for the construct that sizes the source
	// queue with it too.
	MetadataReserveBytes = settings.MetadataReserveBytes
	// MaxSourceMessageBytes is the source queue's MaximumMessageSize: any
	// message it accepts still fits SQS's maximum after Pack.
	MaxSourceMessageBytes = settings.MaxSourceMessageBytes
	// MaxMetadataBytes bounds the JSON encoding of the metadata Pack takes.
	MaxMetadataBytes = 16 << 10
)

// Errors of the package. Match them with errors.Is.
var (
	// ErrNameTaken is returned by [Pack] when the producer already uses the
	// name of our metadata attribute.
	ErrNameTaken = errors.New("envelope: attribute name already used by the producer")
	// ErrTooLarge is returned by [Pack] for metadata over MaxMetadataBytes,
	// a name SQS would refuse, or more producer attributes than SQS carries.
	ErrTooLarge = errors.New("envelope: metadata, name or attributes out of bounds")
	// ErrCorrupt is returned by [Unpack] when our attribute is not what Pack
	// writes: not JSON, or an overflow section Pack could not have written.
	ErrCorrupt = errors.New("envelope: corrupt metadata attribute")
)

// MessageBytes is the size SQS counts for a message with a body of bodyBytes
// and attrs: the body plus, per attribute, its name, its data type and its
// value.
func MessageBytes(bodyBytes int, attrs map[string]types.MessageAttributeValue) int {
	n := bodyBytes
	for name, a := range attrs {
		n += attributeBytes(name, a)
	}
	return n
}

func attributeBytes(name string, a types.MessageAttributeValue) int {
	return len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
}

// Attribute is the JSON form of one folded producer attribute. A String or
// Number value is stored in "s", or in "b" (base64) when that is shorter
// than its JSON escaping.
type Attribute struct {
	DataType    string  `json:"t"`
	StringValue *string `json:"s,omitempty"`
	BinaryValue []byte  `json:"b,omitempty"`
}

type document struct {
	Meta     json.RawMessage      `json:"meta"`
	Overflow map[string]Attribute `json:"overflow,omitempty"`
}

// encode is json.Marshal without HTML escaping (which grows '<' sixfold).
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Pack returns the attributes to send: the producer's, plus one String
// attribute called name that holds meta as JSON. At most [MaxAttributes] are
// returned; when the producer used all ten, the attribute whose encoding
// grows least (the last by name among equals; never a [Reserved] one) is
// folded into ours, so the message grows by at most [MetadataReserveBytes].
// The producer map is not modified.
//
// Errors: [ErrNameTaken] when the producer uses name; [ErrTooLarge] when meta
// encodes to more than [MaxMetadataBytes], name is not a valid SQS name, or
// the producer has more than MaxAttributes attributes (SQS never delivers
// more).
func Pack(producer map[string]types.MessageAttributeValue, name string, meta any) (map[string]types.MessageAttributeValue, error) {
	if _, ok := producer[name]; ok {
		return nil, fmt.Errorf("pack %q: %w", name, ErrNameTaken)
	}
	if len(producer) > MaxAttributes || len(name) > maxNameBytes || name == "" {
		return nil, fmt.Errorf("pack %q with %d producer attributes: %w", name, len(producer), ErrTooLarge)
	}
	raw, err := encode(meta)
	if err != nil {
		return nil, fmt.Errorf("pack %q: encode metadata: %w", name, err)
	}
	if len(raw) > MaxMetadataBytes {
		return nil, fmt.Errorf("pack %q: metadata is %d bytes, limit %d: %w", name, len(raw), MaxMetadataBytes, ErrTooLarge)
	}
	doc := document{Meta: raw}
	out := maps.Clone(producer)
	if out == nil {
		out = make(map[string]types.MessageAttributeValue, 1)
	}
	for len(out) > MaxAttributes-1 {
		n, folded, ok := cheapestFold(out)
		if !ok {
			return nil, fmt.Errorf("pack %q: every producer attribute is reserved: %w", name, ErrTooLarge)
		}
		if doc.Overflow == nil {
			doc.Overflow = make(map[string]Attribute)
		}
		doc.Overflow[n] = folded
		delete(out, n)
	}
	body, err := encode(doc)
	if err != nil {
		return nil, fmt.Errorf("pack %q: encode envelope: %w", name, err)
	}
	out[name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(body))}
	return out, nil
}

// cheapestFold picks the attribute of attrs whose folded encoding grows the
// message least (the last by name among equals), skipping reserved names.
func cheapestFold(attrs map[string]types.MessageAttributeValue) (name string, folded Attribute, ok bool) {
	best := 0
	for _, n := range slices.Sorted(maps.Keys(attrs)) {
		if Reserved(n) {
			continue
		}
		a := fold(attrs[n])
		entry, err := encode(map[string]Attribute{n: a})
		if err != nil {
			continue
		}
		if growth := len(entry) - attributeBytes(n, attrs[n]); !ok || growth <= best {
			name, folded, best, ok = n, a, growth, true
		}
	}
	return name, folded, ok
}

// fold is the JSON form of a, its string value in base64 when that is
// shorter than JSON's escaping of it.
func fold(a types.MessageAttributeValue) Attribute {
	out := Attribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	if a.StringValue != nil {
		quoted, err := encode(*a.StringValue)
		if err == nil && len(quoted) > base64.StdEncoding.EncodedLen(len(*a.StringValue))+2 {
			out.StringValue = nil
			out.BinaryValue = []byte(*a.StringValue)
		}
	}
	return out
}

// maxFolded is the most attributes Pack folds for a message SQS delivered:
// at most MaxAttributes producer attributes, MaxAttributes-1 kept.
const maxFolded = 1

// Unpack is the inverse of [Pack]: it decodes our attribute called name into
// meta (when meta is not nil) and returns the producer's attributes with any
// folded ones restored. found is false, and producer is attrs without change,
// when the message carries no attribute called name.
//
// It returns an error wrapping [ErrCorrupt] when our attribute is not what
// Pack writes: not JSON, metadata over [MaxMetadataBytes] or that does not
// decode into meta, or an overflow section Pack could not have written (a
// name that is not a valid SQS name, is [Reserved] or is already present; a
// value SQS would refuse; more than one folded attribute; folded attributes
// while fewer than MaxAttributes-1 stay native). It never returns
// attributes smuggled in that way. Its work is linear in the size of attrs.
func Unpack(attrs map[string]types.MessageAttributeValue, name string, meta any) (producer map[string]types.MessageAttributeValue, found bool, err error) {
	ours, ok := attrs[name]
	if !ok {
		return attrs, false, nil
	}
	var doc document
	if err := json.Unmarshal([]byte(aws.ToString(ours.StringValue)), &doc); err != nil {
		return nil, true, fmt.Errorf("unpack %q: %w: %w", name, ErrCorrupt, err)
	}
	if len(doc.Meta) > MaxMetadataBytes {
		return nil, true, fmt.Errorf("unpack %q: metadata of %d bytes, Pack writes at most %d: %w", name, len(doc.Meta), MaxMetadataBytes, ErrCorrupt)
	}
	if meta != nil {
		if err := json.Unmarshal(doc.Meta, meta); err != nil {
			return nil, true, fmt.Errorf("unpack %q: metadata: %w: %w", name, ErrCorrupt, err)
		}
	}
	natives := len(attrs) - 1
	if len(doc.Overflow) > 0 && (len(doc.Overflow) > maxFolded || natives != MaxAttributes-1) {
		return nil, true, fmt.Errorf("unpack %q: %d folded attributes beside %d native ones, Pack folds %d only when %d stay: %w",
			name, len(doc.Overflow), natives, maxFolded, MaxAttributes-1, ErrCorrupt)
	}
	producer = make(map[string]types.MessageAttributeValue, natives+len(doc.Overflow))
	for n, a := range attrs {
		if n != name {
			producer[n] = a
		}
	}
	for n, a := range doc.Overflow {
		_, present := attrs[n]
		v := restore(a)
		if !ValidName(n) || Reserved(n) || present || !validValue(v) {
			return nil, true, fmt.Errorf("unpack %q: folded attribute %.64q is invalid, reserved or present: %w", name, n, ErrCorrupt)
		}
		producer[n] = v
	}
	return producer, true, nil
}

// restore is the inverse of fold.
func restore(a Attribute) types.MessageAttributeValue {
	v := types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	if a.StringValue == nil && a.BinaryValue != nil && !strings.HasPrefix(a.DataType, "Binary") {
		v.StringValue = aws.String(string(a.BinaryValue))
		v.BinaryValue = nil
	}
	return v
}

// validValue reports whether SQS takes v as a message attribute: a data
// type String, Number or Binary, optionally followed by a ".label", at most
// 256 bytes of the characters SQS allows; and a non-empty value of that
// kind, a String or Number one of those characters. Pack only folds
// attributes SQS delivered, so a folded one that is not is forged.
func validValue(v types.MessageAttributeValue) bool {
	typ := aws.ToString(v.DataType)
	base, _, _ := strings.Cut(typ, ".")
	if len(typ) > maxNameBytes || !sqsText(typ) {
		return false
	}
	switch base {
	case "Binary":
		return v.StringValue == nil && len(v.BinaryValue) > 0
	case "String", "Number":
		return v.BinaryValue == nil && aws.ToString(v.StringValue) != "" && sqsText(*v.StringValue)
	}
	return false
}

// sqsText reports whether s is valid UTF-8 of the characters SQS allows in
// a message: #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD, #x10000 to
// #x10FFFF.
func sqsText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000)
	})
}
