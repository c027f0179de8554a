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
	"github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/sample/order"
	"github.com/homingdlq/homing/internal/sample/tax"
	"github.com/homingdlq/homing/payload"
)

// Lane is what the simulated lane is, beyond its queues: where its bodies
// carry the business key and what it looks like, and whether its consumer
// writes homing's completion records. The zero Lane is the sample's orders
// lane: the key at orderId, records written. At most one of RefKey,
// LongKey and IntKey is set.
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
	// LongKey: the keys at orderId are ARNs or URLs of 130 to 600 bytes,
	// past the replay's 128-byte bound on an id it embeds as is
	// (replay.MaxKeyID) and the sample's orderId grammar; the consumer
	// (longKeyed) keys its records and its Idempotency-Key by the whole
	// key, which the receiver hashes where a record cannot hold it. The
	// canary's sample, the breaker and the removal of dead letters already
	// applied must work as they do for short keys.
	LongKey bool
	// IntKey: the producer writes orderId as a JSON number near 2^53
	// (docs/CONTRACT.md): an integer of at most 2^53 in magnitude is the
	// key, its decimal text; one past it (9007199254740993) is no key, and
	// the consumer refuses the order as missing-order-id, though a double
	// reads it as 9007199254740992. An adapter hands the sample's handler
	// the key as a string (Lane.sample); the route hashes to_string(orderId).
	IntKey bool
	// Groups, on a FIFO lane, has the consumer keep each message group in
	// publication order through failure (batch.Options.Groups, package
	// fifo): fifo.Hold parks a group behind a head that can never succeed
	// until the operator releases it, fifo.Skip lets it go on. "": off (a
	// FIFO batch keeps order within itself only). See groups.go.
	Groups fifo.OnError
}

// refKeySeed reports whether seed's lane carries its key at order.ref (one
// seed in four, of both parities, so of both service modes).
func refKeySeed(seed uint64) bool { return seed/2%4 == 1 }

// longKeySeed reports whether seed's lane has long keys (LongKey: one seed
// in eight, of both parities), intKeySeed whether its keys are integers
// (IntKey: one in eight); never with refKeySeed.
func longKeySeed(seed uint64) bool { return seed/2%8 == 2 }
func intKeySeed(seed uint64) bool  { return seed/2%8 == 6 }

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

// intHashPart is the sample's HashPart with the key as a string: over an
// IntKey body (orderId 9007199254740992) it selects the value HashPart
// selects over the body the adapter hands the sample's handler (orderId
// "9007199254740992").
var intHashPart = func() string {
	const from, to = "orderId: orderId", "orderId: to_string(orderId)"
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
	switch {
	case l.RefKey:
		return refHashPart
	case l.IntKey:
		return intHashPart
	}
	return invoicing.HashPart
}

// check reports a Lane the simulation cannot run.
func (l Lane) check() error {
	n := 0
	for _, b := range []bool{l.RefKey, l.LongKey, l.IntKey} {
		if b {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("lane %+v: at most one of RefKey, LongKey and IntKey", l)
	}
	return nil
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
// (it never decides); on an IntKey lane a number at orderId becomes its key
// as a string, or is dropped when it is no key (past 2^53: the handler
// says missing-order-id); a body that is not a JSON object is left as it
// is, for the handler to refuse. On the other lanes it is body.
//
// Why an adapter: the sample's invoicing.Handler parses order.created and
// keys its idempotency records by the orderId field, and the sample is not
// the simulation's to change. Mapping the shape in front of it keeps the
// real handler and receiver under test, and what the records and the
// engine see is the expression's key: the record of a message is
// "<consumer>#<its order.ref>", which is what the route's Key evaluates.
func (l Lane) sample(body string) string {
	if !l.RefKey && !l.IntKey {
		return body
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil || m == nil {
		return body
	}
	if l.IntKey {
		raw := strings.TrimLeft(string(m["orderId"]), " \t\r\n")
		if raw == "" || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return body // not a number: the handler reads it as it is
		}
		if key, ok := sampleKey.Of([]byte(body)); ok {
			m["orderId"], _ = json.Marshal(key)
		} else {
			delete(m, "orderId")
		}
		b, err := json.Marshal(m)
		if err != nil {
			return body
		}
		return string(b)
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

// read parses a body in the sample's shape (see sample) as the lane's
// consumer does: the sample's order.Parse, except that on a LongKey lane a
// key over the sample's orderId bound is the order's key, the rest of the
// order validated as the sample does (with a short stand-in for the key,
// and the limit on the body's size kept).
func (l Lane) read(body string, maxBytes int) (order.Order, error) {
	key, ok := sampleKey.Of([]byte(body))
	if !l.LongKey || !ok || len(key) <= order.MaxOrderIDBytes {
		return order.Parse([]byte(body), maxBytes)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return order.Parse([]byte(body), maxBytes)
	}
	m["orderId"] = json.RawMessage(`"LONG-KEY"`)
	stand, err := json.Marshal(m)
	if err != nil {
		return order.Parse([]byte(body), maxBytes)
	}
	if maxBytes <= 0 {
		maxBytes = order.DefaultMaxBytes
	}
	o, err := order.Parse(stand, max(1, maxBytes-(len(body)-len(stand))))
	if err != nil {
		return o, err
	}
	o.OrderID = key
	return o, nil
}

// parse is read of body as the lane's producer publishes it.
func (l Lane) parse(body string) (order.Order, error) { return l.read(l.sample(body), 0) }

// orderOf returns the business key of a body as the consumer reads it, or
// as the engine does when the consumer cannot read it.
func (l Lane) orderOf(body string) string {
	if o, err := l.parse(body); err == nil {
		return o.OrderID
	}
	return l.keyOf(body)
}

// describe fills the fields of p derived from its body, as the lane's
// consumer reads it: its key, the payload hash its records hold (the
// route's hash of the body, as the lane's consumer writes it) and its tax
// request.
func (l Lane) describe(p *Publication) {
	if o, err := l.parse(p.Body); err == nil {
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
// idempotent receiver), the long keys' double of it (longKeyed), or the
// recordless double, behind the adapter of the body's shape.
func (l Lane) handler(h *invoicing.Handler, inv invoicing.Invoicer) batch.Handler {
	if l.NoRecords {
		next := (&recordless{Invoicer: inv, MaxBytes: h.MaxBytes, lane: l}).Handle
		if !l.RefKey && !l.IntKey {
			return next
		}
		return func(ctx context.Context, msg events.SQSMessage) error {
			msg.Body = l.sample(msg.Body)
			return next(ctx, msg)
		}
	}
	if l.RefKey || l.IntKey {
		// The consumer reads the sample's shape and writes the hash the
		// route computes over the body as the producer wrote it.
		h.Shape, h.Hash = l.sample, l.hash
	}
	if l.LongKey {
		return longKeyed{h: h, lane: l}.Handle
	}
	return h.Handle
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
	lane     Lane // reads the key (Lane.read)
}

// Handle is a batch.Handler.
func (r *recordless) Handle(ctx context.Context, msg events.SQSMessage) error {
	o, err := r.lane.read(msg.Body, r.MaxBytes)
	if err != nil {
		return err
	}
	batch.Annotate(ctx, slog.String("orderId", clip(o.OrderID, 60)))
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

// longKeyed is the consumer of a LongKey lane: the sample's handler as an
// adopter whose keys are ARNs or URLs writes it. It validates the order as
// the sample does, save the orderId grammar's 128-byte bound (the
// sample's, not the lane's: Lane.read), and keys its idempotency record
// and the tax request's Idempotency-Key by the whole key, as the route's
// Key reads it; the receiver hashes a key its record cannot hold
// (idempotency.Key). It hashes the body as the sample does.
type longKeyed struct {
	h    *invoicing.Handler
	lane Lane
}

// Handle is a batch.Handler, as invoicing.Handler.Handle.
func (k longKeyed) Handle(ctx context.Context, msg events.SQSMessage) error {
	o, err := k.lane.read(msg.Body, k.h.MaxBytes)
	if err != nil {
		return err
	}
	batch.Annotate(ctx, slog.String("orderId", clip(o.OrderID, 60)))
	hash, ok := invoicing.PayloadHash(msg.Body)
	if !ok {
		return order.Invalid(order.ReasonMalformedJSON, "not I-JSON, so not hashed")
	}
	var resolver idempotency.Resolver
	if k.h.Lookup != nil {
		resolver = idempotency.ResolverFunc(func(ctx context.Context, key string) (string, bool, error) {
			inv, applied, err := k.h.Lookup.LookupInvoice(ctx, key)
			return inv.Number, applied, err
		})
	}
	out, err := k.h.Receiver.DoResolving(ctx, o.OrderID, hash, resolver, func(ctx context.Context) (string, error) {
		inv, err := k.h.Invoicer.IssueInvoice(ctx, invoicing.Request(o))
		if err != nil {
			return "", err
		}
		return inv.Number, nil
	})
	var rejected *tax.RejectedError
	switch {
	case errors.Is(err, idempotency.ErrConflict):
		return order.Invalid(order.ReasonConflictingDuplicate, "the key was invoiced before with a different payload")
	case errors.As(err, &rejected):
		return order.Invalid(order.ReasonRejectedByTaxService, rejected.Detail)
	case err != nil:
		return fmt.Errorf("invoice %s: %w", clip(o.OrderID, 60), err)
	}
	batch.Annotate(ctx, slog.String("invoiceNumber", out.Result), slog.Bool("duplicate", out.Duplicate))
	return nil
}
