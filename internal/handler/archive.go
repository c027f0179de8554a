package handler

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/homingdlq/homing/internal/archive"
	"github.com/homingdlq/homing/internal/emfline"
	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// archiver is a handler's archive of its lane's queues.
type archiver struct {
	a        *archive.Archiver
	parking  []string        // the routes' parking queues
	verified []archive.Queue // parking, with their verifiers once read
	invalid  string          // the lane's invalid queue; "" for none
	ledger   replay.Ledger   // holds the public seal key
	budget   time.Duration
	logger   *slog.Logger
	metrics  io.Writer
	ns       string
	lane     string
	now      func() time.Time
}

// newArchiver returns the archiver cfg and d configure, nil for none: no
// bucket, no client, or a key expression that does not compile (Validate
// has refused it).
func newArchiver(cfg Config, d Deps) *archiver {
	if cfg.Archive.Bucket == "" || d.Archive == nil || len(cfg.Routes) == 0 {
		return nil
	}
	logger := d.Logger
	if logger == nil {
		logger = slog.Default()
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	// The keys name the lane by its route's name (the construct's lane
	// name), the metrics by the Lane dimension.
	a, err := archive.New(d.Queue, archive.NewStore(d.Archive, cfg.Archive.Bucket), cfg.Routes[0].Name, cfg.Routes[0].Key, archive.Options{
		OnArrival: cfg.Archive.Mode == settings.ArchiveOnArrival,
		Margin:    cfg.Archive.Margin,
		Budget:    cfg.Archive.Budget,
		Failures:  d.Failures,
		Logger:    logger,
		Now:       now,
	})
	if err != nil {
		return nil
	}
	ar := &archiver{a: a, ledger: d.Ledger, budget: cfg.Archive.Budget, logger: logger, metrics: d.Metrics,
		ns: cfg.MetricsNamespace, lane: cfg.Lane, now: now}
	for _, r := range cfg.Routes {
		if !slices.Contains(ar.parking, r.ParkingURL) {
			ar.parking = append(ar.parking, r.ParkingURL)
		}
	}
	ar.invalid = cfg.Archive.InvalidURL
	return ar
}

// queues returns the queues to archive: each parking queue with the
// verifier of its parked messages, read once per execution environment,
// and the invalid queue. Without the public seal key the parking queues
// wait for a run that can read it: archived unverified, their messages
// would lose their reasons for good.
func (a *archiver) queues(ctx context.Context) []archive.Queue {
	if a.verified == nil {
		for _, url := range a.parking {
			q, err := archive.Parked(ctx, a.ledger, url)
			if err != nil {
				a.logger.WarnContext(ctx, "not archiving the parking queues this run: no public seal key to verify their metadata with", "error", err)
				a.verified = nil
				break
			}
			a.verified = append(a.verified, q)
		}
	}
	out := slices.Clone(a.verified)
	if a.invalid != "" {
		out = append(out, archive.Queue{URL: a.invalid, Role: archive.Invalid})
	}
	return out
}

// run archives within the budget, and within half the time ctx has left,
// so that the replay keeps the other half; it logs and counts failures.
func (a *archiver) run(ctx context.Context) {
	budget := a.budget
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline)/2)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	counts, err := a.a.Run(ctx, a.queues(ctx))
	if err != nil {
		a.logger.ErrorContext(ctx, "archive failed", "error", err)
	}
	a.logger.InfoContext(ctx, "archive", "queues", counts)
	if a.metrics == nil {
		return
	}
	var archived, failed int
	for _, c := range counts {
		archived += c.Archived
		failed += c.Failed
	}
	err = emfline.NewWriter(a.metrics).Write(emfline.Line{
		Namespace:  a.ns,
		Timestamp:  a.now(),
		Dimensions: []emfline.Dimension{{Name: settings.DimensionLane, Value: a.lane}},
		Metrics: []emfline.Metric{
			{Name: settings.MetricArchived, Unit: emfline.Count, Value: float64(archived)},
			{Name: settings.MetricArchiveFailed, Unit: emfline.Count, Value: float64(failed)},
		},
	})
	if err != nil {
		a.logger.ErrorContext(ctx, "archive metrics", "error", err)
	}
}
