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
	r.addCalls(p.name, "engine-1", map[string]int{"SQS ReceiveMessage": 100, "DynamoDB TransactWriteItems": 101, "Lambda GetFunctionConfiguration": 1}, 1000)
	var b strings.Builder
	writeCalls(&b, r, []profile{p}, []contender{{key: "raw-1", name: "raw batch loop, 1 worker"}, {key: "engine-1", name: "engine, 1 worker"}})
	for _, want := range []string{
		"| raw batch loop, 1 worker | 30.1 (30.1 + 0.0) | DeleteMessageBatch 10.0, ReceiveMessage 10.1, SendMessageBatch 10.0 |",
		// the calls a CPU-bound emulator makes expensive are in bold; a
		// call of neither service is counted apart
		"| engine, 1 worker | 20.2 (10.0 + 10.1 + 0.1 other) | **TransactWriteItems 10.1**, GetFunctionConfiguration 0.1, ReceiveMessage 10.0 |",
		"TransactWriteItems and BatchGetItem",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
		}
	}
}

func TestCountLambdaConfiguration(t *testing.T) {
	for _, tc := range []struct {
		method, path, want string
	}{
		{http.MethodGet, "/2015-03-31/functions/bench-1-replay/configuration", "Lambda GetFunctionConfiguration"},
		{http.MethodGet, "/2015-03-31/functions/bench-1-replay", "other"},
		{http.MethodGet, "/2015-03-31/functions//configuration", "other"},
		{http.MethodPut, "/2015-03-31/functions/bench-1-replay/configuration", "other"},
	} {
		c := countCalls(okClient{})
		r, _ := http.NewRequest(tc.method, "http://127.0.0.1"+tc.path, nil)
		if _, err := c.Do(r); err != nil {
			t.Fatal(err)
		}
		if got := c.take(); got[tc.want] != 1 {
			t.Errorf("%s %s: counts %v, want one %s", tc.method, tc.path, got, tc.want)
		}
	}
}

type okTransport struct{}

func (okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200}, nil
}

// The counting proxy's transport counts a subprocess's calls into the
// profile's counter.
func TestCountingTransport(t *testing.T) {
	c := countCalls(okClient{})
	tr := countingTransport{calls: c, next: okTransport{}}
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	r.Header.Set("X-Amz-Target", "DynamoDB_20120810.BatchGetItem")
	if _, err := tr.RoundTrip(r); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); got["DynamoDB BatchGetItem"] != 1 || len(got) != 1 {
		t.Errorf("counts %v", got)
	}
}
