// Package settings declares, once, what the functions, the operator CLI
// (cmd/dlq) and the CDK construct (infra/deadletter) must agree on: each
// environment setting (its name, default, bounds and one line of doc, as a
// [String], [Int], [Float] or [Duration] declaration with its Check), the
// stack output keys and tags by which `dlq` finds a lane, and the key
// formats ([ScopedKey]) and the FIFO suffix ([IsFIFO]). A function reads its
// settings through a [Reader] and validates them with each declaration's
// Check; the CLI takes its flag defaults and bounds from the declarations,
// the construct its prop defaults and synth-time bounds. docs/CONFIGURATION.md's
// tables are generated from [Consumer] and [Replay] (a test
// fails when they drift).
//
// It imports nothing but the standard library, so the CDK module and an
// outside team's code can read it without pulling in a runtime.
package settings
