package idempotency

// The names the external tests use of what the package keeps unexported.
var (
	DefaultCompleteBudget = defaultCompleteBudget
	DefaultLifetime       = defaultLifetime
)
