package main

import (
	"net/http"
	"strings"
	"testing"
)

type okClient struct{}

func (okClient) Do(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200}, nil
}

func TestCallCounter(t *testing.T) {
	c := countCalls(okClient{})
	for _, target := range []string{"AmazonSQS.ReceiveMessage", "AmazonSQS.ReceiveMessage", "DynamoDB_20120810.UpdateItem", ""} {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
		if target != "" {
			r.Header.Set("X-Amz-Target", target)
		}
		if _, err := c.Do(r); err != nil {
			t.Fatal(err)
		}
	}
	got := c.take()
	if got["SQS ReceiveMessage"] != 2 || got["DynamoDB UpdateItem"] != 1 || got["other"] != 1 || len(got) != 3 {
		t.Errorf("counts %v", got)
	}
	if again := c.take(); len(again) != 0 {
		t.Errorf("take after take: %v, want nothing", again)
	}
}

func TestCallsTable(t *testing.T) {
	p := profile{name: "every call +10ms", delay: 1}
	r := newResults()
	r.addCalls(p.name, "raw-1", map[string]int{"SQS ReceiveMessage": 101, "SQS SendMessageBatch": 100, "SQS DeleteMessageBatch": 100}, 1000)
	var b strings.Builder
	writeCalls(&b, r, p, []contender{{key: "raw-1", name: "raw batch loop, 1 worker"}})
	want := "| raw batch loop, 1 worker | 30.1 | 0.0 | DeleteMessageBatch 10.0, ReceiveMessage 10.1, SendMessageBatch 10.0 |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table:\n%s\nwant the row\n%s", b.String(), want)
	}
}
