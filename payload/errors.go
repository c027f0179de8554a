package payload

import "errors"

// Errors that [Hash.Sum] wraps. Their texts are stable.
var (
	// ErrNotJSON is a body that is not one I-JSON value (RFC 7493, as RFC
	// 8785 requires: valid UTF-8, no lone surrogate, no duplicate member
	// name, no number out of a double's range), or is larger than MaxBody.
	ErrNotJSON = errors.New("payload: body is not JSON")
	// ErrNoPart is a part expression that selects nothing in the body: its
	// result is null or absent, or its evaluation failed.
	ErrNoPart = errors.New("payload: hashed part is absent")
)

// MaxBody is the largest body Key and Hash evaluate, in bytes: SQS's largest
// message (1 MiB) plus 64 KiB of slack for an envelope. A larger body is no
// key and a hash error.
const MaxBody = 1<<20 + 64<<10
