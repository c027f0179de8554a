package main

import (
	"io"

	"github.com/schollz/progressbar/v3"

	"github.com/homingdlq/homing/internal/replay"
)

// progress draws a replay run's progress on a terminal: one bar per route,
// messages examined of the DLQ's depth at the start. On anything else it
// draws nothing, so that piped stderr stays clean.
type progress struct {
	w     io.Writer
	on    bool
	bar   *progressbar.ProgressBar
	route string
}

func newProgress(w io.Writer, terminal bool) *progress { return &progress{w: w, on: terminal} }

// update is the engine's OnProgress hook.
func (p *progress) update(pr replay.Progress) {
	if !p.on {
		return
	}
	if p.bar == nil || p.route != pr.Route {
		p.finish()
		p.route = pr.Route
		p.bar = progressbar.NewOptions(max(pr.Depth, 1),
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription("replay "+pr.Route),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("msg"),
			progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionOnCompletion(func() { _, _ = io.WriteString(p.w, "\n") }),
		)
	}
	if pr.Counts.Examined > p.bar.GetMax() {
		p.bar.ChangeMax(pr.Counts.Examined)
	}
	_ = p.bar.Set(pr.Counts.Examined)
}

// finish completes the current bar, if any.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
