// Package emfline writes CloudWatch Embedded Metric Format (EMF) lines:
// JSON log lines that CloudWatch Logs turns into metrics. A [Writer] writes
// a [Line] in one Write call, split over several lines when it holds more
// metrics than one may; a name or a value CloudWatch would reject is an
// error wrapping [ErrInvalid]. Package emf (a consumer's metrics) and the
// replay's summary write through it.
package emfline
