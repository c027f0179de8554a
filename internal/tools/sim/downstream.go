package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/homingdlq/homing/internal/sample/tax"
)

// ServiceMode is how the tax service treats a repeated Idempotency-Key.
type ServiceMode string

// The service modes.
const (
	Deduplicating ServiceMode = "dedup"    // a repeated key returns the first invoice (real invoice APIs)
	Counting      ServiceMode = "counting" // every call issues an invoice, so a double call shows
)

// Phase is a period of the tax service's trouble, from From to To after the
// start.
type Phase struct {
	From, To    time.Duration
	Mode        string  // "down": every call fails; "flaky": ErrorRate of calls fail; "slow": answers take Latency
	ErrorRate   float64 // flaky
	Latency     time.Duration
	LyingHealth bool // the health probe says up all the same
}

// Freeze is a failure of the tax service confined to one message group:
// from From to To after the start, every invoice call for an order of
// Group (of Orders only, when set) answers 503, and every other order is
// served (issue 22's frozen account). A freeze of many schedule periods
// is what a FIFO lane that holds its groups must come through in order.
type Freeze struct {
	Group    string
	Orders   []string // when set, only these orders of the group fail
	From, To time.Duration
}

// Service behaviour that holds outside the phases.
type ServiceFaults struct {
	Ambiguous float64       // a call is applied but its answer is lost
	Latency   time.Duration // normal answer time
	Budget    time.Duration // the client's budget (TAX_BUDGET): a slower answer is a timeout
}

// effect is one invoice issued.
type effect struct {
	seq     int // the order in which the service issued its invoices, from 1
	at      time.Time
	number  string
	request string // the request JSON
	known   bool   // the answer reached the caller
	inDoubt bool   // issued after an earlier effect whose answer was lost
}

// Service is the tax and invoice service, in process: an invoicing.Invoicer
// with a lookup by Idempotency-Key and a health probe. It is safe for
// concurrent use.
type Service struct {
	mode   ServiceMode
	phases []Phase
	faults ServiceFaults
	start  time.Time
	clock  clock
	dice   *dice
	trace  *Trace
	// duringCall, when set, is called in the middle of a successful call,
	// after the effect and before the answer (a concurrent copy of the
	// record arriving at another consumer then).
	duringCall func(ctx context.Context, orderID string)

	// freezes fail the orders of a group for a while; groupOf maps an
	// orderId to its group (see Service.frozen).
	freezes []Freeze
	groupOf map[string]string
	marked  map[string]Kind // the orders it fails for ever or rejects, by kind (see freeze)

	mu        sync.Mutex
	issued    int
	effects   map[string][]*effect // by Idempotency-Key (the orderId)
	calls     map[string]int
	lookups   map[string]int
	violation func(kind, subject, detail string)
}

type clock interface {
	Now() time.Time
	Advance(time.Duration)
}

func newService(mode ServiceMode, phases []Phase, f ServiceFaults, start time.Time, c clock, d *dice, tr *Trace) *Service {
	if f.Latency <= 0 {
		f.Latency = 40 * time.Millisecond
	}
	if f.Budget <= 0 {
		f.Budget = 10 * time.Second
	}
	return &Service{mode: mode, phases: phases, faults: f, start: start, clock: c, dice: d, trace: tr,
		effects: map[string][]*effect{}, calls: map[string]int{}, lookups: map[string]int{}}
}

// phase returns the phase in force now, or nil.
func (s *Service) phase() *Phase {
	off := s.clock.Now().Sub(s.start)
	for i := range s.phases {
		if p := &s.phases[i]; off >= p.From && off < p.To {
			return p
		}
	}
	return nil
}

// errUnavailable is the service's 503, as the real client reports it after
// its retries: every attempt answered, so it says NotApplied as the
// client's errors do (the receiver releases the claim without a lookup). A
// lost answer (a timeout, a reset) has no such method: it is ambiguous.
var errUnavailable error = unavailableError{}

type unavailableError struct{}

func (unavailableError) Error() string    { return "tax service unavailable (HTTP 503)" }
func (unavailableError) NotApplied() bool { return true }

// poisonMark in an orderId makes the service answer 503 for that order, and
// only that order, for ever (KindPoison): a transient failure, as the
// consumer sees it, that is the message's own and never ends.
const poisonMark = "POISON"

// errPoison is that answer. Its text differs from errUnavailable's, so the
// simulation does not count it as a failure in an outage.
var errPoison error = poisonError{}

type poisonError struct{}

func (poisonError) Error() string    { return "tax service unavailable for this order (HTTP 503)" }
func (poisonError) NotApplied() bool { return true }

// errFrozen is the answer to an order of a frozen group (Freeze). Its text
// differs from errUnavailable's: it is no outage of the service.
var errFrozen error = frozenError{}

type frozenError struct{}

func (frozenError) Error() string    { return "tax service: the account is frozen (HTTP 503)" }
func (frozenError) NotApplied() bool { return true }

// freeze has the service fail the orders of freezes' groups, as pubs
// place them, and tells it the orders pubs mean it to fail for ever
// (KindPoison), never to answer (KindKiller) or to reject (KindRejected):
// on a lane whose keys cannot carry poisonMark or "REJECT" (IntKey), their
// kind says so.
func (s *Service) freeze(freezes []Freeze, pubs []*Publication) {
	s.freezes = freezes
	s.groupOf = map[string]string{}
	s.marked = map[string]Kind{}
	for _, p := range pubs {
		if _, ok := s.groupOf[p.OrderID]; !ok && p.OrderID != "" {
			s.groupOf[p.OrderID] = p.Group
		}
		if (p.Kind.hopeless() || p.Kind == KindRejected) && p.OrderID != "" {
			s.marked[p.OrderID] = p.Kind
		}
	}
}

// own returns how the trace says it and the failure of the service that
// is orderID's own: a freeze of its group (errFrozen), or a poison order's
// (errPoison); nil when the service serves it.
func (s *Service) own(orderID string) (string, error) {
	switch {
	case s.frozen(orderID):
		return "frozen", errFrozen
	case strings.Contains(orderID, poisonMark) || s.marked[orderID] == KindPoison:
		return "unavailable for this order", errPoison
	}
	return "", nil
}

// frozen reports whether a freeze fails the invoices of orderID now.
func (s *Service) frozen(orderID string) bool {
	off := s.clock.Now().Sub(s.start)
	g, ok := s.groupOf[orderID]
	if !ok {
		return false
	}
	for _, f := range s.freezes {
		if f.Group == g && off >= f.From && off < f.To && (len(f.Orders) == 0 || slices.Contains(f.Orders, orderID)) {
			return true
		}
	}
	return false
}

// wait spends d of the caller's time. It reports false when the caller's
// invocation died on the way (its deadline passed): the clock then stops at
// the deadline.
func (s *Service) wait(ctx context.Context, d time.Duration) bool {
	inv := invocationOf(ctx)
	if inv != nil && s.clock.Now().Add(d).After(inv.deadline) {
		if rest := inv.deadline.Sub(s.clock.Now()); rest > 0 {
			s.clock.Advance(rest)
		}
		inv.kill("timeout during a tax call")
		return false
	}
	s.clock.Advance(d)
	return true
}

// IssueInvoice implements invoicing.Invoicer.
func (s *Service) IssueInvoice(ctx context.Context, req tax.InvoiceRequest) (tax.Invoice, error) {
	inv := invocationOf(ctx)
	if inv != nil && inv.dead() {
		return tax.Invoice{}, errKilled
	}
	key := req.OrderID
	if err := checkHeader(key); err != nil {
		return tax.Invoice{}, err
	}
	s.mu.Lock()
	s.calls[key]++
	attempt := s.calls[key]
	s.mu.Unlock()
	p := s.phase()
	latency := s.faults.Latency
	if p != nil && p.Mode == "slow" {
		latency = p.Latency
	}
	failed := p != nil && (p.Mode == "down" || p.Mode == "flaky" && s.dice.chance("tax-flaky", key, p.ErrorRate))
	if failed {
		s.wait(ctx, latency)
		s.trace.add(s.clock.Now(), "tax", "unavailable", key, fmt.Sprintf("call %d", attempt))
		return tax.Invoice{}, errUnavailable
	}
	if s.marked[key] == KindKiller {
		// It never answers: the caller's invocation dies at its deadline.
		if inv != nil {
			s.wait(ctx, inv.deadline.Sub(s.clock.Now())+time.Second)
		}
		s.trace.add(s.clock.Now(), "tax", "no answer", key, fmt.Sprintf("call %d", attempt))
		return tax.Invoice{}, errKilled
	}
	if what, err := s.own(key); err != nil {
		s.wait(ctx, latency)
		s.trace.add(s.clock.Now(), "tax", what, key, fmt.Sprintf("call %d", attempt))
		return tax.Invoice{}, err
	}
	if strings.Contains(key, "REJECT") || s.marked[key] == KindRejected {
		s.wait(ctx, latency)
		return tax.Invoice{}, &tax.RejectedError{Status: 422, Detail: "order " + key + " cannot be invoiced: customer blocked"}
	}
	// The service applies the request; whether the answer reaches the
	// caller is another matter.
	timeout := latency > s.faults.Budget
	alive := s.wait(ctx, min(latency, s.faults.Budget))
	if !alive && !s.dice.chance("tax-applied-before-kill", key, 0.5) {
		return tax.Invoice{}, errKilled
	}
	e := s.apply(key, req)
	switch {
	case !alive:
		s.trace.add(s.clock.Now(), "tax", "applied, caller gone", key, e.number)
		return tax.Invoice{}, errKilled
	case timeout:
		s.trace.add(s.clock.Now(), "tax", "applied, answer late", key, e.number)
		return tax.Invoice{}, fmt.Errorf("invoice %s: %w", key, context.DeadlineExceeded)
	case s.dice.chance("tax-ambiguous", key, s.faults.Ambiguous):
		s.trace.add(s.clock.Now(), "tax", "applied, answer lost", key, e.number)
		return tax.Invoice{}, errors.New("read tax answer: connection reset by peer (injected)")
	}
	if s.duringCall != nil {
		s.duringCall(ctx, key)
	}
	if inv != nil && inv.dead() {
		return tax.Invoice{}, errKilled
	}
	s.mu.Lock()
	e.known = true
	s.mu.Unlock()
	s.trace.add(s.clock.Now(), "tax", "invoiced", key, e.number)
	return tax.Invoice{Number: e.number}, nil
}

// apply issues (or, deduplicating, finds) the invoice of key.
func (s *Service) apply(key string, req tax.InvoiceRequest) *effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.effects[key]
	if s.mode == Deduplicating && len(prev) > 0 {
		return prev[0]
	}
	s.issued++
	e := &effect{seq: s.issued, at: s.clock.Now(), number: fmt.Sprintf("INV-%07d", s.issued), request: encode(req)}
	if len(prev) > 0 {
		known := false
		for _, p := range prev {
			known = known || p.known
		}
		if known {
			if s.violation != nil {
				s.violation("second-effect", key, fmt.Sprintf("invoice %s issued although the consumer had the answer of %s", e.number, prev[0].number))
			}
		} else {
			e.inDoubt = true
		}
	}
	s.effects[key] = append(prev, e)
	return e
}

// LookupInvoice answers whether an invoice was issued for the Idempotency-Key
// orderID, and which: the in-doubt resolution of a takeover. It fails like
// an invoice call while the service is down.
func (s *Service) LookupInvoice(ctx context.Context, orderID string) (tax.Invoice, bool, error) {
	if inv := invocationOf(ctx); inv != nil && inv.dead() {
		return tax.Invoice{}, false, errKilled
	}
	if err := checkHeader(orderID); err != nil {
		return tax.Invoice{}, false, err
	}
	if p := s.phase(); p != nil && p.Mode == "down" {
		return tax.Invoice{}, false, errUnavailable
	}
	s.wait(ctx, s.faults.Latency)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups[orderID]++
	prev := s.effects[orderID]
	s.trace.add(s.clock.Now(), "tax", "lookup", orderID, fmt.Sprintf("found=%v", len(prev) > 0))
	if len(prev) == 0 {
		return tax.Invoice{}, false, nil
	}
	for _, e := range prev {
		e.known = true // the caller learns of it now
	}
	return tax.Invoice{Number: prev[0].number}, true, nil
}

// Health is the health probe: it fails while the service is down, unless
// the phase's probe lies.
func (s *Service) Health(context.Context) error {
	if p := s.phase(); p != nil && p.Mode == "down" && !p.LyingHealth {
		return errors.New("tax service health: HTTP 503")
	}
	return nil
}

// effectsOf returns the invoices issued for orderID.
func (s *Service) effectsOf(orderID string) []*effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*effect(nil), s.effects[orderID]...)
}

// callsOf returns the invoice calls made for orderID.
func (s *Service) callsOf(orderID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[orderID]
}

// checkHeader refuses an Idempotency-Key that net/http would not send (a
// control character), as the real client's request fails before it leaves.
func checkHeader(key string) error {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return errors.New(`post "/invoices": net/http: invalid header field value for "Idempotency-Key"`)
		}
	}
	return nil
}
