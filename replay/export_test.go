package replay

// The names the external tests use of what the package keeps unexported.
const (
	MaxBatch              = maxBatch
	DefaultDecisionWindow = defaultDecisionWindow
	Namespace             = namespace
	UnrecordedRuns        = unrecordedRuns
)

var (
	ErrExpression   = errExpression
	WriteEMF        = writeEMF
	DeduplicationID = deduplicationID
)
