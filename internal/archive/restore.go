package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/settings"
)

// Sender is the part of the SQS client [Restore] uses.
type Sender interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Restore sends o to the queue at url as it was received: body, attributes,
// and on a FIFO queue its group (its message id when it had none),
// deduplicated within the restore named restore, so that another restore
// sends it again. It returns the id of the message sent.
func Restore(ctx context.Context, q Sender, url, restore string, o Object) (string, error) {
	e := types.SendMessageBatchRequestEntry{Id: aws.String("m0"), MessageBody: aws.String(o.Body), MessageAttributes: o.MessageAttributes()}
	if settings.IsFIFO(url) {
		group := o.System[string(types.MessageSystemAttributeNameMessageGroupId)]
		if group == "" {
			group = o.MessageID
		}
		sum := sha256.Sum256([]byte(restore + "\n" + o.MessageID))
		e.MessageGroupId = aws.String(group)
		e.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
	}
	out, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{e}})
	if err == nil && len(out.Successful) != 1 {
		err = errors.New("not sent")
		if len(out.Failed) == 1 {
			err = fmt.Errorf("%s: %s", aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
		}
	}
	if err != nil {
		return "", fmt.Errorf("restore %s to %s: %w", o.MessageID, url, err)
	}
	return aws.ToString(out.Successful[0].MessageId), nil
}
