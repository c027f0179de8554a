package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/replay"
)

// laneConfig is what the lane's replay function is configured with, as
// dlq reads it (lambda:GetFunctionConfiguration): its environment, and in
// it the route of the lane's DLQ, which names the lane's business key, its
// payload hash and whether its consumer writes completion records, and
// CONSUMER_NAME, the consumer's idempotency scope. dlq knows nothing of a
// lane's messages but what this says.
type laneConfig struct {
	function string            // the function read; "" when none was
	env      map[string]string // its environment, a copy; empty when none was read
	// route is its route of the lane's DLQ, or its only route when none
	// reads that DLQ (an operator's --dlq-url on a queue of the same
	// lane); zero when it has neither.
	route replay.Route
	found bool // route is set
	named bool // route reads the lane's DLQ: its name is the lane's route name
}

// consumer is the lane's CONSUMER_NAME, "" when unknown.
func (c laneConfig) consumer() string { return c.env[settings.ConsumerName.Env] }

// laneConfig reads the configuration of the lane's replay function: fn
// when set is true ("" for none), else the lane's ReplayFunctionName
// output (none when the lane has no such output). dlq is the lane's DLQ
// URL, "" when unknown. A malformed REPLAY_ROUTES is left for
// handler.LoadConfig to report: the route is then not found.
func (s *session) laneConfig(ctx context.Context, fn string, set bool, dlq string) (laneConfig, error) {
	if !set {
		fn = s.res.optional(outReplayFunction)
	}
	c := laneConfig{function: fn, env: map[string]string{}}
	if fn == "" {
		return c, nil
	}
	got, err := s.functionEnv(ctx, fn)
	if err != nil {
		return c, fmt.Errorf("read the configuration of replay function %s (lambda:GetFunctionConfiguration): %w", fn, err)
	}
	c.env = maps.Clone(got)
	if c.env == nil {
		c.env = map[string]string{}
	}
	var routes []replay.Route
	_ = json.Unmarshal([]byte(c.env[settings.ReplayRoutes.Env]), &routes)
	switch i := slices.IndexFunc(routes, func(r replay.Route) bool { return dlq != "" && r.DLQURL == dlq }); {
	case i >= 0:
		c.route, c.found, c.named = routes[i], true, true
	case len(routes) == 1:
		c.route, c.found = routes[0], true
	}
	return c, nil
}

// checkConsumer refuses a --consumer that is no consumer's scope: empty,
// too long, or with the ledger's key separator in it (keys are
// "<consumer>#<key>").
func checkConsumer(v string) error {
	if settings.ConsumerName.Check(v) != nil {
		return usageError("--consumer %q: want the consumer's name, %s (its records' keys are %s)", v, settings.ConsumerName.Want(), settings.ScopedKey("<consumer>", "<key>"))
	}
	return nil
}

// keysOf returns the values of --key and of its alias --order, together.
func keysOf(keys, orders []string) []string { return slices.Concat(keys, orders) }
