package browse

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Queue is the part of the SQS client browsing uses.
type Queue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Options bound a browse.
type Options struct {
	// Hide is how long a received message stays invisible while browsing;
	// it must outlast the browse. Default 30 s.
	Hide int32
	// Max stops after this many messages have been seen. Default 1000.
	Max int
}

// All receives every visible message of url once (up to opts.Max) and
// calls keep for each. Messages for which keep returns false are made
// visible again before All returns; the others stay hidden for opts.Hide
// seconds and are the caller's (to delete, or to leave to reappear).
func All(ctx context.Context, q Queue, url string, opts Options, keep func(types.Message) bool) (kept []types.Message, err error) {
	if opts.Hide <= 0 {
		opts.Hide = 30
	}
	if opts.Max <= 0 {
		opts.Max = 1000
	}
	var release []*string
	defer func() {
		for _, h := range release {
			_, rerr := q.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: h, VisibilityTimeout: 0})
			if rerr != nil && err == nil {
				err = fmt.Errorf("release a message of %s: %w", url, rerr)
			}
		}
	}()
	seen := 0
	for seen < opts.Max {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(url),
			MaxNumberOfMessages:         int32(min(10, opts.Max-seen)),
			VisibilityTimeout:           opts.Hide,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return kept, fmt.Errorf("browse %s: %w", url, err)
		}
		if len(out.Messages) == 0 {
			return kept, nil
		}
		for _, m := range out.Messages {
			seen++
			if keep(m) {
				kept = append(kept, m)
			} else {
				release = append(release, m.ReceiptHandle)
			}
		}
	}
	return kept, nil
}
