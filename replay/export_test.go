package replay

// The names the external tests use of what the package keeps unexported.
const (
	AttributeName         = attributeName
	DefaultBackoffBase    = defaultBackoffBase
	DefaultBackoffMax     = defaultBackoffMax
	DefaultCanaryLimit    = defaultCanaryLimit
	DefaultMaxReplays     = defaultMaxReplays
	DefaultRate           = defaultRate
	MaxRate               = maxRate
	MaxWorkers            = maxWorkers
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

// Tally is tally, for the test of its bound.
var Tally = tally
