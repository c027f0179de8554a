package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// progress shows how a waiting phase of the demo is going. On a terminal it
// redraws one line in place (carriage returns) on every poll; anywhere else
// (a file, a CI log) it writes one line per phase, when the phase ends, so
// that logs do not fill with redraws.
type progress struct {
	w        io.Writer
	terminal bool
}

// newProgress returns a progress for w, redrawing only when w is a terminal.
func newProgress(w io.Writer) progress {
	f, ok := w.(*os.File)
	return progress{w: w, terminal: ok && term.IsTerminal(int(f.Fd()))}
}

func (p progress) line(what, state string, elapsed time.Duration) string {
	return fmt.Sprintf("      %-52s %-40s %4.0fs", what, state, elapsed.Seconds())
}

// poll reports the state of a phase still under way.
func (p progress) poll(what, state string, elapsed time.Duration) {
	if p.terminal {
		fmt.Fprint(p.w, "\r"+p.line(what, state, elapsed))
	}
}

// end reports the end of a phase, done or not.
func (p progress) end(what, state string, elapsed time.Duration, done bool) {
	verdict := "  done"
	if !done {
		verdict = "  timed out"
	}
	if p.terminal {
		fmt.Fprint(p.w, "\r"+p.line(what, state, elapsed)+verdict+"\n")
		return
	}
	fmt.Fprintln(p.w, p.line(what, state, elapsed)+verdict)
}
