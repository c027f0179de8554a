package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/browse"
	"github.com/homingdlq/homing/internal/settings"
)

// Lane is the lane of the deployed sample stack that the drills drive.
const Lane = "orders"

// Keys of the deployed stack's outputs: the lane's outputs, which the
// construct names settings.OutputID(Lane, key), and TaxServiceAdminURL,
// which cmd/localcheck adds.
var (
	SourceQueueURL       = settings.OutputID(Lane, settings.OutputSourceQueueURL)
	DeadLetterQueueURL   = settings.OutputID(Lane, settings.OutputDeadLetterQueueURL)
	InvalidQueueURL      = settings.OutputID(Lane, settings.OutputInvalidQueueURL)
	ParkingQueueURL      = settings.OutputID(Lane, settings.OutputParkingQueueURL)
	LedgerTableName      = settings.OutputID(Lane, settings.OutputLedgerTableName)
	IdempotencyTableName = settings.OutputID(Lane, settings.OutputIdempotencyTableName)
	ReplayFunctionName   = settings.OutputID(Lane, settings.OutputReplayFunctionName)
)

// TaxServiceAdminURL is the key under which cmd/localcheck writes the tax
// stand-in's admin URL beside the stack's outputs.
const TaxServiceAdminURL = "TaxServiceAdminUrl"

// DefaultOutputsFile is where `make deploy-local` writes the outputs.
const DefaultOutputsFile = ".local/outputs.json"

// Outputs are the deployed stack's outputs by key.
type Outputs map[string]string

// LoadOutputs reads the outputs file named by HOMING_OUTPUTS (through
// getenv), or DefaultOutputsFile. It reports every required key that is
// missing.
func LoadOutputs(getenv func(string) string, required ...string) (Outputs, error) {
	path := getenv("HOMING_OUTPUTS")
	if path == "" {
		path = DefaultOutputsFile
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read stack outputs (run `make deploy-local` first): %w", err)
	}
	var out Outputs
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode stack outputs %s: %w", path, err)
	}
	var missing []string
	for _, k := range required {
		if out[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("stack outputs %s lack %q", path, missing)
	}
	return out, nil
}

// Queue is the part of the SQS client the helpers use.
type Queue interface {
	browse.Queue
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// maxBatchBytes keeps a batch under SQS's limit for the whole batch (256 KiB
// on older setups) with room for the request around the bodies.
const maxBatchBytes = 200 << 10

// Publish sends bodies to url in order, 10 per SendMessageBatch call; a
// batch whose bodies are too large together is sent one message at a time.
// A refused entry is an error.
func Publish(ctx context.Context, q Queue, url string, bodies []string) error {
	for i := 0; i < len(bodies); i += 10 {
		chunk := bodies[i:min(i+10, len(bodies))]
		size := 0
		for _, b := range chunk {
			size += len(b)
		}
		if size > maxBatchBytes {
			for _, b := range chunk {
				if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
					return fmt.Errorf("publish to %s: %w", url, err)
				}
			}
			continue
		}
		entries := make([]types.SendMessageBatchRequestEntry, len(chunk))
		for j, b := range chunk {
			entries[j] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(b)}
		}
		out, err := q.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			return fmt.Errorf("publish to %s: %w", url, err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("publish to %s: %d messages refused: %s", url, len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
	}
	return nil
}

// Depth is what a queue holds, from its approximate attributes.
type Depth struct {
	Visible  int
	InFlight int // received and not deleted yet, or hidden until a backoff is due
	Delayed  int
}

// Total is every message the queue holds.
func (d Depth) Total() int { return d.Visible + d.InFlight + d.Delayed }

// QueueDepth reads the depth of url.
func QueueDepth(ctx context.Context, q Queue, url string) (Depth, error) {
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	}})
	if err != nil {
		return Depth{}, fmt.Errorf("depth of %s: %w", url, err)
	}
	n := func(k types.QueueAttributeName) int {
		v, _ := strconv.Atoi(out.Attributes[string(k)])
		return v
	}
	return Depth{
		Visible:  n(types.QueueAttributeNameApproximateNumberOfMessages),
		InFlight: n(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		Delayed:  n(types.QueueAttributeNameApproximateNumberOfMessagesDelayed),
	}, nil
}

// maxBrowse bounds the messages Take and Count look at in one call.
const maxBrowse = 100_000

// Take receives every visible message of url once (each stays hidden for
// 30 s while the others are looked at), deletes and returns the ones keep
// selects, and releases the others.
func Take(ctx context.Context, q Queue, url string, keep func(types.Message) bool) ([]types.Message, error) {
	seen := map[string]bool{}
	mine, err := browse.All(ctx, q, url, browse.Options{Max: maxBrowse}, func(m types.Message) bool {
		id := aws.ToString(m.MessageId)
		if seen[id] { // back after its 30 s: taken already
			return false
		}
		seen[id] = true
		return keep(m)
	})
	if err != nil {
		return nil, err
	}
	for _, m := range mine {
		if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return nil, fmt.Errorf("delete %s from %s: %w", aws.ToString(m.MessageId), url, err)
		}
	}
	return mine, nil
}

// Count browses url and counts the distinct messages keep selects, leaving
// every message in place, hidden for hide seconds (at least 1): short when a
// consumer or the replay must barely be delayed, longer than the browse when
// each message must be seen once only. It looks at no more than limit
// messages (limit <= 0: 1000).
func Count(ctx context.Context, q Queue, url string, hide int32, limit int, keep func(types.Message) bool) (int, error) {
	seen := map[string]bool{}
	_, err := browse.All(ctx, q, url, browse.Options{Hide: max(hide, 1), Max: limit}, func(m types.Message) bool {
		if id := aws.ToString(m.MessageId); !seen[id] && keep(m) {
			seen[id] = true
		}
		return false
	})
	return len(seen), err
}
