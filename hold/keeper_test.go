package hold_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/hold/holdtest"
	"github.com/homingdlq/homing/hold/record"
)

type sent struct {
	mu  sync.Mutex
	ins []*sqs.SendMessageInput
}

func (s *sent) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ins = append(s.ins, in)
	return &sqs.SendMessageOutput{MessageId: aws.String("m")}, nil
}

func keeper(onError hold.OnError) (*hold.Keeper, *sent) {
	s := &sent{}
	return &hold.Keeper{Store: holdtest.NewMemory(), Source: s, SourceURL: "https://sqs.local/payments.fifo", OnError: onError}, s
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestSendBackKeepsTheRecordAndNamesItsOrigin(t *testing.T) {
	k, s := keeper(hold.KeepHeld)
	r := events.SQSMessage{MessageId: "now", Body: `{"paymentId":"p3"}`, Attributes: map[string]string{"MessageGroupId": "acct-1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{"tenant": stringAttr("t1")}}
	h := hold.Hold{Group: "acct-1", Head: "before", State: hold.Draining, Version: 7}
	later := h
	later.Version++
	for _, at := range []hold.Hold{h, h, later} {
		if err := record.SendBack(context.Background(), k, at, r, "0001"); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.ins) != 3 {
		t.Fatalf("%d sends, want 3", len(s.ins))
	}
	in := s.ins[0]
	back := events.SQSMessage{MessageId: "other", Body: aws.ToString(in.MessageBody), MessageAttributes: map[string]events.SQSMessageAttribute{}}
	for name, a := range in.MessageAttributes {
		back.MessageAttributes[name] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue}
	}
	switch {
	case aws.ToString(in.QueueUrl) != k.SourceURL, aws.ToString(in.MessageGroupId) != "acct-1":
		t.Fatalf("sent to %s group %s, want the source, group acct-1", aws.ToString(in.QueueUrl), aws.ToString(in.MessageGroupId))
	case back.Body != r.Body || aws.ToString(in.MessageAttributes["tenant"].StringValue) != "t1":
		t.Fatalf("sent %q %v, want the record's body and attributes", back.Body, in.MessageAttributes)
	case record.Origin(back) != "now":
		t.Fatalf("the copy's origin is %q, want the record's id", record.Origin(back))
	case aws.ToString(in.MessageDeduplicationId) != aws.ToString(s.ins[1].MessageDeduplicationId) || len(aws.ToString(in.MessageDeduplicationId)) > 128:
		t.Fatalf("deduplication ids %q and %q: want one id of at most 128 characters", aws.ToString(in.MessageDeduplicationId), aws.ToString(s.ins[1].MessageDeduplicationId))
	case aws.ToString(s.ins[2].MessageDeduplicationId) == aws.ToString(in.MessageDeduplicationId):
		// Sent back from a later version of the hold (held again after a
		// Remove that failed, then released past): a new message, or SQS
		// drops it and the group waits for a head that never comes.
		t.Fatal("a send back from a later version of the hold has the same deduplication id")
	}
	if _, ok := r.MessageAttributes[hold.Attribute]; ok {
		t.Fatal("SendBack changed the held record's attributes")
	}
}

func TestReleaseDrainsTheGroupPastItsHead(t *testing.T) {
	k, s := keeper(hold.KeepHeld)
	ctx := context.Background()
	h, _ := k.Store.Begin(ctx, hold.Hold{Group: strings.Repeat("g", 128), Head: "head", HeadBody: `{"n":1}`, Parked: "invalid: bad-amount"}, t0)
	h, err := k.Release(ctx, h, t0)
	if err != nil {
		t.Fatal(err)
	}
	if h.State != hold.Draining || h.Head != "" || h.HeadBody != "" {
		t.Fatalf("hold %+v, want draining with no head", h)
	}
	if len(s.ins) != 1 || aws.ToString(s.ins[0].MessageBody) != hold.TriggerBody || aws.ToString(s.ins[0].MessageGroupId) != h.Group {
		t.Fatalf("sent %v, want one trigger to the group", s.ins)
	}
	if n := len(aws.ToString(s.ins[0].MessageDeduplicationId)); n > 128 {
		t.Fatalf("trigger deduplication id of %d characters, want at most 128", n)
	}
}

func TestParkedMarksOnlyTheHead(t *testing.T) {
	for _, onError := range []hold.OnError{hold.KeepHeld, hold.Skip} {
		k, s := keeper(onError)
		ctx := context.Background()
		if _, err := k.Store.Begin(ctx, hold.Hold{Group: "acct-1", Head: "head"}, t0); err != nil {
			t.Fatal(err)
		}
		if err := k.Parked(ctx, "acct-1", "not-the-head", "replay-exhausted", t0); err != nil {
			t.Fatal(err)
		}
		if err := k.Parked(ctx, "acct-2", "head", "replay-exhausted", t0); err != nil {
			t.Fatal(err)
		}
		hs, _ := k.Store.Holds(ctx, []string{"acct-1", "acct-2"})
		if h := hs["acct-1"]; h.Parked != "" || len(hs) != 1 || len(s.ins) != 0 {
			t.Fatalf("%s: after parking other messages: holds %v, sends %d; want acct-1 untouched", onError, hs, len(s.ins))
		}
		if err := k.Parked(ctx, "acct-1", "head", "replay-exhausted", t0); err != nil {
			t.Fatal(err)
		}
		hs, _ = k.Store.Holds(ctx, []string{"acct-1"})
		h := hs["acct-1"]
		if h.Parked != "parked: replay-exhausted" {
			t.Fatalf("%s: parked %q, want the reason", onError, h.Parked)
		}
		if wantDrain := onError == hold.Skip; (h.State == hold.Draining) != wantDrain || (len(s.ins) == 1) != wantDrain {
			t.Fatalf("%s: hold %+v and %d sends; want a release only when the lane skips", onError, h, len(s.ins))
		}
	}
}

func TestSweepTriggersOnlyStaleDrains(t *testing.T) {
	k, s := keeper(hold.KeepHeld)
	ctx := context.Background()
	for _, g := range []string{"stale", "fresh", "held"} {
		h, _ := k.Store.Begin(ctx, hold.Hold{Group: g, Head: "head-" + g}, t0)
		if g != "held" {
			when := t0
			if g == "fresh" {
				when = t0.Add(10 * time.Minute)
			}
			h.State = hold.Draining
			if _, err := k.Store.Update(ctx, h, when); err != nil {
				t.Fatal(err)
			}
		}
	}
	holds, err := k.Sweep(ctx, t0.Add(16*time.Minute), 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(holds) != 3 {
		t.Fatalf("Sweep listed %d holds, want 3", len(holds))
	}
	if len(s.ins) != 1 || aws.ToString(s.ins[0].MessageGroupId) != "stale" {
		t.Fatalf("sent %d triggers (%v), want one to the stale drain", len(s.ins), s.ins)
	}
}

func stringAttr(s string) events.SQSMessageAttribute {
	return events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(s)}
}

func TestHeadBodyOfKeepsAtMostMaxHeadBody(t *testing.T) {
	for _, tc := range []struct {
		n    int
		kept bool
	}{{0, true}, {1, true}, {hold.MaxHeadBody, true}, {hold.MaxHeadBody + 1, false}, {1 << 20, false}} {
		body := strings.Repeat("a", tc.n)
		if got := hold.HeadBodyOf(body); (got == body) != tc.kept || !tc.kept && got != "" {
			t.Errorf("HeadBodyOf(%d bytes) kept %d bytes; want it kept: %t, else none", tc.n, len(got), tc.kept)
		}
	}
}

// docs/ORDER.md states the bound.
func TestOrderDocStatesMaxHeadBody(t *testing.T) {
	doc, err := os.ReadFile("../docs/ORDER.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("over %d KiB", hold.MaxHeadBody>>10); !strings.Contains(string(doc), want) {
		t.Fatalf("docs/ORDER.md does not say %q: the bound of hold.MaxHeadBody", want)
	}
}
