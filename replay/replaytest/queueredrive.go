package replaytest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// DeadLetterSourceLister is the SQS call that names a DLQ's source queues;
// a QueueHarness.Queue that lacks it lacks the behaviour
// (QueueFeatures.ListDeadLetterSources).
type DeadLetterSourceLister interface {
	ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
}

// redrive is one source queue and its DLQ, made by newRedrive.
type redrive struct {
	source, dlq string
	sourceARN   string
}

// newRedrive creates a DLQ and a source queue of t's own (FIFO when fifo)
// whose RedrivePolicy moves a message there after maxReceiveCount receives.
func newRedrive(t *testing.T, h QueueHarness, fifo bool, maxReceiveCount int) redrive {
	t.Helper()
	if h.NewQueueWithAttributes == nil {
		t.Fatal("QueueHarness.NewQueueWithAttributes is nil: the redrive tests need it")
	}
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	dlq, dlqARN := h.NewQueueWithAttributes(t, queueName(t, "dlq"+suffix), nil)
	source, sourceARN := h.NewQueueWithAttributes(t, queueName(t, "src"+suffix), map[string]string{
		string(types.QueueAttributeNameRedrivePolicy): fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlqARN, maxReceiveCount),
	})
	return redrive{source: source, dlq: dlq, sourceARN: sourceARN}
}

// produced is the message attribute the redrive tests send body with, to
// find it again in the DLQ.
func produced(body string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		"producer": {DataType: aws.String("String"), StringValue: aws.String("p-" + body)},
	}
}

// failUntilMoved receives the one message of url and releases it, want
// times, checking its receive count each time; then it receives once more,
// which must find it gone (moved by that receive), and returns the first
// receive.
func (c queueClient) failUntilMoved(t *testing.T, url string, want int) types.Message {
	t.Helper()
	var first types.Message
	for i := 1; i <= want; i++ {
		got := c.receiveN(t, url, 1, 1)
		if len(got) != 1 {
			t.Fatalf("receive %d of %d: %d messages", i, want, len(got))
		}
		if n := got[0].Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; n != strconv.Itoa(i) {
			t.Fatalf("receive %d: ApproximateReceiveCount = %q", i, n)
		}
		if i == 1 {
			first = got[0]
		}
		c.release(t, url, got[0])
	}
	if got := c.receive(t, url, 10); len(got) != 0 {
		t.Fatalf("receive %d: the message is still in the source queue (ApproximateReceiveCount %s), want it moved",
			want+1, got[0].Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	}
	return first
}

// testRedriveMovesAfterMaxReceiveCount: a message is received
// maxReceiveCount times, then moved to the DLQ by the next receive as it
// was: its id, body and attributes, and a standard queue's SentTimestamp.
func testRedriveMovesAfterMaxReceiveCount(t *testing.T, h QueueHarness) {
	c := queueClient{q: h.Queue}
	r := newRedrive(t, h, false, 2)
	id := c.send(t, r.source, "r-1", "", "", produced("r-1"))
	first := c.failUntilMoved(t, r.source, 2)
	got := c.receiveN(t, r.dlq, 10, 1)
	if len(got) != 1 {
		t.Fatalf("%d messages in the DLQ, want 1", len(got))
	}
	m := got[0]
	if aws.ToString(m.MessageId) != id || aws.ToString(m.Body) != "r-1" {
		t.Fatalf("in the DLQ: id %s body %q, want id %s body r-1 (SQS keeps the message id)", aws.ToString(m.MessageId), aws.ToString(m.Body), id)
	}
	if a := m.MessageAttributes["producer"]; aws.ToString(a.StringValue) != "p-r-1" {
		t.Fatalf("producer attribute in the DLQ = %+v", a)
	}
	t.Logf("ApproximateReceiveCount in the DLQ's first receive: %s", m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if sent := m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]; sent != first.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)] {
		t.Fatalf("SentTimestamp in the DLQ = %s, in the source %s: a standard queue's redrive keeps the original enqueue timestamp",
			sent, first.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)])
	}
}

// testFIFORedriveMovesTheGroupsHead: a FIFO redrive moves the group's head,
// with its group, and delivers the rest of the group.
func testFIFORedriveMovesTheGroupsHead(t *testing.T, h QueueHarness) {
	c := queueClient{q: h.Queue}
	r := newRedrive(t, h, true, 1)
	head := c.send(t, r.source, "g-a", "g", "g-a", produced("g-a"))
	c.send(t, r.source, "g-b", "g", "g-b", produced("g-b"))
	got := c.receiveN(t, r.source, 1, 1)
	if len(got) != 1 || aws.ToString(got[0].MessageId) != head {
		t.Fatalf("first receive = %v, want the head g-a", bodies(got))
	}
	c.release(t, r.source, got[0])
	if rest := c.receiveN(t, r.source, 10, 1); !slices.Equal(bodies(rest), []string{"g-b"}) {
		t.Fatalf("after the head's last receive: %v, want [g-b] (the head moved)", bodies(rest))
	}
	dead := c.receiveN(t, r.dlq, 10, 1)
	if len(dead) != 1 || aws.ToString(dead[0].MessageId) != head || dead[0].Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] != "g" {
		t.Fatalf("in the DLQ: %v, want g-a with its group", dead)
	}
}

// checkDeadLetterSourceARN is QueueFeatures.DeadLetterSourceARN's check.
func checkDeadLetterSourceARN(t *testing.T, h QueueHarness) string {
	c := queueClient{q: h.Queue}
	r := newRedrive(t, h, false, 1)
	c.send(t, r.source, "a-1", "", "", produced("a-1"))
	c.failUntilMoved(t, r.source, 1)
	got := c.receiveN(t, r.dlq, 10, 1)
	if len(got) != 1 {
		t.Fatalf("%d messages in the DLQ, want 1", len(got))
	}
	if arn := got[0].Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; arn != r.sourceARN {
		return fmt.Sprintf("DeadLetterQueueSourceArn = %q, want %q", arn, r.sourceARN)
	}
	return ""
}

// checkListDeadLetterSources is QueueFeatures.ListDeadLetterSources's check.
func checkListDeadLetterSources(t *testing.T, h QueueHarness) string {
	l, ok := h.Queue.(DeadLetterSourceLister)
	if !ok {
		return fmt.Sprintf("%T has no ListDeadLetterSourceQueues", h.Queue)
	}
	r := newRedrive(t, h, false, 3)
	out, err := l.ListDeadLetterSourceQueues(t.Context(), &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(r.dlq)})
	if err != nil {
		return fmt.Sprintf("ListDeadLetterSourceQueues answered %v", err)
	}
	if !slices.Equal(out.QueueUrls, []string{r.source}) {
		return fmt.Sprintf("ListDeadLetterSourceQueues = %v, want [%s]", out.QueueUrls, r.source)
	}
	return ""
}

// checkDeduplicationAfterDelete is QueueFeatures.DeduplicationAfterDelete's
// check.
func checkDeduplicationAfterDelete(t *testing.T, h QueueHarness) string {
	c := queueClient{q: h.Queue}
	url := h.NewQueue(t, queueName(t, "q.fifo"))
	c.send(t, url, "d-1", "g", "dedup-1", produced("d-1"))
	got := c.receiveN(t, url, 10, 1)
	if len(got) != 1 {
		t.Fatalf("received %d, want 1", len(got))
	}
	c.delete(t, url, got[0])
	c.send(t, url, "d-1 again", "g", "dedup-1", produced("d-1 again"))
	c.send(t, url, "d-2", "g", "dedup-2", produced("d-2"))
	if after := c.receiveN(t, url, 10, 1); !slices.Equal(bodies(after), []string{"d-2"}) {
		return fmt.Sprintf("after deleting the first: %v, want [d-2]", bodies(after))
	}
	return ""
}
