// Package settings declares, once, what the functions, the operator CLI
// (cmd/dlq) and the CDK construct (infra/deadletter) must agree on: each
// environment setting (its name, default, bounds and one line of doc), the
// stack output keys and tags by which `dlq` finds a lane, and the key
// formats. It imports nothing but the standard library, so the CDK module
// and an outside team's code can read it without pulling in a runtime.
package settings
