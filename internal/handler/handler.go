package handler

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/replay"
)

// Deps are the adapters and hooks a [Handler] is built from; tests pass
// fakes.
type Deps struct {
	Queue  replay.Queue  // required
	Ledger replay.Ledger // required
	// Completions reads the consumer's completion records for the canary
	// gate, the breaker and the removal of dead letters already applied,
	// on the routes whose consumer writes them (replay.Route.Records, with
	// each route's key and payload hash); nil skips them on every route.
	Completions replay.Completions
	// Failures reads the consumer's failure records (dynamo.FailureLog):
	// their classes for a run filtered by error class and for the replays
	// that came back, the records for the archived objects; nil reads none.
	Failures interface {
		archive.Failures
		Classes(ctx context.Context, ids []string) (map[string]string, error)
	}
	// Health probes the downstream ([Config.Health]); nil: no health gate.
	Health func(context.Context) error
	Logger *slog.Logger // default slog.Default()
	// Metrics gets the EMF lines of each run that is not a dry run, with the
	// Lane and Route dimensions; nil writes none.
	Metrics io.Writer
	Now     func() time.Time                           // default time.Now
	Sleep   func(context.Context, time.Duration) error // default a timer
	// Archive is the client of the lane's archive bucket; nil, or no
	// ARCHIVE_BUCKET: no archive.
	Archive archive.S3
}

// Handler turns an invocation into a replay run. It is safe for the
// sequential invocations of one Lambda execution environment.
type Handler struct {
	engine *replay.Engine
	cfg    Config
	// archive, when set, archives queues before each run (see archive.go).
	archive *archiver
}

// New returns the handler of cfg over d.
func New(cfg Config, d Deps) *Handler {
	opts := cfg.Options()
	opts.Health = d.Health
	opts.Completions = d.Completions
	if d.Failures != nil {
		opts.Failures = d.Failures.Classes
	}
	opts.Logger = d.Logger
	opts.Now = d.Now
	opts.Sleep = d.Sleep
	opts.Metrics, opts.Namespace, opts.Lane = d.Metrics, cfg.MetricsNamespace, cfg.Lane
	return &Handler{engine: replay.New(d.Queue, d.Ledger, opts), cfg: cfg, archive: newArchiver(cfg, d)}
}

// Invoke implements lambda.Handler, so that the handler sees the payload as
// it came (an empty one, or one with trailing data, included) and every
// malformed payload gets a clear error.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	s, err := h.Handle(ctx, payload)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Handle runs one invocation and returns the run summary. A payload
// [Config.ParseInvocation] refuses is an error and nothing runs. With an
// archive, a run that is not a dry run first archives the routes' parking
// queues and the invalid queue, whatever the gates say; an archive failure
// is logged and counted (EMF ArchiveFailed), never the invocation's error.
// The run's id is the Lambda request id. A run whose route stopped on an error (a
// queue or the ledger failed) returns the engine's error, which the
// function's Errors metric counts; failures of single messages are counted
// in the summary and in the EMF metric Errors (namespace
// POWERTOOLS_METRICS_NAMESPACE, dimensions Lane and Route), not as a failed
// invocation.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (replay.Summary, error) {
	req, err := h.cfg.ParseInvocation(payload)
	if err != nil {
		return replay.Summary{}, err
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		req.RunID = lc.AwsRequestID
	}
	if h.archive != nil && !req.DryRun {
		h.archive.run(ctx)
	}
	return h.engine.Run(ctx, req)
}
