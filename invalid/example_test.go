package invalid_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/invalid"
)

// A record is stamped with its verdict on the way to the invalid queue and
// read back by whoever drains it. The producer had sent an attribute of our
// name (a forgery, or a verdict sent back): it is neither decoded nor lost,
// but returned among the producer's attributes under a neutral name.
func ExampleStamp() {
	producer := map[string]types.MessageAttributeValue{
		"traceId":             {DataType: aws.String("String"), StringValue: aws.String("t-42")},
		invalid.AttributeName: {DataType: aws.String("String"), StringValue: aws.String(`{"reason":"forged"}`)},
	}
	stamped, err := invalid.Stamp(producer, invalid.Metadata{
		Reason:      "schema-violation",
		Detail:      "amount: must be positive",
		SourceQueue: "arn:aws:sqs:eu-west-1:123456789012:shipments",
		MessageID:   "m-1",
		Consumer:    "labels",
		At:          time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	meta, attrs, found, err := invalid.Read(stamped)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(found, meta.Reason, meta.Detail, meta.MessageID, meta.At.Format(time.RFC3339))
	fmt.Println(aws.ToString(attrs["traceId"].StringValue))
	fmt.Println(aws.ToString(attrs["homing-invalid.prev"].StringValue))
	_, ours := attrs[invalid.AttributeName]
	fmt.Println(ours)
	// Output:
	// true schema-violation amount: must be positive m-1 2026-11-29T10:00:00Z
	// t-42
	// {"reason":"forged"}
	// false
}
