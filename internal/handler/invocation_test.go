package handler_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/replay"
)

// config has two routes, orders and payments, and caps of 1000 messages at
// 50 per second (the table refused pins them).
func config(t *testing.T) handler.Config {
	t.Helper()
	var c handler.Config
	for _, name := range []string{"orders", "payments"} {
		c.Routes = append(c.Routes, replay.Route{Name: name, DLQURL: "https://sqs/" + name + "-dlq", SourceURL: "https://sqs/" + name, ParkingURL: "https://sqs/" + name + "-parking"})
	}
	c.Engine.MaxPerRun = 1000
	c.Engine.Rate = 50
	return c
}

// sample is a payload of events/.
func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseInvocation(t *testing.T) {
	c := config(t)
	tests := []struct {
		name    string
		payload []byte
		want    replay.Request
	}{
		{"scheduled event", sample(t, "replay-scheduled.json"), replay.Request{Routes: c.Routes}},
		{"on-demand request", sample(t, "replay-on-demand.json"), replay.Request{DryRun: true, Max: 10, Rate: 5, Routes: c.Routes[:1],
			Filter: replay.Filter{Reasons: []string{"dead-lettered"}, OlderThan: time.Hour, Keys: []string{}}}},
		{"empty object: every route, the defaults", []byte(`{}`), replay.Request{Routes: c.Routes}},
		{"routes in the request's order", []byte(` {"routes":["payments","orders"]} `), replay.Request{Routes: []replay.Route{c.Routes[1], c.Routes[0]}}},
		{"at the caps", []byte(`{"max":1000,"rate":50}`), replay.Request{Max: 1000, Rate: 50, Routes: c.Routes}},
		{"filter by key", []byte(`{"filter":{"keys":["ORD-1"]}}`), replay.Request{Routes: c.Routes, Filter: replay.Filter{Keys: []string{"ORD-1"}}}},
		{"filter by key, under its deprecated name", []byte(`{"filter":{"orderIds":["ORD-1"]}}`), replay.Request{Routes: c.Routes, Filter: replay.Filter{Keys: []string{"ORD-1"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.ParseInvocation(tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("request = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}

// refused are payloads ParseInvocation refuses, with what the error says.
var refused = []struct {
	name, payload, want string
}{
	{"empty", ``, "empty payload"},
	{"blank", " \n", "empty payload"},
	{"null", `null`, "empty payload"},
	{"array", `[]`, "not a valid JSON object"},
	{"string", `"run"`, "not a valid JSON object"},
	{"another event source", `{"source":"aws.sqs","detail-type":"Scheduled Event"}`, `source "aws.sqs"`},
	{"another event type", `{"source":"aws.events","detail-type":"Object Created"}`, `detail-type "Object Created"`},
	{"an event without detail type", `{"source":"aws.events"}`, `detail-type ""`},
	{"misspelt field", `{"dry_run":true}`, `unknown field "dry_run"`},
	{"misspelt filter field", `{"dryRun":true,"filter":{"orderId":["ORD-1"]}}`, `unknown field "orderId"`},
	{"a field spelt in another case", `{"dryRun":true,"DryRun":false}`, `unknown field "DryRun"`},
	{"a field twice", `{"dryRun":true,"dryRun":false}`, `field "dryRun" given twice`},
	{"a filter field in another case", `{"dryRun":true,"filter":{"OrderIds":["ORD-1"]}}`, `unknown field "OrderIds"`},
	{"bad duration", `{"filter":{"olderThan":"soon"}}`, "olderThan"},
	{"wrong type", `{"rate":"fast"}`, "rate"},
	{"unknown route", `{"routes":["orders","refunds"]}`, `unknown routes ["refunds"] (configured: ["orders" "payments"])`},
	{"negative max", `{"max":-1}`, "max -1"},
	{"rate out of range", `{"rate":0.01}`, "rate 0.01"},
	{"max above the cap", `{"max":1001}`, "max 1001: above the configured cap MAX_PER_RUN=1000"},
	{"rate above the cap", `{"rate":50.5}`, "rate 50.5: above the configured cap RATE=50"},
	{"two values", `{} {}`, "after top-level value"},
	{"truncated", `{"dryRun":`, "not a valid JSON object"},
}

func TestParseInvocationRefuses(t *testing.T) {
	c := config(t)
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			req, err := c.ParseInvocation([]byte(tt.payload))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("request %+v, err = %v; want an error mentioning %q", req, err, tt.want)
			}
			if above := strings.Contains(tt.name, "above the cap"); above != errors.Is(err, handler.ErrAboveCap) {
				t.Fatalf("errors.Is(err, ErrAboveCap) = %v, want %v", !above, above)
			}
		})
	}
}
