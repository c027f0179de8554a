package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/sample/invoicing"
	"github.com/homingdlq/homing/internal/sample/order"
)

// Kind is what a publication is, as the producer meant it.
type Kind string

// The kinds of publications.
const (
	KindValid     Kind = "valid"     // a valid order, first publication
	KindDuplicate Kind = "duplicate" // the producer sent the same payload again
	KindConflict  Kind = "conflict"  // the same orderId with a different payload
	KindInvalid   Kind = "invalid"   // never valid: WantReason says why
	KindRejected  Kind = "rejected"  // valid to us, refused by the tax service (422)
	// KindPoison is valid to us, but the tax service answers 503 for that
	// order, and only that order, for ever: a transient failure of its own
	// that never ends. It is never invoiced and must end in the parking
	// queue, after a bounded number of replays.
	KindPoison Kind = "poison"
	// KindKiller is valid to us, but every invocation that runs it dies:
	// the tax call for that order never answers before the function's
	// timeout (a record that kills its invocation: a timeout, out of
	// memory). It is never invoiced and must end in the parking queue.
	KindKiller Kind = "killer"
)

// hopeless reports whether a publication of kind k can never succeed,
// whatever the trouble: poison and killer orders.
func (k Kind) hopeless() bool { return k == KindPoison || k == KindKiller }

// Publication is one message the producer sends to the source queue.
type Publication struct {
	N          int // index, in publishing order
	Kind       Kind
	OrderID    string // as the consumer reads it; "" when it has none
	Body       string
	Attrs      map[string]types.MessageAttributeValue
	Group      string        // FIFO MessageGroupId
	At         time.Duration // when, after the start
	WantReason string        // KindInvalid, KindRejected: the invalid queue's reason
	Of         int           // KindDuplicate, KindConflict: the publication it repeats; else -1
	Hash       string        // the payload hash the consumer's record holds for a body that parses (Lane.describe); "" otherwise
	Request    string        // the tax request of a body that parses, as JSON
	// Forge, when set, puts a well-formed replay metadata attribute on the
	// publication that the engine did not write (see forge.go): its
	// attributes are made when it is published.
	Forge *Forgery
}

// Mix is the share of each kind of publication; the rest are valid orders.
type Mix struct {
	Duplicate float64
	Conflict  float64
	Invalid   float64
	Rejected  float64
	Poison    float64 // valid orders the tax service fails for ever (KindPoison)
	// Forged is the share of valid orders published with replay metadata
	// the engine did not write (a copy of a replayed or parked message's,
	// or a forgery; see forge.go).
	Forged float64
}

// workload builds the publications of a run.
type workload struct {
	rng  *rand.Rand
	seed uint64
	lane Lane // the shape of the bodies
	pubs []*Publication
	ints int // the integer keys given (IntKey)
}

// generate returns n publications spread over window, sorted by time.
func generate(rng *rand.Rand, seed uint64, n int, window time.Duration, mix Mix, lane Lane) []*Publication {
	w := &workload{rng: rng, seed: seed, lane: lane}
	var valid []*Publication
	if lane.IntKey && n >= 4 {
		// The bound's own pairs: ±2^53 is a key, ±(2^53+1) none, though a
		// double reads both as one number. Each twin carries its order's
		// items: two publications a key and a hash could not tell apart.
		for _, sign := range []string{"", "-"} {
			at := time.Duration(rng.Int64N(int64(window)))
			o := w.validOrder(sign+"9007199254740992", 0)
			p := &Publication{Kind: KindValid, Body: w.encode(o), At: at, Of: -1}
			w.add(p)
			valid = append(valid, p)
			o.OrderID = sign + "9007199254740993"
			w.add(&Publication{Kind: KindInvalid, Body: w.encode(o), At: at + time.Duration(rng.Int64N(int64(30*time.Minute))),
				WantReason: string(order.ReasonMissingOrderID), Of: -1})
		}
	}
	for len(w.pubs) < n {
		at := time.Duration(rng.Int64N(int64(window)))
		r := rng.Float64()
		switch {
		case r < mix.Duplicate && len(valid) > 0:
			of := valid[rng.IntN(len(valid))]
			w.add(&Publication{Kind: KindDuplicate, OrderID: of.OrderID, Body: of.Body, At: of.At + time.Duration(rng.Int64N(int64(30*time.Minute))), Of: of.N})
		case r < mix.Duplicate+mix.Conflict && len(valid) > 0:
			of := valid[rng.IntN(len(valid))]
			w.add(&Publication{Kind: KindConflict, OrderID: of.OrderID, Body: w.validBody(of.OrderID, 99), At: of.At + time.Duration(rng.Int64N(int64(30*time.Minute))), Of: of.N})
		case r < mix.Duplicate+mix.Conflict+mix.Invalid:
			body, reason := w.invalidBody(len(w.pubs))
			w.add(&Publication{Kind: KindInvalid, Body: body, At: at, WantReason: reason, Of: -1})
		case r < mix.Duplicate+mix.Conflict+mix.Invalid+mix.Rejected:
			id := w.key(fmt.Sprintf("ORD-%d-%06d-REJECT", seed, len(w.pubs)))
			w.add(&Publication{Kind: KindRejected, OrderID: id, Body: w.validBody(id, 0), At: at, WantReason: string(order.ReasonRejectedByTaxService), Of: -1})
		case r < mix.Duplicate+mix.Conflict+mix.Invalid+mix.Rejected+mix.Poison:
			id := w.key(fmt.Sprintf("ORD-%d-%06d-%s", seed, len(w.pubs), poisonMark))
			w.add(&Publication{Kind: KindPoison, OrderID: id, Body: w.validBody(id, 0), At: at, Of: -1})
		default:
			id := w.key(fmt.Sprintf("ORD-%d-%06d", seed, len(w.pubs)))
			p := &Publication{Kind: KindValid, OrderID: id, Body: w.validBody(id, 0), At: at, Of: -1}
			if mix.Forged > 0 && rng.Float64() < mix.Forged {
				p.Forge = randomForgery(rng, at)
			}
			w.add(p)
			valid = append(valid, p)
		}
	}
	slices.SortStableFunc(w.pubs, func(a, b *Publication) int { return int(a.At - b.At) })
	old := make([]int, len(w.pubs))
	for i, p := range w.pubs {
		old[i] = p.N
	}
	renumber := map[int]int{}
	for i, p := range w.pubs {
		renumber[old[i]] = i
		p.N = i
	}
	killers := 0
	for _, p := range w.pubs {
		if p.Of >= 0 {
			p.Of = renumber[p.Of]
		}
		if p.Kind == KindPoison && lane.Groups != "" {
			// On a lane that keeps its groups in order, every other order
			// the service fails for ever kills its invocations instead.
			if killers++; killers%2 == 0 {
				p.Kind = KindKiller
			}
		}
		p.Group = lane.group(p, groupsPerLane, w.pubs)
	}
	return w.pubs
}

// groupsPerLane is how many message groups the random workload spreads its
// orders over (groupName).
const groupsPerLane = 16

// groupName is the name of shared group i.
func groupName(i int) string { return fmt.Sprintf("g-%02d", i) }

// group is the FIFO MessageGroupId of p, one of n groups; pubs are the
// publications before it. A duplicate or a conflict is in the group of the
// order it repeats, as a producer's retry is (the account's, on a ledger).
// On a lane without Groups, an order that can never succeed has a group of
// its own, as it always had; on a lane that keeps its groups in order it
// shares one, and its successors wait behind it until it is parked (and
// then, on a lane that holds, until the operator releases the group).
func (l Lane) group(p *Publication, n int, pubs []*Publication) string {
	switch {
	case (p.Kind == KindDuplicate || p.Kind == KindConflict) && p.Of >= 0 && p.Of < len(pubs) && pubs[p.Of].Group != "":
		return pubs[p.Of].Group
	case p.Kind.hopeless() && l.Groups == "":
		return fmt.Sprintf("g-poison-%d", p.N)
	}
	return groupName(p.N % n)
}

func (w *workload) add(p *Publication) {
	p.N = len(w.pubs)
	w.lane.describe(p)
	if p.OrderID == "" {
		p.OrderID = w.lane.keyOf(p.Body)
	}
	w.pubs = append(w.pubs, p)
}

// maxInt is 2^53, the largest magnitude of an integer key
// (docs/CONTRACT.md).
const maxInt = 1 << 53

// key returns the key of the lane's shape for the order the sample's lane
// would call id (ORD-<seed>-<n>[-REJECT|-POISON|-BAD]), unique as id is: id
// itself; on a LongKey lane an ARN or a URL of 130 to 600 bytes that
// carries id; on an IntKey lane an integer within 2^53 of magnitude (short
// of it: the bound itself is generate's), negative for one order in
// five. The tax service tells a rejected or poison order by its kind
// (Service.mark), whatever its key.
func (w *workload) key(id string) string {
	switch {
	case w.lane.LongKey:
		n := 130 + w.rng.IntN(471)
		var k string
		if w.rng.IntN(2) == 0 {
			k = fmt.Sprintf("arn:aws:orders:sa-east-1:%012d:order/%s/", w.seed, id)
		} else {
			k = fmt.Sprintf("https://orders.example.com/v1/tenants/%d/orders/%s?part=", w.seed, id)
		}
		if pad := n - len(k); pad > 0 {
			k += strings.Repeat("0123456789abcdef", pad/16+1)[:pad]
		}
		return k
	case w.lane.IntKey:
		w.ints++
		k := int64(maxInt - w.ints)
		if w.ints%5 == 3 {
			k = -k
		}
		return strconv.FormatInt(k, 10)
	}
	return id
}

// wireOrder is the order.created contract, for building bodies.
type wireOrder struct {
	EventType string     `json:"eventType"`
	Version   int        `json:"version"`
	OrderID   string     `json:"orderId,omitempty"`
	CreatedAt string     `json:"createdAt"`
	Customer  wireCust   `json:"customer"`
	Items     []wireItem `json:"items"`
	Total     string     `json:"total"`
	Currency  string     `json:"currency"`
}

type wireCust struct {
	Name  string `json:"name"`
	TaxID string `json:"taxId"`
	Email string `json:"email"`
}

type wireItem struct {
	SKU       string `json:"sku"`
	Quantity  int    `json:"quantity"`
	UnitPrice string `json:"unitPrice"`
}

// validOrder returns a valid order with orderId id; variant changes the items
// (a conflicting payload uses another variant).
func (w *workload) validOrder(id string, variant int) wireOrder {
	o := wireOrder{
		EventType: "order.created", Version: 1, OrderID: id, CreatedAt: "2026-11-29T10:00:00Z",
		Customer: wireCust{Name: "Ana Souza", TaxID: w.taxID(), Email: "ana@example.com"},
		Currency: "BRL",
	}
	total := 0
	for i := range 1 + w.rng.IntN(3) {
		cents := 100 + w.rng.IntN(99900) + variant
		qty := 1 + w.rng.IntN(4)
		o.Items = append(o.Items, wireItem{SKU: fmt.Sprintf("SKU-%d", i+1), Quantity: qty, UnitPrice: money(cents)})
		total += qty * cents
	}
	o.Total = money(total)
	return o
}

func (w *workload) validBody(id string, variant int) string {
	return w.encode(w.validOrder(id, variant))
}

// wireRefOrder is o as a RefKey lane's producer publishes it: the key at
// order.ref, and a decoy orderId (see Lane.RefKey).
type wireRefOrder struct {
	EventType string     `json:"eventType"`
	Version   int        `json:"version"`
	Decoy     string     `json:"orderId"`
	Order     wireRef    `json:"order"`
	CreatedAt string     `json:"createdAt"`
	Customer  wireCust   `json:"customer"`
	Items     []wireItem `json:"items"`
	Total     string     `json:"total"`
	Currency  string     `json:"currency"`
}

type wireRef struct {
	Ref string `json:"ref"`
}

// wireIntOrder is o as an IntKey lane's producer publishes it: orderId a
// JSON number (a string when it is not one: a blank one).
type wireIntOrder struct {
	EventType string          `json:"eventType"`
	Version   int             `json:"version"`
	OrderID   json.RawMessage `json:"orderId"`
	CreatedAt string          `json:"createdAt"`
	Customer  wireCust        `json:"customer"`
	Items     []wireItem      `json:"items"`
	Total     string          `json:"total"`
	Currency  string          `json:"currency"`
}

// encode is the body of o in the lane's shape. On a RefKey lane every body
// carries the same decoy orderId, a well-formed one: a toolkit that read
// orderId would take every message for one order.
func (w *workload) encode(o wireOrder) string {
	if w.lane.IntKey {
		id := json.RawMessage(encode(o.OrderID))
		if _, err := strconv.ParseInt(o.OrderID, 10, 64); err == nil {
			id = json.RawMessage(o.OrderID)
		}
		return encode(wireIntOrder{EventType: o.EventType, Version: o.Version, OrderID: id, CreatedAt: o.CreatedAt,
			Customer: o.Customer, Items: o.Items, Total: o.Total, Currency: o.Currency})
	}
	if !w.lane.RefKey {
		return encode(o)
	}
	return encode(wireRefOrder{
		EventType: o.EventType, Version: o.Version, Decoy: fmt.Sprintf("ORD-%d-DECOY", w.seed), Order: wireRef{Ref: o.OrderID},
		CreatedAt: o.CreatedAt, Customer: o.Customer, Items: o.Items, Total: o.Total, Currency: o.Currency,
	})
}

// invalidBody returns a body that is invalid for one reason, and the reason.
func (w *workload) invalidBody(n int) (string, string) {
	id := w.key(fmt.Sprintf("ORD-%d-%06d-BAD", w.seed, n))
	o := w.validOrder(id, 0)
	switch w.rng.IntN(7) {
	case 0:
		b := w.encode(o)
		return b[:len(b)/2], string(order.ReasonMalformedJSON)
	case 1:
		t := []byte(o.Customer.TaxID)
		last := len(t) - 1
		t[last] = '0' + (t[last]-'0'+1)%10
		o.Customer.TaxID = string(t)
		return w.encode(o), string(order.ReasonInvalidTaxID)
	case 2:
		o.Items, o.Total = []wireItem{}, "0.00"
		return w.encode(o), string(order.ReasonNoItems)
	case 3:
		o.Total = money(parseCents(o.Total) + 1)
		return w.encode(o), string(order.ReasonTotalMismatch)
	case 4:
		o.Currency = "XYZ"
		return w.encode(o), string(order.ReasonUnknownCurrency)
	case 5:
		o.Items[0].Quantity = 0
		return w.encode(o), string(order.ReasonInvalidQuantity)
	default:
		o.OrderID = "   "
		return w.encode(o), string(order.ReasonMissingOrderID)
	}
}

// taxID returns a valid CPF or CNPJ, punctuated or not.
func (w *workload) taxID() string {
	var s string
	if w.rng.IntN(3) == 0 {
		s = cnpj(w.rng)
	} else {
		s = cpf(w.rng)
	}
	if !order.ValidTaxID(s) {
		panic("sim: generated an invalid tax id " + s)
	}
	return s
}

// cpf returns a valid CPF, formatted 000.000.000-00.
func cpf(rng *rand.Rand) string {
	d := make([]int, 11)
	for {
		for i := range 9 {
			d[i] = rng.IntN(10)
		}
		if slices.ContainsFunc(d[:9], func(x int) bool { return x != d[0] }) {
			break
		}
	}
	d[9] = checkDigit(d[:9], 10)
	d[10] = checkDigit(d[:10], 11)
	s := digits(d)
	return s[0:3] + "." + s[3:6] + "." + s[6:9] + "-" + s[9:]
}

// cnpj returns a valid numeric CNPJ, unformatted.
func cnpj(rng *rand.Rand) string {
	d := make([]int, 14)
	for i := range 8 {
		d[i] = rng.IntN(10)
	}
	d[8], d[9], d[10], d[11] = 0, 0, 0, 1
	d[12] = mod11(d[:12], []int{5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2})
	d[13] = mod11(d[:13], []int{6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2})
	return digits(d)
}

func checkDigit(d []int, weight int) int {
	sum := 0
	for i, x := range d {
		sum += x * (weight - i)
	}
	if r := sum % 11; r >= 2 {
		return 11 - r
	}
	return 0
}

func mod11(d, weights []int) int {
	sum := 0
	for i, x := range d {
		sum += x * weights[i]
	}
	if r := sum % 11; r >= 2 {
		return 11 - r
	}
	return 0
}

func digits(d []int) string {
	var b strings.Builder
	for _, x := range d {
		b.WriteByte(byte('0' + x))
	}
	return b.String()
}

func money(cents int) string { return fmt.Sprintf("%d.%02d", cents/100, cents%100) }

func parseCents(s string) int {
	var whole, frac int
	fmt.Sscanf(s, "%d.%d", &whole, &frac)
	return whole*100 + frac
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// requestJSON is the tax request of o, as JSON: what identifies the payload
// an invoice was issued for.
func requestJSON(o order.Order) string { return encode(invoicing.Request(o)) }
