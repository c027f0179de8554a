// Package replayconfig is the configuration of a replay run as the replay
// Lambda reads it from its environment (REPLAY_ROUTES, LEDGER_TABLE,
// MAX_REPLAYS, BACKOFF_BASE, ...): [Load] parses and validates it, and
// [Config.Options] and [Config.Health] turn it into the engine's options.
// The replay function and the dlq CLI share it, so that an on-demand run
// from the CLI decides as the scheduled one does (the CLI reads the
// function's environment with lambda:GetFunctionConfiguration).
package replayconfig
