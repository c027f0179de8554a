package deadletter

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/payload"
)

// ConsumerRecords is a lane's declared choice: does its consumer write
// homing's completion records (the idempotency table's records under
// "<CONSUMER_NAME>#<key>" that the replay reads)? [ConsumerProps].Records
// takes one of the two constants; the zero value is refused at synth.
type ConsumerRecords string

const (
	// ConsumerWritesRecords: the consumer writes the records (a Go consumer
	// with the idempotency package does). The replay's canary gate, breaker
	// and already-applied removal read them. The lane needs a Key.
	ConsumerWritesRecords ConsumerRecords = "writes-records"
	// ConsumerWritesNoRecords: the consumer writes none. The canary and
	// the removal are off and the run summary says so; the breaker counts
	// the replays that come back to the DLQ instead.
	ConsumerWritesNoRecords ConsumerRecords = "no-records"
)

// Variables of the consumer that carry the route's contract, so that a
// consumer in any runtime reads the key and the payload hash the replay
// uses. The lane sets each only when its prop is set. Declared once, in
// package settings.
var (
	// envKeyExpression is ConsumerProps.Key.
	envKeyExpression = settings.KeyExpression.Env
	// envPayloadHashExpression is ConsumerProps.PayloadHash.
	envPayloadHashExpression = settings.PayloadHashExpression.Env
)

// MaxExpressionBytes bounds Key and PayloadHash: they travel in
// REPLAY_ROUTES and a Lambda environment of 4 KB in all.
const MaxExpressionBytes = 256

// records reports whether the lane's consumer writes the records.
func (c ConsumerRecords) records() bool { return c == ConsumerWritesRecords }

// validateContract reports the invalid contract props of r.
func (r consumerResolved) validateContract() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("Consumer."+format, args...)) }
	switch r.records {
	case ConsumerWritesRecords, ConsumerWritesNoRecords:
	case "":
		bad("Records is required: deadletter.ConsumerWritesRecords if the consumer writes homing's completion records (a Go consumer with the idempotency package), deadletter.ConsumerWritesNoRecords if it does not (the replay's canary and already-applied removal are then off)")
	default:
		bad("Records is %q, want deadletter.ConsumerWritesRecords (%q) or deadletter.ConsumerWritesNoRecords (%q)", string(r.records), ConsumerWritesRecords, ConsumerWritesNoRecords)
	}
	for _, f := range [...]struct {
		name string
		expr *string
	}{{"Key", r.key}, {"PayloadHash", r.payloadHash}} {
		if f.expr == nil || *awscdk.Token_IsUnresolved(jsii.String(*f.expr)) {
			continue
		}
		if err := checkExpression(*f.expr); err != nil {
			bad("%s is %q: %v", f.name, *f.expr, err)
		}
	}
	if r.records.records() && r.key == nil {
		bad("Key is required with ConsumerWritesRecords: the replay finds the consumer's records under <Consumer.Name>#<key>; set the JMESPath expression of the body's business key (\"orderId\", say), or declare ConsumerWritesNoRecords")
	}
	return errs
}

// checkExpression reports why expr is not a JMESPath expression the replay
// can evaluate, or nil.
func checkExpression(expr string) error {
	switch {
	case strings.TrimSpace(expr) == "":
		return fmt.Errorf("want a JMESPath expression (unset means none)")
	case len(expr) > MaxExpressionBytes:
		return fmt.Errorf("%d bytes, want at most %d", len(expr), MaxExpressionBytes)
	}
	// The replay's own compiler, so that synth refuses exactly what the
	// replay would (payload adds rules to JMESPath's: see its doc).
	if _, err := payload.NewKey(expr); err != nil {
		return fmt.Errorf("not a JMESPath expression the replay evaluates: %w", err)
	}
	return nil
}

// contractEnvironment are the consumer variables of the set contract props.
func (r consumerResolved) contractEnvironment() map[string]*string {
	env := map[string]*string{}
	if r.key != nil {
		env[envKeyExpression] = r.key
	}
	if r.payloadHash != nil {
		env[envPayloadHashExpression] = r.payloadHash
	}
	return env
}

// route is the lane's one route of REPLAY_ROUTES, in replay.Route's JSON.
func (l *lane) route() map[string]any {
	c := l.props.consumer
	route := map[string]any{
		"name":        l.props.replay.routeName,
		"dlqUrl":      l.deadLetter.QueueUrl(),
		"sourceUrl":   l.source.QueueUrl(),
		"parkingUrl":  l.parking.QueueUrl(),
		"key":         deref(c.key),
		"payloadHash": deref(c.payloadHash),
		"records":     c.records.records(),
	}
	return route
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
