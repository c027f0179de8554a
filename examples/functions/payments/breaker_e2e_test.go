//go:build e2e

package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/settings"
)

// TestAnOutageTheProbeDoesNotSee shows what bounds an outage that no
// health gate sees on the payments lane, which keeps each account's order
// (GROUP_ORDER hold): every account of the outage is frozen, and nothing
// probes the ledger (the lane has no HealthURL). Each account's first
// payment fails and waits in the source under its backoff, its second
// behind it, through two schedule periods of the replay, whose runs (and
// the ones this test invokes) replay none of them: nothing reaches the DLQ,
// nothing is parked, no replay budget is spent, nothing is posted. After
// the thaw, before any head reaches MAX_RECEIVES deliveries, every payment
// is posted once, in its account's order; a late duplicate posts nothing.
func TestAnOutageTheProbeDoesNotSee(t *testing.T) {
	t.Parallel()
	s := deployed(t)
	ctx := context.Background()
	store := s.parks(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	pay := func(acct string, n int) string { return fmt.Sprintf("PAY-%s-%d", acct, n) }
	accounts := []string{"O-" + run, "P-" + run}

	// A head's deliveries come after backoffs of 30 s, 1, 2, 4... minutes
	// (x0.75..1): the outage ends before the earliest (MAX_RECEIVES-1)-th,
	// so that each head's next delivery runs it.
	n := s.maxReceives(t)
	outage := time.Duration(1<<(n-2)-1)*30*time.Second*3/4 - 20*time.Second
	const period = time.Minute // the local profile's rate(1 minute)
	if outage < 2*period {
		t.Fatalf("MAX_RECEIVES %d parks a head before an outage of two schedule periods ends (%s)", n, outage)
	}

	for _, acct := range accounts {
		if err := s.ledger.Freeze(ctx, acct, true); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.ledger.Freeze(ctx, acct, false) })
	}
	start := time.Now()
	for _, acct := range accounts {
		s.sendBatch(t, acct, paymentBody(pay(acct, 1), acct, "1.00"), paymentBody(pay(acct, 2), acct, "2.00"))
	}
	fn := s.lane(t, settings.OutputReplayFunctionName)
	runs := 0
	eventually(t, outage+time.Minute, "the outage over", func() (bool, string) {
		for _, acct := range accounts {
			if got := s.entries(t, acct); len(got) != 0 {
				t.Fatalf("%s: entries %q during the outage", acct, got)
			}
			if p, ok := parkOf(t, store, acct); ok {
				t.Fatalf("%s parked during the outage: %+v", acct, p)
			}
		}
		// A replay run each period: it finds none of the outage's payments.
		if time.Since(start) >= time.Duration(runs)*period {
			runs++
			for _, r := range invokeReplay(t, s, fn).Routes {
				for _, acct := range accounts {
					if slices.ContainsFunc(r.ReplayedKeys, func(k string) bool { return strings.HasPrefix(k, "PAY-"+acct) }) {
						t.Fatalf("replay run replayed %q during the outage", r.ReplayedKeys)
					}
				}
			}
			for _, acct := range accounts {
				if dls := s.deadLettersOf(t, acct); len(dls) != 0 {
					t.Fatalf("%s: %d dead letters during the outage: the redrive is a backstop the consumer stays ahead of", acct, len(dls))
				}
			}
		}
		return time.Since(start) >= outage, fmt.Sprintf("%s of %s, %d replay runs", time.Since(start).Round(time.Second), outage, runs)
	})

	for _, acct := range accounts {
		if err := s.ledger.Freeze(ctx, acct, false); err != nil {
			t.Fatal(err)
		}
	}
	thawed := time.Now()
	// The next delivery comes at most the last backoff after the outage.
	last := time.Duration(1<<(n-3)) * 30 * time.Second
	eventually(t, last+time.Minute, "every payment posted in its account's order", func() (bool, string) {
		var state []string
		done := true
		for _, acct := range accounts {
			got := s.entries(t, acct)
			done = done && slices.Equal(got, want(pay(acct, 1), pay(acct, 2)))
			state = append(state, fmt.Sprintf("%s %q", acct, got))
		}
		return done, strings.Join(state, ", ")
	})
	t.Logf("frozen for %s (%d replay runs meanwhile), every payment posted %s after the thaw",
		thawed.Sub(start).Round(time.Second), runs, time.Since(thawed).Round(time.Second))
	for _, acct := range accounts {
		if p, ok := parkOf(t, store, acct); ok {
			t.Errorf("%s is parked after the outage: %+v", acct, p)
		}
		if dls := s.deadLettersOf(t, acct); len(dls) != 0 {
			t.Errorf("%s: %d dead letters after the outage", acct, len(dls))
		}
	}

	// Exactly once: a late duplicate of a head posts nothing; the payment
	// after it is posted next.
	acct := accounts[0]
	s.sendBatch(t, acct, paymentBody(pay(acct, 1), acct, "1.00"), paymentBody(pay(acct, 3), acct, "3.00"))
	eventually(t, time.Minute, "the payment after a duplicate posted", func() (bool, string) {
		got := s.entries(t, acct)
		return slices.Equal(got, want(pay(acct, 1), pay(acct, 2), pay(acct, 3))), fmt.Sprintf("%q", got)
	})
}

// sendBatch sends bodies to the source queue in group, in order, in one
// call.
func (s *stack) sendBatch(t *testing.T, group string, bodies ...string) {
	t.Helper()
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.lane(t, settings.OutputSourceQueueURL))}
	for i, b := range bodies {
		in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(fmt.Sprintf("%s-%d-%d", group, i, time.Now().UnixNano()))})
	}
	out, err := s.sqs.SendMessageBatch(context.Background(), in)
	if err != nil {
		t.Fatalf("send to the source queue: %v", err)
	}
	if len(out.Failed) > 0 {
		t.Fatalf("send to the source queue: %d failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
	}
}

// deadLettersOf reads the DLQ's messages of group without taking them:
// they are received (hidden for 10 s should the test stop meanwhile), then
// made visible again at once. SQS returns none of a group behind one in
// flight: a group with dead letters shows one at least.
func (s *stack) deadLettersOf(t *testing.T, group string) []string {
	t.Helper()
	ctx := context.Background()
	url := aws.String(s.lane(t, settings.OutputDeadLetterQueueURL))
	var ids, receipts []string
	defer func() {
		for _, r := range receipts {
			_, _ = s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: aws.String(r), VisibilityTimeout: 0})
		}
	}()
	for empty := 0; empty < 2; {
		got, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			t.Fatalf("read the DLQ: %v", err)
		}
		if len(got.Messages) == 0 {
			empty++
		}
		for _, m := range got.Messages {
			receipts = append(receipts, aws.ToString(m.ReceiptHandle))
			if m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)] == group {
				ids = append(ids, aws.ToString(m.MessageId))
			}
		}
	}
	return ids
}
