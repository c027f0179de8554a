package handler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/replay"
)

// REPLAY_ROUTES names each lane's key, payload hash and records.
func TestLoadReadsTheLaneOfEachRoute(t *testing.T) {
	env := map[string]string{"LEDGER_TABLE": "ledger", "IDEMPOTENCY_TABLE": "idem", "CONSUMER_NAME": "shipments", "REPLAY_ROUTES": `[
		{"name":"shipments","dlqUrl":"https://sqs/s-dlq","sourceUrl":"https://sqs/s","parkingUrl":"https://sqs/s-parking","key":"shipment.id","payloadHash":"shipment","records":true},
		{"name":"legacy","dlqUrl":"https://sqs/l-dlq","sourceUrl":"https://sqs/l","parkingUrl":"https://sqs/l-parking"}]`}
	cfg, err := handler.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := []replay.Route{
		{Name: "shipments", DLQURL: "https://sqs/s-dlq", SourceURL: "https://sqs/s", ParkingURL: "https://sqs/s-parking", Key: "shipment.id", PayloadHash: "shipment", Records: true},
		{Name: "legacy", DLQURL: "https://sqs/l-dlq", SourceURL: "https://sqs/l", ParkingURL: "https://sqs/l-parking"},
	}
	if len(cfg.Routes) != 2 || cfg.Routes[0] != want[0] || cfg.Routes[1] != want[1] || cfg.ConsumerName != "shipments" {
		t.Fatalf("routes %+v, consumer %q", cfg.Routes, cfg.ConsumerName)
	}
}

func TestLoad(t *testing.T) {
	routes := `[{"name":"orders","dlqUrl":"https://sqs/q-dlq","sourceUrl":"https://sqs/q","parkingUrl":"https://sqs/q-parking"}]`
	base := map[string]string{"REPLAY_ROUTES": routes, "LEDGER_TABLE": "ledger", "IDEMPOTENCY_TABLE": "idem"}
	tests := []struct {
		name    string
		env     map[string]string
		replace bool
		wantErr []string
	}{
		{name: "defaults", env: base},
		{name: "nothing set", replace: true, env: map[string]string{}, wantErr: []string{"LEDGER_TABLE is required", "IDEMPOTENCY_TABLE is required", "REPLAY_ROUTES is required"}},
		{name: "routes not JSON", env: map[string]string{"REPLAY_ROUTES": "orders"}, wantErr: []string{"REPLAY_ROUTES: not a JSON array"}},
		{name: "misspelt route field", env: map[string]string{"REPLAY_ROUTES": `[{"name":"o","dlq_url":"d"}]`}, wantErr: []string{`unknown field "dlq_url"`}},
		{name: "mixed queue types", env: map[string]string{"REPLAY_ROUTES": `[{"name":"o","dlqUrl":"d.fifo","sourceUrl":"s.fifo","parkingUrl":"p"}]`}, wantErr: []string{"all queues of a route must be FIFO"}},
		{name: "bad numbers", env: map[string]string{"MAX_REPLAYS": "0", "RATE": "fast", "MAX_PER_RUN": "-1", "CANARY_LIMIT": "x", "REFILL_THRESHOLD": "0", "WORKERS": "17"},
			wantErr: []string{"MAX_REPLAYS=0", `RATE="fast"`, "MAX_PER_RUN=-1", `CANARY_LIMIT="x"`, "REFILL_THRESHOLD=0", "WORKERS=17: want 1..16"}},
		{name: "bad durations", env: map[string]string{"BACKOFF_BASE": "10h", "BACKOFF_MAX": "1h", "EXPIRY_RESCUE_WINDOW": "soon", "DEADLINE_MARGIN": "0s"},
			wantErr: []string{"BACKOFF_BASE=10h, BACKOFF_MAX=1h: want base <= max", `EXPIRY_RESCUE_WINDOW="soon"`, "DEADLINE_MARGIN=0s"}},
		{name: "rate not a number", env: map[string]string{"RATE": "NaN"}, wantErr: []string{"RATE=NaN"}},
		{name: "bad metric names", env: map[string]string{"POWERTOOLS_METRICS_NAMESPACE": "AWS/Lambda", "POWERTOOLS_SERVICE_NAME": " "},
			wantErr: []string{"POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_SERVICE_NAME"}},
		{name: "bad health URL", env: map[string]string{"HEALTH_URL": "tax.local"}, wantErr: []string{"HEALTH_URL"}},
		{name: "a key that does not compile", env: map[string]string{"REPLAY_ROUTES": `[{"name":"o","dlqUrl":"d","sourceUrl":"s","parkingUrl":"p","key":"a.[","records":true}]`},
			wantErr: []string{`REPLAY_ROUTES: replay: invalid request: route "o": key "a.[": not a JMESPath expression`}},
		{name: "bad archive", env: map[string]string{"ARCHIVE_MODE": "never", "ARCHIVE_MARGIN": "30m", "ARCHIVE_BUDGET": "1h", "ARCHIVE_BUCKET": strings.Repeat("b", 64)},
			wantErr: []string{`ARCHIVE_MODE="never": want before-expiry or on-arrival`, "ARCHIVE_MARGIN=30m", "ARCHIVE_BUDGET=1h", "ARCHIVE_BUCKET="}},
		{name: "records without a key", env: map[string]string{"REPLAY_ROUTES": `[{"name":"o","dlqUrl":"d","sourceUrl":"s","parkingUrl":"p","records":true}]`},
			wantErr: []string{`route "o": records needs a key`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			if !tt.replace {
				for k, v := range base {
					env[k] = v
				}
			}
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, err := handler.LoadConfig(func(k string) string { return env[k] })
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				want := handler.Config{
					Routes:      []replay.Route{{Name: "orders", DLQURL: "https://sqs/q-dlq", SourceURL: "https://sqs/q", ParkingURL: "https://sqs/q-parking"}},
					LedgerTable: "ledger", IdempotencyTable: "idem", ConsumerName: "invoice",
					MetricsNamespace: "Homing", Lane: "invoice",
				}
				want.Engine.MaxReplays = 3
				want.Engine.BackoffBase = 5 * time.Minute
				want.Engine.BackoffMax = 4 * time.Hour
				want.Engine.ExpiryRescueWindow = 24 * time.Hour
				want.Engine.Rate = 250
				want.Engine.MaxPerRun = 100000
				want.Engine.CanaryLimit = 5
				want.Engine.RefillThreshold = 100
				want.Engine.DeadlineMargin = 5 * time.Second
				want.Engine.Workers = 4
				want.Archive = handler.Archive{Mode: "before-expiry", Margin: 48 * time.Hour, Budget: time.Minute}
				if fmt.Sprint(cfg) != fmt.Sprint(want) {
					t.Fatalf("cfg = %+v\nwant %+v", cfg, want)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestOptionsAndHealth(t *testing.T) {
	var c handler.Config
	c.Engine.MaxReplays = 4
	c.Engine.Rate = 7
	if o := c.Options(); o.MaxReplays != 4 || o.Rate != 7 {
		t.Fatalf("options = %+v", o)
	}
	if h, err := c.Health(nil); h != nil || err != nil {
		t.Fatalf("no HEALTH_URL: probe %v, err %v", h != nil, err)
	}
	c.HealthURL = "tax.local"
	if _, err := c.Health(nil); err == nil || !strings.Contains(err.Error(), "HEALTH_URL") {
		t.Fatalf("a URL without scheme: err = %v", err)
	}
	var status atomic.Int32
	var path atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path.Store(r.URL.Path)
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	c.HealthURL = srv.URL + "/tax"
	h, err := c.Health(srv.Client())
	if err != nil || h == nil {
		t.Fatalf("probe %v, err %v", h != nil, err)
	}
	status.Store(http.StatusNoContent)
	if err := h(context.Background()); err != nil || path.Load() != "/tax/health" {
		t.Fatalf("a 204 at %v is unhealthy: %v", path.Load(), err)
	}
	status.Store(http.StatusServiceUnavailable)
	if err := h(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a 503 is healthy: %v", err)
	}
	c.HealthURL = "http://127.0.0.1:1"
	if h, _ = c.Health(nil); h(context.Background()) == nil {
		t.Fatal("a refused connection is healthy")
	}
}

func TestWithinCaps(t *testing.T) {
	var cfg handler.Config
	cfg.Engine.MaxPerRun = 100
	cfg.Engine.Rate = 20
	tests := []struct {
		name    string
		req     replay.Request
		wantErr []string
	}{
		{name: "defaults", req: replay.Request{}},
		{name: "at the caps", req: replay.Request{Max: 100, Rate: 20}},
		{name: "below the caps", req: replay.Request{Max: 1, Rate: 0.5}},
		{name: "max above", req: replay.Request{Max: 101}, wantErr: []string{"max 101: above the configured cap MAX_PER_RUN=100"}},
		{name: "rate above", req: replay.Request{Rate: 20.5}, wantErr: []string{"rate 20.5: above the configured cap RATE=20"}},
		{name: "both above", req: replay.Request{Max: 100000000, Rate: 3000}, wantErr: []string{"MAX_PER_RUN=100", "RATE=20"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := cfg.WithinCaps(tt.req)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, handler.ErrAboveCap) {
				t.Fatalf("err = %v, want ErrAboveCap", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to mention %q", err, want)
				}
			}
		})
	}
}

// A malformed value is reported once, as malformed: not again as out of
// range.
func TestLoadReportsAMalformedValueOnce(t *testing.T) {
	env := map[string]string{
		"REPLAY_ROUTES":     `[{"name":"orders","dlqUrl":"https://sqs/q-dlq","sourceUrl":"https://sqs/q","parkingUrl":"https://sqs/q-parking"}]`,
		"LEDGER_TABLE":      "ledger",
		"IDEMPOTENCY_TABLE": "idem",
		"RATE":              "fast",
		"BACKOFF_BASE":      "soon",
	}
	_, err := handler.LoadConfig(func(k string) string { return env[k] })
	if err == nil {
		t.Fatal("want an error")
	}
	if got := strings.Count(err.Error(), "RATE="); got != 1 || !strings.Contains(err.Error(), `RATE="fast": not a number`) {
		t.Errorf("RATE reported %d times: %v", got, err)
	}
	if got := strings.Count(err.Error(), "BACKOFF_BASE="); got != 1 {
		t.Errorf("BACKOFF_BASE reported %d times: %v", got, err)
	}
}
