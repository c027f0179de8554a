package envelope_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

type meta struct {
	Reason string `json:"reason"`
}

func producerAttrs(n int) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, n)
	for i := range n {
		name := fmt.Sprintf("attr-%02d", i)
		if i%3 == 2 {
			out[name] = types.MessageAttributeValue{DataType: aws.String("Binary"), BinaryValue: []byte{byte(i), 0xff}}
			continue
		}
		out[name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("value %d", i))}
	}
	return out
}

func TestPackUnpackRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 8, 9, 10} {
		t.Run(fmt.Sprintf("%d producer attributes", n), func(t *testing.T) {
			producer := producerAttrs(n)
			before := maps.Clone(producer)
			packed, err := envelope.Pack(producer, "homing", meta{Reason: "invalid-tax-id"})
			if err != nil {
				t.Fatal(err)
			}
			if len(packed) > envelope.MaxAttributes {
				t.Fatalf("packed %d attributes, SQS allows %d", len(packed), envelope.MaxAttributes)
			}
			if want := min(n+1, envelope.MaxAttributes); len(packed) != want {
				t.Fatalf("packed %d attributes, want %d", len(packed), want)
			}
			if !reflect.DeepEqual(producer, before) {
				t.Fatal("Pack modified the producer's map")
			}
			var got meta
			restored, found, err := envelope.Unpack(packed, "homing", &got)
			if err != nil || !found {
				t.Fatalf("Unpack: found=%v err=%v", found, err)
			}
			if got.Reason != "invalid-tax-id" {
				t.Fatalf("metadata = %+v", got)
			}
			if !reflect.DeepEqual(restored, producer) {
				t.Fatalf("restored attributes differ:\n got %v\nwant %v", restored, producer)
			}
		})
	}
}

func TestPackFoldsTheLastNamesWhenFull(t *testing.T) {
	packed, err := envelope.Pack(producerAttrs(10), "homing", meta{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		if _, ok := packed[fmt.Sprintf("attr-%02d", i)]; !ok {
			t.Errorf("attr-%02d should stay a native attribute", i)
		}
	}
	if _, ok := packed["attr-09"]; ok {
		t.Error("attr-09 should be folded into the envelope")
	}
}

func TestPackRejectsOurNameFromTheProducer(t *testing.T) {
	producer := map[string]types.MessageAttributeValue{"homing": {DataType: aws.String("String"), StringValue: aws.String("x")}}
	if _, err := envelope.Pack(producer, "homing", meta{}); !errors.Is(err, envelope.ErrNameTaken) {
		t.Fatalf("err = %v, want ErrNameTaken", err)
	}
}

func TestUnpackWithoutEnvelope(t *testing.T) {
	attrs := producerAttrs(3)
	got, found, err := envelope.Unpack(attrs, "homing", &meta{})
	if err != nil || found || !reflect.DeepEqual(got, attrs) {
		t.Fatalf("got %v found=%v err=%v", got, found, err)
	}
}

func TestUnpackRejectsGarbage(t *testing.T) {
	attrs := map[string]types.MessageAttributeValue{"homing": {DataType: aws.String("String"), StringValue: aws.String("{not json")}}
	if _, _, err := envelope.Unpack(attrs, "homing", &meta{}); err == nil {
		t.Fatal("want an error for a corrupt envelope")
	}
}
