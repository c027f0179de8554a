package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/homingdlq/homing/internal/settings"
	"github.com/homingdlq/homing/payload"
)

// Limits of a [Request]'s rate, as settings.Rate declares them (3000: SQS
// FIFO batched throughput per action).
const (
	minRate = settings.MinRate
	maxRate = settings.MaxRate
)

// maxVisibility is SQS's longest visibility timeout.
const maxVisibility = 12 * time.Hour

// ErrInvalidRequest is wrapped by [Engine.Run] when the request is invalid;
// nothing has been done then.
var ErrInvalidRequest = errors.New("replay: invalid request")

// Route is one dead-letter queue with its source and parking queues, all of
// the same type (FIFO when the URLs end in settings.FIFOSuffix, ".fifo"),
// and what the replay needs to know of the lane's messages and consumer:
// its business key, its payload hash and whether its consumer writes
// homing's completion records.
// Its JSON is an element of REPLAY_ROUTES.
type Route struct {
	Name       string `json:"name"`
	DLQURL     string `json:"dlqUrl"`
	SourceURL  string `json:"sourceUrl"`
	ParkingURL string `json:"parkingUrl"`
	// Key is the JMESPath expression of a message's business key over its
	// JSON body (Powertools' eventKeyJmesPath; e.g. "shipment.id"):
	// the key of its history in the ledger ([HistoryKey]), what
	// [Filter.Keys] matches, and the key of the consumer's completion
	// record. A body whose key does not evaluate to a non-empty string or
	// an integral number, and every body when Key is "", is decided by its
	// original message id alone.
	Key string `json:"key,omitempty"`
	// PayloadHash is the JMESPath expression of the part of the body the
	// consumer's completion record hashes (Powertools'
	// payloadValidationJmesPath); "" hashes the whole body (see package
	// payload).
	PayloadHash string `json:"payloadHash,omitempty"`
	// Records says that the lane's consumer writes homing's completion
	// records (idempotency records "<CONSUMER_NAME>#<key>" with the payload
	// hash: see docs). With it, the canary gate, the breaker and the
	// removal of dead letters already applied read them; without it they
	// read nothing, and the route's canary gate says it is skipped. It
	// needs a Key.
	Records bool `json:"records,omitempty"`
	// Invalid says that the route reads the lane's invalid queue (DLQURL
	// is it): a message's [Filter] reason is then the consumer's verdict
	// (package invalid), which on any other queue is the producer's data.
	// Set by `dlq replay --from invalid`; not part of REPLAY_ROUTES.
	Invalid bool `json:"-"`
}

// FIFO reports whether the route's queues are FIFO queues.
func (r Route) FIFO() bool { return settings.IsFIFO(r.DLQURL) }

// errExpression is wrapped by the error of [Route.Validate] for a key or
// payload-hash expression that does not compile.
var errExpression = errors.New("not a JMESPath expression")

// Validate reports every missing URL, a mix of queue types, a name empty
// or longer than 256 bytes (the name travels in the metadata the engine
// seals, which must stay within its bounds to verify: see seal.go), a key
// or payload-hash expression that does not compile (wrapping
// errExpression, naming the route and the expression), and Records
// without a Key.
func (r Route) Validate() error {
	var errs []error
	switch {
	case r.Name == "":
		errs = append(errs, errors.New("route without a name"))
	case len(r.Name) > settings.MaxRouteNameBytes:
		errs = append(errs, fmt.Errorf("route name of %d bytes: want at most %d", len(r.Name), settings.MaxRouteNameBytes))
	}
	for _, f := range [...]struct{ key, url string }{{"dlqUrl", r.DLQURL}, {"sourceUrl", r.SourceURL}, {"parkingUrl", r.ParkingURL}} {
		switch {
		case f.url == "":
			errs = append(errs, fmt.Errorf("route %q: %s is required", r.Name, f.key))
		case settings.IsFIFO(f.url) != r.FIFO():
			errs = append(errs, fmt.Errorf("route %q: %s %s: all queues of a route must be FIFO, or none", r.Name, f.key, f.url))
		}
	}
	if _, err := r.compile(); err != nil {
		errs = append(errs, err)
	}
	if r.Records && r.Key == "" {
		errs = append(errs, fmt.Errorf("route %q: records needs a key: the consumer's completion records are found by key", r.Name))
	}
	return errors.Join(errs...)
}

// lane is what the engine evaluates of a route's messages: its key and
// payload hash, compiled once per run.
type lane struct {
	key  payload.Key
	hash payload.Hash
}

// compile compiles the route's expressions; the error names each one that
// does not compile.
func (r Route) compile() (lane, error) {
	var l lane
	var errs []error
	var err error
	if l.key, err = payload.NewKey(r.Key); err != nil {
		errs = append(errs, fmt.Errorf("route %q: key %q: %w: %w", r.Name, r.Key, errExpression, err))
	}
	if l.hash, err = payload.NewHash(r.PayloadHash); err != nil {
		errs = append(errs, fmt.Errorf("route %q: payloadHash %q: %w: %w", r.Name, r.PayloadHash, errExpression, err))
	}
	return l, errors.Join(errs...)
}

// Filter selects the messages an on-demand run considers; the zero value
// selects all. Every non-empty criterion must match.
type Filter struct {
	Reasons   []string      // the message's reason: see [Verifier.Check]
	OlderThan time.Duration // dead-lettered at least this long ago
	Keys      []string      // the message's business key (its route's [Route.Key])
	// ErrorClasses: the class of the consumer's failure record of the
	// message ("unknown" for none); needs [Options.Failures].
	ErrorClasses []string
	// MessageIDs: the message's own id in the queue the route reads.
	MessageIDs []string
}

type filterJSON struct {
	Reasons      []string `json:"reasons,omitempty"`
	OlderThan    string   `json:"olderThan,omitempty"`
	Keys         []string `json:"keys,omitempty"`
	ErrorClasses []string `json:"errorClasses,omitempty"`
	MessageIDs   []string `json:"messageIds,omitempty"`
	// OrderIDs is the deprecated name of Keys, read and never written.
	OrderIDs []string `json:"orderIds,omitempty"`
}

// MarshalJSON writes OlderThan as a Go duration string ("1h0m0s") and Keys
// as "keys".
func (f Filter) MarshalJSON() ([]byte, error) {
	j := filterJSON{Reasons: f.Reasons, Keys: f.Keys, ErrorClasses: f.ErrorClasses, MessageIDs: f.MessageIDs}
	if f.OlderThan != 0 {
		j.OlderThan = f.OlderThan.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads OlderThan as a Go duration string ("90m"), and Keys
// from "keys" or from "orderIds", its deprecated name (a filter written by
// an earlier version; both at once are an error). Unknown fields are an
// error: a misspelt criterion must not widen a run.
func (f *Filter) UnmarshalJSON(b []byte) error {
	var j filterJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	if j.Keys != nil && j.OrderIDs != nil {
		return errors.New("filter: keys and orderIds (its deprecated name) both given: want keys")
	}
	*f = Filter{Reasons: j.Reasons, Keys: j.Keys, ErrorClasses: j.ErrorClasses, MessageIDs: j.MessageIDs}
	if j.OrderIDs != nil {
		f.Keys = j.OrderIDs
	}
	if j.OlderThan != "" {
		d, err := time.ParseDuration(j.OlderThan)
		if err != nil {
			return fmt.Errorf("olderThan %q: not a duration like 90m or 24h", j.OlderThan)
		}
		f.OlderThan = d
	}
	return nil
}

func (f Filter) empty() bool {
	return len(f.Reasons) == 0 && f.OlderThan == 0 && len(f.Keys) == 0 && len(f.ErrorClasses) == 0 && len(f.MessageIDs) == 0
}

func (f Filter) match(m message, now time.Time) bool {
	return (len(f.Reasons) == 0 || slices.Contains(f.Reasons, m.reason)) &&
		(f.OlderThan == 0 || now.Sub(m.firstDeadLettered()) >= f.OlderThan) &&
		(len(f.Keys) == 0 || m.key != "" && slices.Contains(f.Keys, m.key)) &&
		(len(f.ErrorClasses) == 0 || m.class != "" && slices.Contains(f.ErrorClasses, m.class)) &&
		(len(f.MessageIDs) == 0 || slices.Contains(f.MessageIDs, m.id))
}

// MaxFilterValues bounds each list of a [Filter].
const MaxFilterValues = 100

// maxFilterKeyBytes bounds the bytes of a filter's keys in all: the filter
// is part of the run's summary, one DynamoDB item.
const maxFilterKeyBytes = 64 << 10

func bytesOf(list []string) int {
	n := 0
	for _, v := range list {
		n += len(v)
	}
	return n
}

// Request is one run.
type Request struct {
	Routes []Route
	DryRun bool    // decide and report, move and write nothing
	Max    int     // cap on messages moved (replayed + parked); 0 means Options.MaxPerRun
	Rate   float64 // messages sent per second; 0 means Options.Rate
	Filter Filter
	RunID  string // "" means a random id
	// ResetCount restarts the replay count of every message the run
	// examines: the count in its metadata and the message's earlier
	// replays in the ledger are ignored, and the metadata sent records the reset
	// (Metadata.ResetAt), so later runs count only the replays after it.
	// Its first replay after the reset waits for no backoff.
	// For an operator who fixed the cause of messages that exhausted their
	// replays and brings them back from the parking queue.
	ResetCount bool
}

// Validate reports every problem of the request.
func (r Request) Validate() error {
	var errs []error
	if len(r.Routes) == 0 {
		errs = append(errs, errors.New("no routes"))
	}
	names := map[string]bool{}
	for _, rt := range r.Routes {
		if err := rt.Validate(); err != nil {
			errs = append(errs, err)
		}
		if names[rt.Name] {
			errs = append(errs, fmt.Errorf("route %q appears twice", rt.Name))
		}
		names[rt.Name] = true
	}
	if r.Max < 0 {
		errs = append(errs, fmt.Errorf("max %d: want >= 0", r.Max))
	}
	if r.Rate != 0 && (r.Rate < minRate || r.Rate > maxRate || math.IsNaN(r.Rate)) {
		errs = append(errs, fmt.Errorf("rate %g: want %g..%g messages per second", r.Rate, minRate, maxRate))
	}
	if r.Filter.OlderThan < 0 {
		errs = append(errs, fmt.Errorf("filter olderThan %s: want >= 0", r.Filter.OlderThan))
	}
	if len(r.RunID) > 128 {
		errs = append(errs, errors.New("runId longer than 128 characters"))
	}
	// The filter is part of the run's summary, a DynamoDB item of at most
	// 400 KB: its lists are bounded.
	for name, list := range map[string][]string{"keys": r.Filter.Keys, "reasons": r.Filter.Reasons, "errorClasses": r.Filter.ErrorClasses, "messageIds": r.Filter.MessageIDs} {
		if len(list) > MaxFilterValues {
			errs = append(errs, fmt.Errorf("filter %s: %d values, want at most %d", name, len(list), MaxFilterValues))
		}
	}
	// A key may be of any length (a lane keyed by ARNs or URLs): the
	// keys are bounded in all; reasons are the engine's, short.
	if n := bytesOf(r.Filter.Keys); n > maxFilterKeyBytes {
		errs = append(errs, fmt.Errorf("filter keys: %d bytes in all, want at most %d", n, maxFilterKeyBytes))
	}
	if i := slices.IndexFunc(r.Filter.Reasons, func(v string) bool { return len(v) > MaxKeyID }); i >= 0 {
		errs = append(errs, fmt.Errorf("filter reasons: value %d is %d bytes, want at most %d", i, len(r.Filter.Reasons[i]), MaxKeyID))
	}
	if i := slices.IndexFunc(r.Filter.MessageIDs, func(v string) bool { return v == "" || len(v) > MaxKeyID }); i >= 0 {
		errs = append(errs, fmt.Errorf("filter messageIds: value %d is %d bytes, want 1 to %d", i, len(r.Filter.MessageIDs[i]), MaxKeyID))
	}
	if i := slices.IndexFunc(r.Filter.ErrorClasses, func(v string) bool { return !settings.ValidFailureClass(v) }); i >= 0 {
		errs = append(errs, fmt.Errorf("filter errorClasses: value %d is no failure class: want 1 to 64 of a-z, 0-9 and -", i))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}
