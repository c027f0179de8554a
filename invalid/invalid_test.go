package invalid_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/invalid"
)

func TestStampRead(t *testing.T) {
	producer := map[string]types.MessageAttributeValue{
		"trace":               {DataType: aws.String("String"), StringValue: aws.String("t-1")},
		invalid.AttributeName: {DataType: aws.String("String"), StringValue: aws.String("{a forgery")},
	}
	meta := invalid.Metadata{Reason: "invalid-tax-id", Detail: strings.Repeat("d", 5000), MessageID: "m-1", At: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	attrs, err := invalid.Stamp(producer, meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := producer[invalid.AttributeName+".prev"]; ok {
		t.Fatal("Stamp modified the producer's map")
	}
	got, back, found, err := invalid.Read(attrs)
	if err != nil || !found {
		t.Fatalf("Read: found %v, %v", found, err)
	}
	if got.Reason != meta.Reason || got.MessageID != "m-1" || !got.At.Equal(meta.At) {
		t.Errorf("read %+v, want %+v", got, meta)
	}
	if len(got.Detail) > invalid.MaxDetailBytes+len("...") || !strings.HasSuffix(got.Detail, "...") {
		t.Errorf("detail of %d bytes, bound %d and the cut marker", len(got.Detail), invalid.MaxDetailBytes)
	}
	if aws.ToString(back["trace"].StringValue) != "t-1" || aws.ToString(back[invalid.AttributeName+".prev"].StringValue) != "{a forgery" {
		t.Errorf("producer attributes back: %v", back)
	}
}

func TestReadWithoutMetadata(t *testing.T) {
	if _, _, found, err := invalid.Read(map[string]types.MessageAttributeValue{}); found || err != nil {
		t.Fatalf("found %v, err %v", found, err)
	}
}

func TestReadCorrupt(t *testing.T) {
	attrs := map[string]types.MessageAttributeValue{invalid.AttributeName: {DataType: aws.String("String"), StringValue: aws.String("{not ours")}}
	if _, _, _, err := invalid.Read(attrs); !errors.Is(err, invalid.ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
}

// A part number outside 1..Parts is not what Stamp writes for Publish: Read
// calls it corrupt; a consistent one travels as it is.
func TestReadParts(t *testing.T) {
	tests := []struct {
		part, parts int
		ok          bool
	}{
		{0, 0, true},
		{1, 2, true},
		{2, 2, true},
		{1, 0, false},
		{0, 2, false},
		{3, 2, false},
		{-1, -1, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("part %d of %d", tt.part, tt.parts), func(t *testing.T) {
			attrs, err := invalid.Stamp(nil, invalid.Metadata{Reason: "r", Part: tt.part, Parts: tt.parts})
			if err != nil {
				t.Fatal(err)
			}
			meta, _, _, err := invalid.Read(attrs)
			switch {
			case tt.ok && (err != nil || meta.Part != tt.part || meta.Parts != tt.parts):
				t.Fatalf("Read = %+v, %v", meta, err)
			case !tt.ok && !errors.Is(err, invalid.ErrCorrupt):
				t.Fatalf("Read = %+v, %v; want ErrCorrupt", meta, err)
			}
		})
	}
}
