package main

import (
	"fmt"
	"io"

	"github.com/schollz/progressbar/v3"

	"github.com/homingdlq/homing/internal/printable"
	"github.com/homingdlq/homing/replay"
)

// progress shows a replay run's progress. On a terminal it draws one bar
// per route, messages examined of the DLQ's depth at the start, redrawn in
// place. Anywhere else (a file, a pipe, a CI log) it writes one line per
// route when the route's pass ends, with no carriage returns.
type progress struct {
	w     io.Writer
	on    bool // a terminal
	bar   *progressbar.ProgressBar
	route string
	last  *replay.Progress // off a terminal: the current route's latest progress
}

func newProgress(w io.Writer, terminal bool) *progress { return &progress{w: w, on: terminal} }

// progress is a replay run's progress on stderr: on a terminal, the bar
// on stderr as given (it redraws with carriage returns), the route shown
// by printable.String; anywhere else, the lines through the printable
// writer.
func (a *app) progress() *progress {
	if a.isTerminal(a.barOut) {
		return newProgress(a.barOut, true)
	}
	return newProgress(a.stderr, false)
}

// update is the engine's OnProgress hook.
func (p *progress) update(pr replay.Progress) {
	if !p.on {
		if p.last != nil && p.last.Route != pr.Route {
			p.finish()
		}
		p.last = &pr
		return
	}
	if p.bar == nil || p.route != pr.Route {
		p.finish()
		p.route = pr.Route
		p.bar = progressbar.NewOptions(max(pr.Depth, 1),
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription("replay "+printable.String(pr.Route)),
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

// finish completes the current route: its bar, or its one line.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
	if p.last != nil {
		c := p.last.Counts
		_, _ = fmt.Fprintf(p.w, "route %s: examined %d of %d (the DLQ's depth at the start); replayed %d, parked %d, delayed %d, errors %d\n",
			printable.String(p.last.Route), c.Examined, p.last.Depth, c.Replayed, c.ParkedTotal(), c.Delayed, c.Errors)
		p.last = nil
	}
}
