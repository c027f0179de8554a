// Command replay is the replay Lambda: on an EventBridge schedule (or when
// an operator invokes it) it brings messages back from the dead-letter
// queues of its routes with replay, and returns the run summary.
//
// It accepts two payloads:
//
//   - an EventBridge scheduled event ({"source":"aws.events","detail-type":
//     "Scheduled Event",...}): every route, with the configured defaults;
//   - an on-demand request, every field optional:
//     {"dryRun":true,"max":10,"rate":5,"routes":["orders"],
//     "filter":{"reasons":["dead-lettered"],"olderThan":"1h","orderIds":["ORD-1"]}}.
//     Unknown fields are an error, so that a misspelt "dryRun" never turns
//     into a real run. A "max" above MAX_PER_RUN or a "rate" above RATE is
//     refused, not clamped (nothing runs): whoever may invoke the function
//     cannot lift its caps, and a larger run is an operator's `dlq replay`.
//
// Configuration is read from the environment; see [replayconfig.Config].
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/homingdlq/homing/dynamo"
	"github.com/homingdlq/homing/internal/replayconfig"
	"github.com/homingdlq/homing/replay"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := replayconfig.Load(os.Getenv)
	if err != nil {
		return err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	health, err := cfg.Health()
	if err != nil {
		return err
	}
	var (
		queue = sqs.NewFromConfig(awsCfg)
		db    = dynamodb.NewFromConfig(awsCfg)
	)
	var (
		_ replay.Queue          = queue
		_ dynamo.LedgerAPI      = db
		_ dynamo.CompletionsAPI = db
	)
	h := newHandler(cfg, deps{
		queue:       queue,
		ledger:      dynamo.NewLedger(db, cfg.LedgerTable, nil),
		completions: dynamo.NewCompletions(db, cfg.IdempotencyTable, cfg.ConsumerName, nil),
		health:      health,
		logger:      lambdacontext.NewLogger(lambdacontext.WithFunctionARN()),
		metrics:     os.Stdout,
	})
	lambda.StartWithOptions(h, lambda.WithContext(ctx))
	return nil
}

// deps are the adapters the handler is built from; tests pass fakes.
type deps struct {
	queue       replay.Queue
	ledger      replay.Ledger
	completions replay.Completions
	health      func(context.Context) error // nil: no health gate
	logger      *slog.Logger
	metrics     io.Writer
	now         func() time.Time
	sleep       func(context.Context, time.Duration) error
}

// handler turns an invocation into a replay run.
type handler struct {
	engine  *replay.Engine
	routes  []replay.Route
	cfg     replayconfig.Config // its caps bound on-demand requests
	metrics io.Writer           // the runs' EMF lines; nil: none
}

func newHandler(cfg replayconfig.Config, d deps) *handler {
	opts := cfg.Options()
	opts.Health = d.health
	opts.Completions = d.completions
	opts.Logger = d.logger
	opts.Now = d.now
	opts.Sleep = d.sleep
	// The handler writes the run's metrics itself, with the lane's
	// dimension (the engine's Options.Metrics has the route's only).
	return &handler{engine: replay.New(d.queue, d.ledger, opts), routes: cfg.Routes, cfg: cfg, metrics: d.metrics}
}

// Invoke implements lambda.Handler, so that the handler sees the payload as
// it came (an empty one, or one with trailing data, included) and every
// malformed payload gets a clear error.
func (h *handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	s, err := h.Handle(ctx, payload)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Handle runs one invocation and returns the run summary. A malformed
// payload, an unknown route, or an on-demand max or rate above the
// configured caps is an error and nothing runs. A run whose
// route stopped on an error (a queue or the ledger failed) returns the
// engine's error, which the function's Errors metric counts; failures of
// single messages are counted in the summary and in the EMF metric Errors
// (namespace POWERTOOLS_METRICS_NAMESPACE, dimensions Lane and Route), not
// as a failed invocation.
func (h *handler) Handle(ctx context.Context, payload json.RawMessage) (replay.Summary, error) {
	req, err := h.request(payload)
	if err != nil {
		return replay.Summary{}, err
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		req.RunID = lc.AwsRequestID
	}
	s, err := h.engine.Run(ctx, req)
	if h.metrics != nil && !s.DryRun {
		if werr := replay.WriteLaneEMF(h.metrics, h.cfg.Metrics.Namespace, h.cfg.Metrics.Lane, s); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return s, err
}

// onDemand is the payload of an operator's invocation.
type onDemand struct {
	DryRun bool          `json:"dryRun"`
	Max    int           `json:"max"`
	Rate   float64       `json:"rate"`
	Filter replay.Filter `json:"filter"`
	Routes []string      `json:"routes"`
}

// request decodes either payload into a replay request.
func (h *handler) request(payload json.RawMessage) (replay.Request, error) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return replay.Request{}, errors.New(`empty payload: send an EventBridge scheduled event or a request such as {"dryRun":true}`)
	}
	// Both shapes are JSON objects; "source" and "detail-type" tell an
	// EventBridge event from an on-demand request, which has neither.
	var event struct {
		Source     *string `json:"source"`
		DetailType *string `json:"detail-type"`
	}
	if err := json.Unmarshal(trimmed, &event); err != nil {
		return replay.Request{}, fmt.Errorf("payload is not a valid JSON object: %w", err)
	}
	if event.Source != nil || event.DetailType != nil {
		if src, dt := deref(event.Source), deref(event.DetailType); src != "aws.events" || dt != "Scheduled Event" {
			return replay.Request{}, fmt.Errorf("unsupported event: source %q, detail-type %q (want aws.events, Scheduled Event)", src, dt)
		}
		return replay.Request{Routes: h.routes}, nil
	}
	var in onDemand
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return replay.Request{}, fmt.Errorf("on-demand request: %w", err)
	}
	req := replay.Request{DryRun: in.DryRun, Max: in.Max, Rate: in.Rate, Filter: in.Filter, Routes: h.routes}
	if len(in.Routes) > 0 {
		req.Routes = nil
		var unknown []string
		for _, name := range in.Routes {
			i := slices.IndexFunc(h.routes, func(r replay.Route) bool { return r.Name == name })
			if i < 0 {
				unknown = append(unknown, name)
				continue
			}
			req.Routes = append(req.Routes, h.routes[i])
		}
		if len(unknown) > 0 {
			names := make([]string, len(h.routes))
			for i, r := range h.routes {
				names[i] = r.Name
			}
			return replay.Request{}, fmt.Errorf("on-demand request: unknown routes %q (configured: %q)", unknown, names)
		}
	}
	if err := errors.Join(req.Validate(), h.cfg.WithinCaps(req)); err != nil {
		return replay.Request{}, fmt.Errorf("on-demand request: %w", err)
	}
	return req, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
