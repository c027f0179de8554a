// Package handler is the replay function's Lambda side: its configuration,
// read from the environment as package settings declares it ([LoadConfig]),
// the parsing of an invocation into a [replay.Request]
// ([Config.ParseInvocation]: an EventBridge scheduled event or an operator's
// on-demand request), and the [Handler] that runs the engine and returns the
// run summary.
//
// The engine (package replay) knows nothing of Lambda; this package holds
// what does, so that functions/replay only wires: load the configuration,
// build the clients, [New], lambda.Start. It imports nothing of the sample
// domain: what the sample adds (the payload hash of its orders) comes in
// through [Deps].
package handler
