//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/internal/parking"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
)

// TestE2EGroupsRelease: dlq groups lists the parks of a FIFO lane kept in
// its ledger table (dynamo.GroupStore) on the emulator, and dlq groups
// release sends a parked group's records back to the source in order, in
// a round the consumer (played here) applies; the park ends, the other
// group's records stay in the parking queue.
func TestE2EGroupsRelease(t *testing.T) {
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	q, db := sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg)
	parkingURL, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "parking")+".fifo")
	source, _ := emulatortest.Queue(t, q, emulatortest.Name(t, "source")+".fifo")
	table := emulatortest.LedgerTable(t, db)
	store := dynamo.NewGroupStore(db, table)

	park := func(group string, n int) {
		t.Helper()
		if _, err := store.Park(ctx, fifo.Park{Group: group, Head: group + "/1", Reason: fifo.ReasonDeliveredTooOften, Queue: "parking"}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			id := fmt.Sprintf("%s/%d", group, i+1)
			attrs, err := parking.Attributes(nil, id, fifo.ReasonGroupParked, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(parkingURL), MessageBody: aws.String(id), MessageAttributes: attrs,
				MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(id)}); err != nil {
				t.Fatal(err)
			}
			if err := store.Count(ctx, group, fifo.Count{Parked: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	park("g-1", 3)
	park("g-2", 1)
	dlq := func(args ...string) result {
		return runDLQ(t, withoutOrigin, append([]string{"--ledger-table", table, "--parking-url", parkingURL, "--source-url", source, "-o", "json"}, args...)...)
	}

	r := dlq("groups")
	r.want(t, exitOK)
	var list groupsReport
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Groups) != 2 || list.Groups[0].Waiting != 3 || list.Groups[1].Waiting != 1 {
		t.Fatalf("groups = %s (%v)", r.stdout, err)
	}

	r = dlq("groups", "release", "g-1", "--yes", "--wait", "0")
	r.want(t, exitIncomplete, "still in progress")
	var rep releaseReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Moved != 3 || rep.Pending != 3 || rep.Done {
		t.Fatalf("release = %s (%v)", r.stdout, err)
	}

	// The consumer: the released records, in order, each carrying the round.
	// Short polls, and a short visibility: a receive whose answer the
	// emulator loses on a loaded machine hides its messages for 2s only.
	var applied []string
	emulatortest.Eventually(t, 30*time.Second, func() (bool, string) {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(source), MaxNumberOfMessages: 10, VisibilityTimeout: 2,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			got, err := store.Parked(ctx, []string{"g-1"})
			if err != nil {
				t.Fatal(err)
			}
			p := got["g-1"]
			n := parking.Released(m.MessageAttributes, aws.ToString(m.Body), p.Releasing)
			if p.Releasing == "" || n != len(applied)+1 || m.Attributes["MessageGroupId"] != "g-1" {
				t.Fatalf("record %s: group %s, copy %d of the park's round %q", aws.ToString(m.Body), m.Attributes["MessageGroupId"], n, p.Releasing)
			}
			if err := store.Count(ctx, "g-1", fifo.Count{Round: p.Releasing, Index: n}); err != nil {
				t.Fatal(err)
			}
			applied = append(applied, aws.ToString(m.Body))
			if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(source), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		return len(applied) >= 3, fmt.Sprintf("applied %v of the 3 released records", applied)
	})
	if want := []string{"g-1/1", "g-1/2", "g-1/3"}; !slices.Equal(applied, want) {
		t.Fatalf("applied %v, want %v", applied, want)
	}

	// Every record back and applied: the next step ends the park.
	r = dlq("groups", "release", "g-1", "--yes", "--wait", "10s")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.Done || rep.Moved != 0 {
		t.Fatalf("release = %s (%v)", r.stdout, err)
	}
	r = dlq("groups")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Groups) != 1 || list.Groups[0].Group != "g-2" {
		t.Fatalf("groups after the release = %s (%v)", r.stdout, err)
	}
	// The other group's record is visible again (the scan hid it).
	emulatortest.Eventually(t, 20*time.Second, func() (bool, string) {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(parkingURL), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
		if err != nil {
			t.Fatal(err)
		}
		var bodies []string
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
		return slices.Equal(bodies, []string{"g-2/1"}), fmt.Sprintf("parking queue shows %v, want [g-2/1]", bodies)
	})
}
