package emf

// The names the external tests use of what the package keeps unexported.
type (
	Tally  = tally
	Counts = totals
)

var NewContext = newContext

// Write writes counts as the Recorder does after an invocation.
func (r *Recorder) Write(c Counts) error { return r.write(c) }
