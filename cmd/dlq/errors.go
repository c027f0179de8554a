package main

import (
	"errors"
	"fmt"
)

// Exit codes of dlq, documented in the root command's help.
const (
	exitOK         = 0
	exitError      = 1 // an operational error: an AWS call failed, a resource is missing
	exitUsage      = 2 // bad flags or arguments
	exitRefused    = 3 // refused: a source queue without --force, the confirmation was declined, or the group to release is not parked
	exitIncomplete = 4 // replay: the run hit errors, or closed gates held every route; groups release: still in progress
)

// codedError is an error with the exit code it ends dlq with. err is the
// one line dlq prints; cause, when set, is what an underlying library
// said (the AWS SDK's chain of errors), printed under it with --verbose.
type codedError struct {
	code  int
	err   error
	cause error
}

func (e *codedError) Error() string { return e.err.Error() }

// Unwrap returns err and, when set, cause.
func (e *codedError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.err}
	}
	return []error{e.err, e.cause}
}

func usageError(format string, args ...any) error {
	return &codedError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func refused(format string, args ...any) error {
	return &codedError{code: exitRefused, err: fmt.Errorf(format, args...)}
}

// typed gives an error without an exit code the operational one.
func typed(err error) error {
	var e *codedError
	if err == nil || errors.As(err, &e) {
		return err
	}
	return &codedError{code: exitError, err: err}
}

// exitCodesHelp is the exit-code table of the root command's help.
const exitCodesHelp = `Exit codes:
  0  ok
  1  operational error: an AWS call failed, a resource or the outputs file is missing or malformed,
     or the lane's resources name another destination than its replay function
  2  usage error: bad flags or arguments
  3  refused: the queue is a source queue (it has a RedrivePolicy) and --force was not given,
     a replay that moves messages or a release was not confirmed (declined, or no terminal and
     no --yes), or the group to release is not parked
  4  replay: the run finished but some messages failed (errors > 0, or a route stopped
     on an error), or closed gates held every route so nothing could move; the summary is
     printed all the same. groups release: the release is still in progress when --wait
     ends (the consumer has not applied every record sent back); run it again`
