package handler_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// FuzzParseInvocation feeds arbitrary payloads to the invocation parser
// (EventBridge scheduled events and on-demand requests). Properties:
//   - a refused payload is an error and the zero request;
//   - an accepted one is one JSON value (nothing after it), and its request
//     is bounded: valid (replay.Request.Validate), within the caps, routes
//     among the configured ones and each once, no run id, no reset;
//   - a scheduled event is every configured route with the defaults;
//   - the round trip: the request written as an on-demand payload parses
//     to the same request.
func FuzzParseInvocation(f *testing.F) {
	for _, name := range []string{"replay-scheduled.json", "replay-on-demand.json"} {
		f.Add(sample(f, name))
	}
	for _, s := range []string{"", "null", "{}", "[]", `{"dryRun":true}`, `{"dryrun":true,"DryRun":false}`, `{"max":1000,"rate":50}`, `{"max":1001}`,
		`{"routes":["orders","orders"]}`, `{"routes":["nope"]}`, `{"filter":{"olderThan":"-5h"},"max":3}`, `{"filter":{"olderThan":"9999999999h"}}`,
		`{"filter":{"reasons":["dead-lettered"],"orderIds":["ORD-1"]},"unknown":1}`, `{"source":"aws.events","detail-type":"Scheduled Event"} {}`,
		`{"source":"aws.events","detail-type":"Object Created"}`, `{"rate":1e400}`, `{"rate":0.0001}`} {
		f.Add([]byte(s))
	}
	var c handler.Config // as config(t) builds it: routes orders and payments, caps 1000 and 50/s
	for _, name := range []string{"orders", "payments"} {
		c.Routes = append(c.Routes, replay.Route{Name: name, DLQURL: "https://sqs/" + name + "-dlq", SourceURL: "https://sqs/" + name, ParkingURL: "https://sqs/" + name + "-parking"})
	}
	c.Engine.MaxPerRun = 1000
	c.Engine.Rate = 50
	f.Fuzz(func(t *testing.T, payload []byte) {
		req, err := c.ParseInvocation(payload)
		if err != nil {
			if !reflect.DeepEqual(req, replay.Request{}) {
				t.Fatalf("refused with %v, and a request %+v", err, req)
			}
			return
		}
		if !json.Valid(payload) {
			t.Fatalf("accepted a payload that is not one JSON value: %q", payload)
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("accepted an invalid request: %v", err)
		}
		if err := c.WithinCaps(req); err != nil || req.Max < 0 || req.Max > c.Engine.MaxPerRun || req.Rate > c.Engine.Rate {
			t.Fatalf("accepted a request above the caps: %+v (%v)", req, err)
		}
		if req.RunID != "" || req.ResetCount {
			t.Fatalf("an invocation set the run id or a reset: %+v", req)
		}
		var names []string
		for _, rt := range req.Routes {
			if !slices.Contains(c.Routes, rt) || slices.Contains(names, rt.Name) {
				t.Fatalf("route %+v: not configured, or twice", rt)
			}
			names = append(names, rt.Name)
		}
		var ev struct {
			Source string `json:"source"`
		}
		if json.Unmarshal(payload, &ev) == nil && ev.Source == handler.ScheduledSource {
			if !reflect.DeepEqual(req, replay.Request{Routes: c.Routes}) {
				t.Fatalf("a scheduled event made %+v", req)
			}
			return
		}
		doc, err := json.Marshal(handler.OnDemand{DryRun: req.DryRun, Max: req.Max, Rate: req.Rate, Filter: req.Filter, Routes: names})
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.ParseInvocation(doc)
		if err != nil {
			t.Fatalf("the request written back (%s) is refused: %v", doc, err)
		}
		if !reflect.DeepEqual(normal(back), normal(req)) {
			t.Fatalf("round trip through %s:\n got %+v\nwant %+v", doc, back, req)
		}
	})
}

// normal is r with empty filter lists as nil: JSON writes both the same.
func normal(r replay.Request) replay.Request {
	if len(r.Filter.Reasons) == 0 {
		r.Filter.Reasons = nil
	}
	if len(r.Filter.Keys) == 0 {
		r.Filter.Keys = nil
	}
	return r
}

// FuzzLoadConfig reads the replay function's configuration from fuzzed
// environments: REPLAY_ROUTES and spec, NUL-separated KEY=value entries
// (any of the function's settings). Properties:
//   - a refused environment is an error and the zero configuration;
//   - an accepted one validates (every setting within its declared bounds),
//     REPLAY_ROUTES was one JSON value, and every route name fits the
//     engine's metadata (at most 256 bytes: a longer one would make the
//     engine's own metadata unverifiable, and every replay a first one);
//   - the round trip: the configuration written back as an environment
//     reads to the same configuration.
func FuzzLoadConfig(f *testing.F) {
	routes := `[{"name":"orders","dlqUrl":"https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq","sourceUrl":"https://sqs.us-east-1.amazonaws.com/000000000000/orders",` +
		`"parkingUrl":"https://sqs.us-east-1.amazonaws.com/000000000000/orders-parking"}]`
	base := "LEDGER_TABLE=ledger\x00IDEMPOTENCY_TABLE=idempotency"
	f.Add(routes, base)
	f.Add(routes, base+"\x00MAX_REPLAYS=5\x00BACKOFF_BASE=90s\x00BACKOFF_MAX=4h30m\x00RATE=0.5\x00WORKERS=16\x00HEALTH_URL=https://tax.example/v1\x00CONSUMER_NAME=payments\x00POWERTOOLS_SERVICE_NAME=payments")
	f.Add(routes+routes, base)
	f.Add(routes+" garbage", base)
	f.Add(strings.Replace(routes, `"orders"`, `"`+strings.Repeat("o", 300)+`"`, 1), base)
	f.Add(`[{"name":"o","dlqUrl":"d.fifo","sourceUrl":"s.fifo","parkingUrl":"p.fifo"},{"NAME":"p","dlqurl":"d","sourceUrl":"s","parkingUrl":"p"}]`, base)
	f.Add(`[{"name":"o","dlq_url":"d"}]`, base+"\x00RATE=NaN\x00DEADLINE_MARGIN=0s\x00MAX_PER_RUN=2147483648")
	f.Add(`null`, base+"\x00EXPIRY_RESCUE_WINDOW=336h\x00BACKOFF_BASE=1ns\x00CANARY_LIMIT=+7\x00RATE=3e3")
	f.Fuzz(func(t *testing.T, routes, spec string) {
		env := map[string]string{settings.ReplayRoutes.Env: routes}
		for _, kv := range strings.Split(spec, "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		cfg, err := handler.LoadConfig(func(k string) string { return env[k] })
		if err != nil {
			if !reflect.DeepEqual(cfg, handler.Config{}) {
				t.Fatalf("refused with %v, and a configuration %+v", err, cfg)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted a configuration that does not validate: %v", err)
		}
		if !json.Valid([]byte(routes)) {
			t.Fatalf("accepted REPLAY_ROUTES that is not one JSON value: %q", routes)
		}
		for _, rt := range cfg.Routes {
			if len(rt.Name) > 256 {
				t.Fatalf("accepted a route name of %d bytes", len(rt.Name))
			}
		}
		back, err := handler.LoadConfig(func(k string) string { return environment(t, cfg)[k] })
		if err != nil {
			t.Fatalf("the configuration written back is refused: %v", err)
		}
		if !reflect.DeepEqual(back, cfg) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, cfg)
		}
	})
}

// environment writes c back as the environment that configures it.
func environment(t *testing.T, c handler.Config) map[string]string {
	t.Helper()
	routes, err := json.Marshal(c.Routes)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Engine
	return map[string]string{
		settings.ReplayRoutes.Env:         string(routes),
		settings.LedgerTable.Env:          c.LedgerTable,
		settings.IdempotencyTable.Env:     c.IdempotencyTable,
		settings.ConsumerName.Env:         c.ConsumerName,
		settings.HealthURL.Env:            c.HealthURL,
		settings.MetricsNamespace.Env:     c.MetricsNamespace,
		settings.ServiceName.Env:          c.Lane,
		settings.MaxReplays.Env:           strconv.Itoa(o.MaxReplays),
		settings.BackoffBase.Env:          settings.FormatDuration(o.BackoffBase),
		settings.BackoffMax.Env:           settings.FormatDuration(o.BackoffMax),
		settings.ExpiryRescueWindow.Env:   settings.FormatDuration(o.ExpiryRescueWindow),
		settings.Rate.Env:                 settings.FormatFloat(o.Rate),
		settings.MaxPerRun.Env:            strconv.Itoa(o.MaxPerRun),
		settings.CanaryLimit.Env:          strconv.Itoa(o.CanaryLimit),
		settings.RefillThreshold.Env:      strconv.Itoa(o.RefillThreshold),
		settings.ReplayDeadlineMargin.Env: settings.FormatDuration(o.DeadlineMargin),
		settings.Workers.Env:              fmt.Sprint(o.Workers),
	}
}
