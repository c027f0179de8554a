package consumer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// FuzzHandleEvent feeds arbitrary invocation payloads through the Lambda
// handler: it must never panic, and whenever the payload decodes as an SQS
// event the response must list only ids of its records, in a JSON list.
func FuzzHandleEvent(f *testing.F) {
	files := sqsEventFiles()
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"Records":[{"messageId":"m","body":"{}","eventSourceARN":"q.fifo"}]}`))
	f.Add([]byte(`{"Records":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"Records":[{"messageId":"","body":"\u0000"}]}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		fx := newFixture(t, 4, "https://sqs.local/000/orders-invalid")
		out, err := fx.handler.Invoke(context.Background(), payload)
		var ev events.SQSEvent
		// Decode as the Lambda runtime library does: the first JSON value.
		if json.NewDecoder(bytes.NewReader(payload)).Decode(&ev) != nil {
			if err == nil {
				t.Fatalf("undecodable payload accepted: %q", payload)
			}
			return
		}
		if err != nil {
			t.Fatalf("decodable event failed: %v", err)
		}
		var resp struct {
			Failures *[]events.SQSBatchItemFailure `json:"batchItemFailures"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || resp.Failures == nil {
			t.Fatalf("response %s: not a list of failures (%v)", out, err)
		}
		ids := map[string]bool{}
		for _, r := range ev.Records {
			ids[r.MessageId] = true
		}
		for _, f := range *resp.Failures {
			if !ids[f.ItemIdentifier] {
				t.Fatalf("failure %q is not a record of the event", f.ItemIdentifier)
			}
		}
	})
}
