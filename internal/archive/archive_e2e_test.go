//go:build e2e

package archive_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/browse"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/invalid"
	"github.com/homingdlq/homing/replay"
)

// aged is the deployed queues as the archive sees them, where the
// messages of keys were sent 13 days ago: near the end of their queue's
// 14 days, as nothing on an emulator can make a message old.
type aged struct {
	archive.Receiver
	keys map[string]bool
}

func (q aged) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := q.Receiver.ReceiveMessage(ctx, in, optFns...)
	if err != nil {
		return out, err
	}
	for _, m := range out.Messages {
		for k := range q.keys {
			if aws.ToString(m.Body) == body(k) {
				m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)] = strconv.FormatInt(time.Now().Add(-13*day).UnixMilli(), 10)
			}
		}
	}
	return out, nil
}

func body(key string) string { return `{"orderId":"` + key + `"}` }

// On the deployed stack, a parked and an invalid message near their
// retention are written to the lane's archive bucket (the one the
// construct made, on the emulator's S3) and deleted from their queues;
// the rest of the queues' messages, far from theirs, stay.
func TestDeployedLaneArchivesNearRetention(t *testing.T) {
	cfg := emulatortest.Config(t)
	outputs := emulatortest.Outputs(t)
	lane := emulatortest.SampleLane
	parking := emulatortest.LaneOutput(t, outputs, lane, settings.OutputParkingQueueURL)
	invalidURL := emulatortest.LaneOutput(t, outputs, lane, settings.OutputInvalidQueueURL)
	bucket := emulatortest.LaneOutput(t, outputs, lane, settings.OutputArchiveBucketName)
	q := sqs.NewFromConfig(cfg)
	store := archive.NewStore(s3.NewFromConfig(cfg), bucket)
	ctx := context.Background()

	run := time.Now().UnixNano()
	parkedKey, invalidKey := fmt.Sprintf("ARC-P-%d", run), fmt.Sprintf("ARC-I-%d", run)
	// Parked as the replay function parks: sealed with the lane's key, and
	// verified as it verifies.
	ledger := dynamo.NewLedger(dynamodb.NewFromConfig(cfg), emulatortest.LaneOutput(t, outputs, lane, settings.OutputLedgerTableName), time.Now)
	seal, err := replay.SealKey(ctx, ledger, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	parked, err := archive.Parked(ctx, ledger, parking)
	if err != nil {
		t.Fatal(err)
	}
	meta := replay.Metadata{ReplayCount: 3, OriginalMessageID: "orig-" + parkedKey, Reason: "replay-exhausted", ParkedAt: time.Now()}
	attrs, err := replay.Attributes(nil, meta.Sealed(seal, body(parkedKey), parking))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(parking), MessageBody: aws.String(body(parkedKey)), MessageAttributes: attrs}); err != nil {
		t.Fatal(err)
	}
	if attrs, err = invalid.Stamp(nil, invalid.Metadata{Reason: "missing-tax-id", Detail: "no tax id", MessageID: "orig-" + invalidKey, Consumer: "invoice", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(invalidURL), MessageBody: aws.String(body(invalidKey)), MessageAttributes: attrs}); err != nil {
		t.Fatal(err)
	}

	a, err := archive.New(aged{Receiver: q, keys: map[string]bool{parkedKey: true, invalidKey: true}}, store, lane, "orderId",
		archive.Options{Budget: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	queues := []archive.Queue{parked, {URL: invalidURL, Role: archive.Invalid}}
	found := map[string]archive.Object{}
	// The scheduled replay's own archive may hold a message for a moment
	// while it looks: try until both are in.
	emulatortest.Eventually(t, 90*time.Second, func() (bool, string) {
		if _, err := a.Run(ctx, queues); err != nil {
			return false, err.Error()
		}
		for _, k := range []string{parkedKey, invalidKey} {
			err := store.List(ctx, archive.KeyPrefix(lane, k), func(key string) bool {
				o, err := store.Get(ctx, key)
				if err == nil {
					found[k] = o
				}
				return false
			})
			if err != nil {
				return false, err.Error()
			}
		}
		return len(found) == 2, fmt.Sprintf("archived %d of 2", len(found))
	})
	p, i := found[parkedKey], found[invalidKey]
	if p.Queue != archive.Parking || p.Reason != "replay-exhausted" || p.Replay == nil || p.QueueURL != parking || p.Lane != lane {
		t.Errorf("parked object %+v", p)
	}
	if i.Queue != archive.Invalid || i.Reason != "missing-tax-id" || i.Invalid == nil || i.OriginalMessageID() != "orig-"+invalidKey {
		t.Errorf("invalid object %+v", i)
	}
	// Listed by queue and day too.
	listed := 0
	for _, o := range []archive.Object{p, i} {
		err := store.List(ctx, archive.DayPrefix(lane, o.Queue, o.SentAt), func(key string) bool {
			if key == archive.ObjectKey(o) {
				listed++
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if listed != 2 {
		t.Errorf("%d of 2 listed under their day", listed)
	}
	// Gone from their queues: a look through each finds neither.
	for _, url := range []string{parking, invalidURL} {
		left := 0
		_, err := browse.All(ctx, q, url, browse.Options{Hide: 15}, func(m types.Message) bool {
			if b := aws.ToString(m.Body); b == body(parkedKey) || b == body(invalidKey) {
				left++
			}
			return false
		})
		if err != nil || left != 0 {
			t.Errorf("%d archived messages still in %s (%v)", left, url, err)
		}
	}
}
