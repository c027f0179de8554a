package handler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/archive/archivetest"
	"github.com/homingdlq/homing/internal/handler"
	"github.com/homingdlq/homing/internal/redact"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
	"github.com/homingdlq/homing/replay/replaytest"
)

// fixture is the function wired to in-memory queues and ledger, with two
// routes, "orders" and "payments", on a manual clock.
type fixture struct {
	clock   *replaytest.Clock
	q       *replaytest.MemoryQueue
	ledger  *replaytest.MemoryLedger
	routes  []replay.Route
	health  error
	probe   func(context.Context) error // when set, the health probe instead of health
	handler lambda.Handler
	logs    bytes.Buffer
	metrics bytes.Buffer
	s3      *archivetest.MemoryS3 // the archive bucket "archive"
	invalid string                // the invalid queue's URL
}

func newFixture(t *testing.T, env map[string]string) *fixture {
	t.Helper()
	f := &fixture{clock: replaytest.NewClock(time.Now().UTC().Truncate(time.Second))}
	f.q = replaytest.NewMemoryQueue(f.clock.Now)
	f.ledger = replaytest.NewMemoryLedger(f.clock.Now)
	for _, name := range []string{"orders", "payments"} {
		r := replay.Route{Name: name}
		for _, q := range []struct {
			url  *string
			name string
		}{{&r.DLQURL, name + "-dlq"}, {&r.SourceURL, name}, {&r.ParkingURL, name + "-parking"}} {
			url, err := f.q.CreateQueue(q.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			*q.url = url
		}
		f.routes = append(f.routes, r)
	}
	invalid, err := f.q.CreateQueue("orders-invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.invalid = invalid
	f.s3 = archivetest.NewMemoryS3()
	f.s3.AddBucket("archive")
	routes, _ := json.Marshal(f.routes)
	vars := map[string]string{"REPLAY_ROUTES": string(routes), "LEDGER_TABLE": "ledger", "IDEMPOTENCY_TABLE": "idempotency"}
	if env["ARCHIVE_BUCKET"] != "" {
		vars["INVALID_QUEUE_URL"] = f.invalid
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := handler.LoadConfig(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	h := handler.New(cfg, handler.Deps{
		Queue:       f.q,
		Ledger:      f.ledger,
		Completions: &replaytest.MemoryCompletions{Store: idempotency.NewMemoryStore(), Scope: cfg.ConsumerName},
		Health: func(ctx context.Context) error {
			if f.probe != nil {
				return f.probe(ctx)
			}
			return f.health
		},
		Logger:  slog.New(slog.NewJSONHandler(&f.logs, nil)),
		Metrics: &f.metrics,
		Now:     f.clock.Now,
		Sleep:   f.clock.Sleep,
		Archive: f.s3,
	})
	f.handler = lambda.NewHandler(h)
	return f
}

// deadLetter puts n orders in the route's DLQ, dead-lettered two hours ago.
func (f *fixture) deadLetter(t *testing.T, route replay.Route, n int) {
	t.Helper()
	for i := range n {
		body := fmt.Sprintf(`{"orderId":"ORD-%s-%d"}`, route.Name, i)
		if _, err := f.q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(route.DLQURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) invoke(t *testing.T, payload []byte) (replay.Summary, error) {
	t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	out, err := f.handler.Invoke(ctx, payload)
	if err != nil {
		return replay.Summary{}, err
	}
	var s replay.Summary
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("response is not a summary: %v\n%s", err, out)
	}
	return s, nil
}

func TestScheduledEventRunsEveryRoute(t *testing.T) {
	f := newFixture(t, nil)
	f.deadLetter(t, f.routes[0], 3)
	f.deadLetter(t, f.routes[1], 2)
	f.clock.Advance(2 * time.Hour)
	s, err := f.invoke(t, sample(t, "replay-scheduled.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.RunID != "req-1" || s.DryRun || s.Max != settings.MaxPerRun.Default || s.Rate != settings.Rate.Default || s.Filter != nil {
		t.Fatalf("summary = %+v", s)
	}
	if len(s.Routes) != 2 || s.Routes[0].Replayed != 3 || s.Routes[1].Replayed != 2 || s.Total.Replayed != 5 {
		t.Fatalf("routes = %+v", s.Routes)
	}
	if n := len(f.q.Messages(f.routes[0].SourceURL)); n != 3 {
		t.Fatalf("%d in the source", n)
	}
	if last, found, _ := f.ledger.LastRun(context.Background()); !found || last.RunID != "req-1" {
		t.Fatal("the run is not in the ledger")
	}
	if strings.Count(f.metrics.String(), "\n") != 2 {
		t.Fatalf("metrics:\n%s", f.metrics.String())
	}
}

// The run's metrics carry the lane (POWERTOOLS_SERVICE_NAME) beside the
// route, in the namespace POWERTOOLS_METRICS_NAMESPACE: two lanes whose
// routes are both called "orders" never merge. A dry run writes none.
func TestMetricsCarryTheLane(t *testing.T) {
	f := newFixture(t, map[string]string{"POWERTOOLS_SERVICE_NAME": "Homing/Orders", "POWERTOOLS_METRICS_NAMESPACE": "Acme"})
	f.deadLetter(t, f.routes[0], 1)
	f.clock.Advance(2 * time.Hour)
	if _, err := f.invoke(t, []byte(`{"dryRun":true}`)); err != nil {
		t.Fatal(err)
	}
	if f.metrics.Len() != 0 {
		t.Fatalf("a dry run wrote metrics:\n%s", f.metrics.String())
	}
	if _, err := f.invoke(t, sample(t, "replay-scheduled.json")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(f.metrics.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("metrics:\n%s", f.metrics.String())
	}
	var line struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
			}
		} `json:"_aws"`
		Lane, Route string
		Replayed    *int
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	d := line.AWS.CloudWatchMetrics
	if len(d) != 1 || d[0].Namespace != "Acme" || fmt.Sprint(d[0].Dimensions) != "[[Lane Route]]" ||
		line.Lane != "Homing/Orders" || line.Route != "orders" || line.Replayed == nil || *line.Replayed != 1 {
		t.Fatalf("line = %s", lines[0])
	}
}

func TestOnDemandRequest(t *testing.T) {
	f := newFixture(t, nil)
	f.deadLetter(t, f.routes[0], 12)
	f.deadLetter(t, f.routes[1], 2)
	f.clock.Advance(2 * time.Hour)
	s, err := f.invoke(t, sample(t, "replay-on-demand.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := replay.Filter{Reasons: []string{"dead-lettered"}, OlderThan: time.Hour, Keys: []string{}}
	if !s.DryRun || s.Max != 10 || s.Rate != 5 || s.Filter == nil || !slices.Equal(s.Filter.Reasons, want.Reasons) || s.Filter.OlderThan != want.OlderThan {
		t.Fatalf("summary = %+v (filter %+v)", s, s.Filter)
	}
	if len(s.Routes) != 1 || s.Routes[0].Route != "orders" || s.Routes[0].Replayed != 10 || s.Routes[0].StopReason != replay.StopCap {
		t.Fatalf("routes = %+v", s.Routes)
	}
	if n := len(f.q.Messages(f.routes[0].SourceURL)); n != 0 {
		t.Fatalf("a dry run sent %d messages", n)
	}
}

func TestHealthGateUsesTheProbe(t *testing.T) {
	f := newFixture(t, map[string]string{"HEALTH_URL": "http://127.0.0.1:1"})
	f.health = errors.New("check tax service health: status 503")
	f.deadLetter(t, f.routes[0], 2)
	f.clock.Advance(2 * time.Hour)
	s, err := f.invoke(t, sample(t, "replay-scheduled.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Gates[0].Decision != replay.GateClosed || !strings.Contains(s.Gates[0].Detail, "503") || s.Total.Replayed != 0 {
		t.Fatalf("summary = %+v", s)
	}
}

// A HEALTH_URL with credentials: the real probe's failures (an error
// status, a refused connection, a bad URL at cold start) never repeat
// them, in the gate's detail, the log, the returned summary or the run
// record in the ledger.
func TestHealthURLCredentialsAreNeverRepeated(t *testing.T) {
	const password = "s3cret-Pw"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, base := range map[string]string{
		"status":  strings.Replace(srv.URL, "://", "://ops:"+password+"@", 1) + "/tax",
		"refused": strings.Replace(closed.URL, "://", "://ops:"+password+"@", 1),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"HEALTH_URL": base})
			cfg := handler.Config{HealthURL: base}
			probe, err := cfg.Health(srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			f.probe = probe
			f.deadLetter(t, f.routes[0], 2)
			f.clock.Advance(2 * time.Hour)
			s, err := f.invoke(t, sample(t, "replay-scheduled.json"))
			if err != nil {
				t.Fatal(err)
			}
			if s.Gates[0].Decision != replay.GateClosed || s.Total.Replayed != 0 {
				t.Fatalf("the health gate did not close: %+v", s.Gates)
			}
			runs, err := f.ledger.Runs(context.Background(), 1)
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs = %v, %v", runs, err)
			}
			summary, _ := json.Marshal(s)
			record, _ := json.Marshal(runs[0])
			for where, text := range map[string]string{"gate detail": s.Gates[0].Detail, "summary": string(summary), "run record": string(record), "log": f.logs.String()} {
				if strings.Contains(text, password) || strings.Contains(text, "ops:") {
					t.Errorf("the %s repeats the credentials: %s", where, text)
				}
			}
			if !strings.Contains(s.Gates[0].Detail, redact.Mask+"@") {
				t.Errorf("gate detail %q does not name the redacted URL", s.Gates[0].Detail)
			}
		})
	}
	for _, bad := range []string{"ftp://ops:" + password + "@tax.local", "http://ops:" + password + "%zz@tax.local", "http://ops:" + password + "@tax.local/?q=1"} {
		if _, err := (handler.Config{HealthURL: bad}).Health(nil); err == nil || strings.Contains(err.Error(), password) {
			t.Errorf("Health(%q) = %v: want an error without the password", bad, err)
		}
		env := map[string]string{"REPLAY_ROUTES": `[{"name":"o","dlqUrl":"http://h/000000000000/d","sourceUrl":"http://h/000000000000/s","parkingUrl":"http://h/000000000000/p"}]`, "LEDGER_TABLE": "ledger", "IDEMPOTENCY_TABLE": "idem", "HEALTH_URL": bad}
		if _, err := handler.LoadConfig(func(k string) string { return env[k] }); err == nil || strings.Contains(err.Error(), password) {
			t.Errorf("LoadConfig with HEALTH_URL %q = %v: want an error without the password", bad, err)
		}
	}
}

// A payload ParseInvocation refuses runs nothing: not one SQS call.
func TestRefusedInvocationsRunNothing(t *testing.T) {
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			// The caps of the table's configuration (invocation_test.go).
			f := newFixture(t, map[string]string{"MAX_PER_RUN": "1000", "RATE": "50"})
			var n atomic.Int64 // the engine calls SQS from several goroutines
			f.q.CallFault = func(string, string) error { n.Add(1); return nil }
			_, err := f.invoke(t, []byte(tt.payload))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			if calls := n.Load(); calls != 0 {
				t.Fatalf("%d SQS calls for a refused invocation", calls)
			}
		})
	}
}

// An on-demand request cannot lift the configured caps: a max above
// MAX_PER_RUN or a rate above RATE is refused before anything runs.
func TestOnDemandCaps(t *testing.T) {
	tests := []struct {
		name, payload string
		env           map[string]string
		want          string // "" means accepted
	}{
		{"the issue's payload, default caps", `{"max":100000000,"rate":3000}`, nil, "max 100000000: above the configured cap MAX_PER_RUN=100000"},
		{"rate above the default", `{"rate":251}`, nil, "rate 251: above the configured cap RATE=250"},
		{"max above a configured cap", `{"dryRun":true,"max":21}`, map[string]string{"MAX_PER_RUN": "20"}, "MAX_PER_RUN=20"},
		{"rate above a configured cap", `{"rate":10.5}`, map[string]string{"RATE": "10"}, "RATE=10"},
		{"at the configured caps", `{"dryRun":true,"max":20,"rate":10}`, map[string]string{"MAX_PER_RUN": "20", "RATE": "10"}, ""},
		{"below the caps", `{"dryRun":true,"max":5,"rate":1}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.env)
			var n atomic.Int64 // the engine calls SQS from several goroutines
			f.q.CallFault = func(string, string) error { n.Add(1); return nil }
			s, err := f.invoke(t, []byte(tt.payload))
			calls := n.Load()
			if tt.want == "" {
				if err != nil || calls == 0 {
					t.Fatalf("summary %+v, err = %v, %d SQS calls; want a run", s, err, calls)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, handler.ErrAboveCap) {
				t.Fatalf("err = %v, want ErrAboveCap mentioning %q", err, tt.want)
			}
			if calls != 0 {
				t.Fatalf("%d SQS calls for a refused request", calls)
			}
		})
	}
}

// An empty on-demand request runs every route with the defaults, as the
// schedule does.
func TestEmptyObjectRunsEveryRoute(t *testing.T) {
	f := newFixture(t, nil)
	s, err := f.invoke(t, []byte(`{}`))
	if err != nil || len(s.Routes) != 2 || s.DryRun {
		t.Fatalf("summary = %+v, err = %v", s, err)
	}
}

func FuzzHandle(f *testing.F) {
	for _, name := range []string{"replay-scheduled.json", "replay-on-demand.json"} {
		b, err := os.ReadFile("../../events/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"filter":{"olderThan":"-5h"},"max":3}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		fx := newFixture(t, nil)
		_, _ = fx.handler.Invoke(context.Background(), payload) // must not panic
	})
}
