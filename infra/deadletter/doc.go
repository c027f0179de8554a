// Package deadletter provides [Lane], a CDK construct that bundles the
// dead-letter handling of one SQS source queue consumed by a Lambda
// function: the source, dead-letter, invalid and parking queues; the
// idempotency and ledger tables; the consumer's event source mapping, which
// reports batch item failures; the scheduled replay function; alarms to an
// SNS topic, and a dashboard. Grants are least privilege, the resources pass
// cdk-nag's AwsSolutions checks, and none gets a hand-written physical name.
// The team may bring its consumer (any runtime), source queue, DLQ and
// alarm topic.
//
// A lane declares a stack output per settings key and tags its resources
// settings.TagLane=<name>, by which `dlq --lane <name>` finds it.
// [Lane].GrantOperator gives the on-call role what the runbook has it do.
// [NewLane] checks its [LaneProps] with [LaneProps.Validate] and panics with
// that error, as CDK constructs do.
//
// What each resource holds, and why: docs/PACKAGES.md#deadletter and
// infra/README.md.
package deadletter
