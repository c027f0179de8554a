package emfline

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Writer writes EMF lines to an io.Writer (the function's stdout in
// Lambda, where CloudWatch Logs reads them). It is safe for concurrent use:
// the lines of one [Line] are written together, each in one Write call, and
// never interleave with another's.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, now: time.Now} }

// Write writes l: one line per MaxMetrics of its metrics, each with all of
// its dimensions and properties, at l.Timestamp or, when that is zero, now.
// A line outside the bounds is an error wrapping [ErrInvalid], and nothing
// of it is written; an error of the io.Writer is returned wrapped.
func (w *Writer) Write(l Line) error {
	if l.Timestamp.IsZero() {
		l.Timestamp = w.now()
	}
	lines, err := encode(l)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range lines {
		if _, err := w.w.Write(b); err != nil {
			return fmt.Errorf("write an EMF line in %s: %w", l.Namespace, err)
		}
	}
	return nil
}
