package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/replay"
)

// The source and detail type of the EventBridge scheduled event that invokes
// the function on its schedule.
const (
	ScheduledSource     = "aws.events"
	ScheduledDetailType = "Scheduled Event"
)

// OnDemand is the payload of an operator's invocation, every field optional:
//
//	{"dryRun":true,"max":10,"rate":5,"routes":["orders"],
//	 "filter":{"reasons":["dead-lettered"],"olderThan":"1h","keys":["ORD-1"]}}
//
// The filter's "orderIds" is the deprecated name of its "keys" (see
// replay.Filter), still accepted.
type OnDemand struct {
	DryRun bool          `json:"dryRun"`
	Max    int           `json:"max"`    // 0: MAX_PER_RUN; never above it
	Rate   float64       `json:"rate"`   // 0: RATE; never above it
	Filter replay.Filter `json:"filter"` // the zero value selects all
	Routes []string      `json:"routes"` // names of configured routes; none: every route
}

// ParseInvocation turns the payload of an invocation into the request of a
// run, or an error when nothing must run:
//
//   - an EventBridge scheduled event (source aws.events, detail-type
//     Scheduled Event): every configured route, with the configured
//     defaults;
//   - an [OnDemand] request. Unknown fields are an error, so that a misspelt
//     "dryRun" never turns into a real run; so are unknown routes, an
//     invalid request (replay.Request.Validate) and a max or a rate above
//     the configured caps ([Config.WithinCaps]: refused, not clamped).
//
// An empty payload, null, anything but one JSON object, and an event of
// another source or detail type are errors too. ParseInvocation is pure.
func (c Config) ParseInvocation(payload []byte) (replay.Request, error) {
	trimmed := bytes.Trim(payload, " \t\r\n") // JSON's whitespace only: "\f{}" is no JSON object
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return replay.Request{}, errors.New(`empty payload: send an EventBridge scheduled event or a request such as {"dryRun":true}`)
	}
	// Both shapes are JSON objects; "source" and "detail-type" tell an
	// EventBridge event from an on-demand request, which has neither.
	var event events.EventBridgeEvent
	if err := json.Unmarshal(trimmed, &event); err != nil {
		return replay.Request{}, fmt.Errorf("payload is not a valid JSON object: %w", err)
	}
	if event.Source != "" || event.DetailType != "" {
		if event.Source != ScheduledSource || event.DetailType != ScheduledDetailType {
			return replay.Request{}, fmt.Errorf("unsupported event: source %q, detail-type %q (want %s, %s)",
				event.Source, event.DetailType, ScheduledSource, ScheduledDetailType)
		}
		return replay.Request{Routes: c.Routes}, nil
	}
	if err := exactKeys(trimmed, "dryRun", "max", "rate", "filter", "routes"); err != nil {
		return replay.Request{}, fmt.Errorf("on-demand request: %w", err)
	}
	var in OnDemand
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return replay.Request{}, fmt.Errorf("on-demand request: %w", err)
	}
	routes, err := c.routes(in.Routes)
	if err != nil {
		return replay.Request{}, fmt.Errorf("on-demand request: %w", err)
	}
	req := replay.Request{DryRun: in.DryRun, Max: in.Max, Rate: in.Rate, Filter: in.Filter, Routes: routes}
	if err := errors.Join(req.Validate(), c.WithinCaps(req)); err != nil {
		return replay.Request{}, fmt.Errorf("on-demand request: %w", err)
	}
	return req, nil
}

// exactKeys checks that the JSON object doc (and its "filter" object) uses
// only the keys named, spelt exactly and each at most once: encoding/json
// matches keys without regard to case and keeps the last of two, so
// {"dryRun":true,"DryRun":false} would otherwise be a real run.
func exactKeys(doc []byte, keys ...string) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read a key: %w", err)
		}
		key, _ := t.(string)
		if !slices.Contains(keys, key) {
			return fmt.Errorf("unknown field %q (fields are %v, spelt exactly)", key, keys)
		}
		if seen[key] {
			return fmt.Errorf("field %q given twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
		if key == "filter" && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if err := exactKeys(v, "reasons", "olderThan", "keys", "orderIds"); err != nil {
				return fmt.Errorf("filter: %w", err)
			}
		}
	}
	return nil
}

// routes returns the configured routes of names, in their order; every
// route when names is empty.
func (c Config) routes(names []string) ([]replay.Route, error) {
	if len(names) == 0 {
		return c.Routes, nil
	}
	var (
		routes  []replay.Route
		unknown []string
	)
	for _, name := range names {
		i := slices.IndexFunc(c.Routes, func(r replay.Route) bool { return r.Name == name })
		if i < 0 {
			unknown = append(unknown, name)
			continue
		}
		routes = append(routes, c.Routes[i])
	}
	if len(unknown) > 0 {
		configured := make([]string, len(c.Routes))
		for i, r := range c.Routes {
			configured[i] = r.Name
		}
		return nil, fmt.Errorf("unknown routes %q (configured: %q)", unknown, configured)
	}
	return routes, nil
}
