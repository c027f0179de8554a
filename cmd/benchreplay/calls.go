package main

import (
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// callCounter is an SDK HTTP client that counts the API calls it carries,
// by service and operation ("SQS SendMessageBatch", "DynamoDB UpdateItem"),
// from the X-Amz-Target header of the JSON protocols both services speak
// (and Lambda's GetFunctionConfiguration by its path).
// It is safe for concurrent use.
type callCounter struct {
	next aws.HTTPClient

	mu     sync.Mutex
	counts map[string]int
}

func countCalls(next aws.HTTPClient) *callCounter {
	return &callCounter{next: next, counts: map[string]int{}}
}

// Do counts r and sends it with the wrapped client. A retried call counts
// once per attempt: each is a round trip.
func (c *callCounter) Do(r *http.Request) (*http.Response, error) {
	c.count(r)
	return c.next.Do(r)
}

// count counts the call of r.
func (c *callCounter) count(r *http.Request) {
	op := operation(r.Header.Get("X-Amz-Target"))
	if op == "other" && r.Method == http.MethodGet && lambdaConfiguration(r.URL.Path) {
		op = "Lambda GetFunctionConfiguration"
	}
	c.mu.Lock()
	c.counts[op]++
	c.mu.Unlock()
}

// lambdaConfiguration reports whether path is Lambda's REST path of
// GetFunctionConfiguration (/2015-03-31/functions/NAME/configuration), the
// one Lambda call of `dlq replay`.
func lambdaConfiguration(path string) bool {
	name, ok := strings.CutPrefix(path, "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(name, "/configuration")
	return ok && ok2 && name != "" && !strings.Contains(name, "/")
}

// take returns the counts since the previous take and starts again.
func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

// operation names the call of an X-Amz-Target header: "AmazonSQS.ReceiveMessage"
// is "SQS ReceiveMessage", "DynamoDB_20120810.Query" is "DynamoDB Query".
func operation(target string) string {
	service, op, ok := strings.Cut(target, ".")
	if !ok {
		return "other"
	}
	switch {
	case service == "AmazonSQS":
		service = "SQS"
	case strings.HasPrefix(service, "DynamoDB"):
		service = "DynamoDB"
	}
	return service + " " + op
}

// perHundred returns the calls of counts per 100 messages of n, by
// operation.
func perHundred(counts map[string]int, n int) map[string]float64 {
	out := make(map[string]float64, len(counts))
	for op, v := range counts {
		out[op] = float64(v) * 100 / float64(n)
	}
	return out
}
