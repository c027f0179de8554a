package browse_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/browse"
)

// fakeQueue returns visible messages oldest first, like SQS mostly does:
// a browse that released messages at once would see the same ones forever.
type fakeQueue struct {
	msgs     []string
	hidden   map[string]bool
	released []string
}

func (f *fakeQueue) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range f.msgs {
		if len(out.Messages) == int(in.MaxNumberOfMessages) {
			break
		}
		if !f.hidden[m] {
			f.hidden[m] = true
			out.Messages = append(out.Messages, types.Message{Body: aws.String(m), ReceiptHandle: aws.String(m)})
		}
	}
	return out, nil
}

func (f *fakeQueue) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.hidden[aws.ToString(in.ReceiptHandle)] = false
	f.released = append(f.released, aws.ToString(in.ReceiptHandle))
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func TestAllSeesEveryMessageOnce(t *testing.T) {
	q := &fakeQueue{hidden: map[string]bool{}}
	for i := range 25 {
		q.msgs = append(q.msgs, fmt.Sprintf("other-%02d", i))
	}
	q.msgs = append(q.msgs, "mine-1", "mine-2")
	kept, err := browse.All(context.Background(), q, "url", browse.Options{}, func(m types.Message) bool {
		return strings.HasPrefix(aws.ToString(m.Body), "mine")
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 {
		t.Fatalf("kept %d messages, want the 2 behind 25 others", len(kept))
	}
	if len(q.released) != 25 {
		t.Fatalf("released %d, want the 25 not kept", len(q.released))
	}
	for _, m := range q.msgs[:25] {
		if q.hidden[m] {
			t.Fatalf("%s left hidden", m)
		}
	}
}

func TestAllStopsAtMax(t *testing.T) {
	q := &fakeQueue{hidden: map[string]bool{}, msgs: []string{"a", "b", "c", "d", "e"}}
	kept, err := browse.All(context.Background(), q, "url", browse.Options{Max: 3}, func(types.Message) bool { return true })
	if err != nil || len(kept) != 3 {
		t.Fatalf("kept %d, err %v", len(kept), err)
	}
}
