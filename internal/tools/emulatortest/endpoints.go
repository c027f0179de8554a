package emulatortest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Service is an AWS service the contract suites run on; each has its own
// list of implementations, since not every emulator has every service
// (LocalStack's host mode has SQS but no DynamoDB).
type Service string

// The services of the contract suites.
const (
	// SQS: the queue contract and the redrive semantics (replaytest).
	SQS Service = "sqs"
	// DynamoDB: the ledger, completions and idempotency store contracts.
	DynamoDB Service = "dynamodb"
	// S3: the archive store contract (archivetest).
	S3 Service = "s3"
)

// Variable is the environment variable that lists the implementations of s:
// HOMING_SQS_ENDPOINTS or HOMING_DYNAMODB_ENDPOINTS.
func (s Service) Variable() string {
	return "HOMING_" + strings.ToUpper(string(s)) + "_ENDPOINTS"
}

// Endpoint is one implementation of a service the contract suites run on.
type Endpoint struct {
	// Name is the implementation's name (ministack, moto, localstack): the
	// key of the gaps a test declares for it, and the subtest's name.
	Name string
	// URL is its endpoint, as the list gave it.
	URL string
	// Config is [Config]'s configuration with URL as its BaseEndpoint.
	Config aws.Config
}

// ParseEndpoints reads a list of implementations, comma-separated
// name=URL pairs ("ministack=http://127.0.0.1:4566,moto=http://127.0.0.1:4599"),
// into endpoints without a Config. It fails on an empty list, an entry
// without a name or a URL, and a name given twice.
func ParseEndpoints(list string) ([]Endpoint, error) {
	var out []Endpoint
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, url, ok := strings.Cut(entry, "=")
		name, url = strings.TrimSpace(name), strings.TrimSpace(url)
		if !ok || name == "" || url == "" {
			return nil, fmt.Errorf("endpoint %q: want name=URL", entry)
		}
		if seen[name] {
			return nil, fmt.Errorf("endpoint %q: %s is named twice", entry, name)
		}
		seen[name] = true
		out = append(out, Endpoint{Name: name, URL: url})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no endpoint in %q", list)
	}
	return out, nil
}

// Endpoints returns the implementations of s that every contract suite of
// s runs on, read from s's [Service.Variable], each with [Config]'s
// configuration and its own BaseEndpoint. `make e2e` sets the variables
// (the Makefile's CONTRACT_ENV); the test fails when the one of s is unset
// or malformed, so a contract never runs on fewer implementations than
// the Makefile names by accident.
func Endpoints(t testing.TB, s Service) []Endpoint {
	t.Helper()
	cfg := Config(t)
	list := os.Getenv(s.Variable())
	if list == "" {
		t.Fatalf("%s is not set: run the e2e tests with `make e2e`, which starts every implementation of %s", s.Variable(), s)
	}
	endpoints, err := ParseEndpoints(list)
	if err != nil {
		t.Fatalf("%s: %v", s.Variable(), err)
	}
	for i := range endpoints {
		endpoints[i].Config = cfg.Copy()
		endpoints[i].Config.BaseEndpoint = aws.String(endpoints[i].URL)
	}
	return endpoints
}

// OnEachEndpoint runs f as a subtest per implementation of s ([Endpoints]),
// named after it (go test -run 'TestLedgerContract/moto/').
func OnEachEndpoint(t *testing.T, s Service, f func(t *testing.T, e Endpoint)) {
	t.Helper()
	for _, e := range Endpoints(t, s) {
		t.Run(e.Name, func(t *testing.T) { f(t, e) })
	}
}
