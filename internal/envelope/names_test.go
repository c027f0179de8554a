package envelope_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
	"github.com/homingdlq/homing/invalid"
)

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"traceparent", true},
		{"a.b-c_D9", true},
		{strings.Repeat("a", 256), true},
		{strings.Repeat("a", 257), false},
		{"", false},
		{".lead", false},
		{"trail.", false},
		{"a..b", false},
		{"sp ace", false},
		{"AWS.TraceHeader", false},
		{"aws.x", false},
		{"Amazon.x", false},
		{"amazon.x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := envelope.ValidName(tt.name); got != tt.ok {
				t.Fatalf("ValidName(%q) = %v, want %v", tt.name, got, tt.ok)
			}
		})
	}
}

// Our metadata names are reserved wherever they are defined.
func TestReservedNames(t *testing.T) {
	for _, n := range []string{invalid.AttributeName, envelope.ReplayAttributeName, "AWS.x", "Amazon.x"} {
		if !envelope.Reserved(n) {
			t.Errorf("%q is not reserved", n)
		}
	}
	if envelope.Reserved(envelope.Neutral(invalid.AttributeName, nil)) {
		t.Error("the neutral name is reserved")
	}
}

func TestNeutral(t *testing.T) {
	taken := map[string]types.MessageAttributeValue{"homing-invalid.prev": {}}
	if got := envelope.Neutral("homing-invalid", nil); got != "homing-invalid.prev" {
		t.Fatalf("Neutral = %q", got)
	}
	got := envelope.Neutral("homing-invalid", taken)
	if _, clash := taken[got]; clash || !envelope.ValidName(got) || envelope.Reserved(got) {
		t.Fatalf("Neutral with the first name taken = %q", got)
	}
}

// Item 13: a forged overflow section cannot inject names into what we forward.
func TestUnpackRejectsAForgedOverflow(t *testing.T) {
	nine := producerAttrs(9)
	doc := func(overflow string) string { return `{"meta":{"reason":"x"},"overflow":{` + overflow + `}}` }
	one := func(name string) string { return fmt.Sprintf(`%q:{"t":"String","s":"v"}`, name) }
	tests := []struct {
		name     string
		natives  map[string]types.MessageAttributeValue
		overflow string
	}{
		{"reserved AWS name", nine, one("AWS.TraceHeader")},
		{"reserved Amazon name", nine, one("amazon.x")},
		{"our own name", nine, one("homing-invalid")},
		{"the other lane's name", nine, one("homing-replay")},
		{"invalid SQS name", nine, one("a..b")},
		{"name already present", nine, one("attr-00")},
		{"more than Pack folds", nine, one("z1") + "," + one("z2")},
		{"overflow with room left", producerAttrs(3), one("z1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs := map[string]types.MessageAttributeValue{}
			for n, a := range tt.natives {
				attrs[n] = a
			}
			attrs["homing-invalid"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(doc(tt.overflow))}
			_, found, err := envelope.Unpack(attrs, "homing-invalid", &meta{})
			if !found || !errors.Is(err, envelope.ErrCorrupt) {
				t.Fatalf("found=%v err=%v, want ErrCorrupt", found, err)
			}
		})
	}
}

// Pack never folds a reserved name (Unpack would refuse it).
func TestPackNeverFoldsAReservedName(t *testing.T) {
	producer := producerAttrs(9)
	producer["zz-homing"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("z")}
	delete(producer, "attr-08")
	producer[envelope.ReplayAttributeName] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("{}")}
	packed, err := envelope.Pack(producer, invalid.AttributeName, meta{})
	if err != nil {
		t.Fatal(err)
	}
	if _, native := packed[envelope.ReplayAttributeName]; !native {
		t.Fatal("the replay metadata was folded")
	}
	if _, _, err := envelope.Unpack(packed, invalid.AttributeName, &meta{}); err != nil {
		t.Fatal(err)
	}
}
