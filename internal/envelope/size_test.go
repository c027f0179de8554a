package envelope_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// Item 12: the largest message the source queue accepts, with the largest
// metadata we write, still fits the invalid and parking queues (SQS's
// maximum), whatever its attributes hold.
func TestTheLargestSourceMessageStillFitsWithOurMetadata(t *testing.T) {
	big := strings.Repeat("x", envelope.MaxMetadataBytes-len(`{"detail":""}`)) // the largest metadata Pack takes
	fillers := map[string]string{
		"escapes":  `"\`,              // JSON doubles them
		"html":     "<>&",             // escaped as \u003c unless told not to
		"controls": "\t\n\r",          // allowed by SQS, escaped by JSON
		"unicode":  "\u2028\u2029é",   // escaped by encoding/json
		"plain":    "abcdefghijklmno", // no growth
	}
	for name, filler := range fillers {
		for _, binary := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s binary=%v", name, binary), func(t *testing.T) {
				// Ten attributes of equal size, then a body filling the rest.
				producer := map[string]types.MessageAttributeValue{}
				per := envelope.MaxSourceMessageBytes / 11
				for i := range envelope.MaxAttributes {
					n := fmt.Sprintf("attr-%02d-%s", i, strings.Repeat("n", 200))
					v := types.MessageAttributeValue{DataType: aws.String("String." + strings.Repeat("t", 200))}
					room := per - len(n) - len(*v.DataType)
					if binary {
						v.DataType = aws.String("Binary")
						room = per - len(n) - len("Binary")
						v.BinaryValue = []byte(strings.Repeat(filler, room/len(filler)+1)[:room])
					} else {
						s := strings.Repeat(filler, room)
						for len(s) > room {
							s = s[:len(s)-1]
						}
						s = strings.ToValidUTF8(s, "")
						v.StringValue = aws.String(s)
					}
					producer[n] = v
				}
				bodyLen := envelope.MaxSourceMessageBytes - envelope.MessageBytes(0, producer)
				if bodyLen < 0 {
					t.Fatalf("attributes alone are %d bytes", envelope.MessageBytes(0, producer))
				}
				if got := envelope.MessageBytes(bodyLen, producer); got != envelope.MaxSourceMessageBytes {
					t.Fatalf("source message is %d bytes, want %d", got, envelope.MaxSourceMessageBytes)
				}
				packed, err := envelope.Pack(producer, "homing-invalid", map[string]string{"detail": big})
				if err != nil {
					t.Fatal(err)
				}
				if got := envelope.MessageBytes(bodyLen, packed); got > envelope.MaxMessageBytes {
					t.Fatalf("packed message is %d bytes, SQS takes %d (reserve %d, grew by %d)",
						got, envelope.MaxMessageBytes, envelope.MetadataReserveBytes, got-envelope.MaxSourceMessageBytes)
				}
			})
		}
	}
}
