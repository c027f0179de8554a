package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/internal/sample/tax"
	"github.com/homingdlq/homing/payload"
)

// Lane is what the simulated lane is, beyond its queues: where its bodies
// carry the business key, and whether its consumer writes homing's
// completion records. The zero Lane is the sample's orders lane: the key at
// orderId, records written.
type Lane struct {
	// RefKey: the producer carries the business key at order.ref
	// (refKeyExpr), beside a decoy orderId of another value, and the
	// route's Key and PayloadHash are expressions over that shape. A
	// toolkit that read orderId anyway would decide every message by the
	// decoy: no completion would ever match, nothing would be removed as
	// applied, filters would select nothing.
	RefKey bool
	// NoRecords: the consumer writes no completion records (a consumer in
	// another runtime that relies on the downstream's deduplication): the
	// route says Records false, and its effect is once only because the
	// service deduplicates (New refuses a Counting service).
	NoRecords bool
	// Groups, on a FIFO lane, has the consumer keep each message group in
	// publication order through failure (batch.Options.Groups, package
	// hold), and the route say so (replay.Route.Groups): hold.KeepHeld
	// keeps a group behind a head that can never succeed until the
	// operator releases it, hold.Skip lets it go on. "": off (a FIFO
	// batch keeps order within itself only). See groups.go.
	Groups hold.OnError
}

// refKeySeed reports whether seed's lane carries its key at order.ref (one
// seed in four, of both parities, so of both service modes).
func refKeySeed(seed uint64) bool { return seed/2%4 == 1 }

// noRecordsSeed reports whether seed's consumer writes no completion
// records (one seed in four; some of them keyed at order.ref too).
func noRecordsSeed(seed uint64) bool { return seed/3%4 == 2 }

// refKeyExpr is the business key of a RefKey lane.
const refKeyExpr = "order.ref"

// refHashPart is the sample's HashPart with the key read at order.ref: over
// a RefKey body it selects the same JSON value as HashPart does over the
// body the adapter hands to the sample's handler (see Lane.sample), so the
// engine computes, from the route's expression alone, the hash the
// consumer's records hold.
var refHashPart = func() string {
	const from, to = "orderId: orderId", "orderId: " + refKeyExpr
	if strings.Count(invoicing.HashPart, from) != 1 {
		panic("sim: invoicing.HashPart no longer reads " + from)
	}
	return strings.Replace(invoicing.HashPart, from, to, 1)
}()

// The compiled keys of the two shapes.
var (
	sampleKey = mustKey(invoicing.KeyExpr)
	refKey    = mustKey(refKeyExpr)
)

func mustKey(expr string) payload.Key {
	k, err := payload.NewKey(expr)
	if err != nil {
		panic(err) // as regexp.MustCompile: a constant expression that compiles
	}
	return k
}

// keyExpr is the route's Key.
func (l Lane) keyExpr() string {
	if l.RefKey {
		return refKeyExpr
	}
	return invoicing.KeyExpr
}

// hashPart is the route's PayloadHash.
func (l Lane) hashPart() string {
	if l.RefKey {
		return refHashPart
	}
	return invoicing.HashPart
}

// records is the route's Records.
func (l Lane) records() bool { return !l.NoRecords }

// keyOf returns the business key of a body as the engine reads it on the
// lane's route, "" when it has none.
func (l Lane) keyOf(body string) string {
	k := sampleKey
	if l.RefKey {
		k = refKey
	}
	id, _ := k.Of([]byte(body))
	return id
}

// sample returns body in the sample's order.created shape, as the
// simulation's adapter hands it to the sample's handler: on a RefKey lane
// the value at order.ref becomes orderId, and the decoy orderId is dropped
// (it never decides); a body that is not a JSON object is left as it is, for
// the handler to refuse. On the sample's lane it is body.
//
// Why an adapter: the sample's invoicing.Handler parses order.created and
// keys its idempotency records by the orderId field, and the sample is not
// the simulation's to change. Mapping the shape in front of it keeps the
// real handler and receiver under test, and what the records and the
// engine see is the expression's key: the record of a message is
// "<consumer>#<its order.ref>", which is what the route's Key evaluates.
func (l Lane) sample(body string) string {
	if !l.RefKey {
		return body
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil || m == nil {
		return body
	}
	delete(m, "orderId")
	var o map[string]json.RawMessage
	if raw, ok := m["order"]; ok && json.Unmarshal(raw, &o) == nil {
		if ref, ok := o["ref"]; ok {
			m["orderId"] = ref
		}
	}
	delete(m, "order")
	b, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return string(b)
}

// orderOf returns the business key of a body as the consumer reads it, or
// as the engine does when the consumer cannot read it.
func (l Lane) orderOf(body string) string {
	if o, err := order.Parse([]byte(l.sample(body)), 0); err == nil {
		return o.OrderID
	}
	return l.keyOf(body)
}

// describe fills the fields of p derived from its body, as the lane's
// consumer reads it: its key, the payload hash its records hold (the
// route's hash of the body, as the lane's consumer writes it) and its tax
// request.
func (l Lane) describe(p *Publication) {
	if o, err := order.Parse([]byte(l.sample(p.Body)), 0); err == nil {
		p.OrderID = o.OrderID
		p.Request = requestJSON(o)
		if sum, err := l.hash([]byte(p.Body)); err == nil {
			p.Hash = sum
		}
	}
}

// hash is the lane's payload hash of a body: the route's part expression
// over the body as the producer wrote it, which the consumer writes too.
func (l Lane) hash(body []byte) (string, error) {
	h, err := payload.NewHash(l.hashPart())
	if err != nil {
		return "", err
	}
	return h.Sum(body)
}

// handler is the lane's consumer: the sample's handler (over the
// idempotent receiver), or the recordless double, behind the adapter of
// the body's shape.
func (l Lane) handler(h *invoicing.Handler, inv invoicing.Invoicer) batch.Handler {
	if !l.NoRecords {
		if l.RefKey {
			h.Shape, h.Hash = l.sample, l.hash
		}
		return h.Handle
	}
	next := (&recordless{Invoicer: inv, MaxBytes: h.MaxBytes}).Handle
	if !l.RefKey {
		return next
	}
	return func(ctx context.Context, msg events.SQSMessage) error {
		msg.Body = l.sample(msg.Body)
		return next(ctx, msg)
	}
}

// recordless is a consumer that writes no completion records, as one in
// another runtime may: it validates the order as the sample does and calls
// the tax service with the order's Idempotency-Key, relying on the service
// to deduplicate a repeated key (the only thing that makes its effect once).
// It cannot tell a conflicting payload from a duplicate: the service
// answers both with the first invoice.
type recordless struct {
	Invoicer invoicing.Invoicer
	MaxBytes int
}

// Handle is a batch.Handler.
func (r *recordless) Handle(ctx context.Context, msg events.SQSMessage) error {
	o, err := order.Parse([]byte(msg.Body), r.MaxBytes)
	if err != nil {
		return err
	}
	batch.Annotate(ctx, slog.String("orderId", o.OrderID))
	inv, err := r.Invoicer.IssueInvoice(ctx, invoicing.Request(o))
	var rejected *tax.RejectedError
	switch {
	case errors.As(err, &rejected):
		return order.Invalid(order.ReasonRejectedByTaxService, rejected.Detail)
	case err != nil:
		return fmt.Errorf("invoice %s: %w", o.OrderID, err)
	}
	batch.Annotate(ctx, slog.String("invoiceNumber", inv.Number))
	return nil
}
