package taxstub

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/homingdlq/homing/internal/sample/tax"
)

// Mode is the behaviour of the stub.
type Mode struct {
	Mode      string  `json:"mode"`                // "up", "down" or "flaky"
	ErrorRate float64 `json:"errorRate,omitempty"` // flaky: share of calls answered 503, 0..1
	LatencyMs int     `json:"latencyMs,omitempty"` // added to every call
	// Dedupe makes a repeated Idempotency-Key answer the invoice already
	// issued for it instead of issuing a new one, as real invoice services
	// do. Off by default, so that a double call shows as two invoices.
	Dedupe bool `json:"dedupe,omitempty"`
}

// Server is the stand-in; it is an http.Handler, safe for concurrent use.
type Server struct {
	mu       sync.Mutex
	mode     Mode
	invoices map[string]int    // invoices issued per orderId
	calls    map[string]int    // accepted POST /invoices per orderId
	byKey    map[string]string // the last invoice number issued per Idempotency-Key
	issued   int
	mux      *http.ServeMux
}

// New returns a Server in mode up.
func New() *Server {
	s := &Server{mux: http.NewServeMux()}
	s.forget()
	s.mux.HandleFunc("POST /invoices", s.issue)
	s.mux.HandleFunc("GET /invoices/{key}", s.lookup)
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("POST /admin/mode", s.setMode)
	s.mux.HandleFunc("GET /admin/invoices", s.listInvoices)
	s.mux.HandleFunc("GET /admin/calls", s.listCalls)
	s.mux.HandleFunc("POST /admin/reset", s.reset)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// forget drops every invoice and goes back to mode up; the caller holds mu
// or owns s.
func (s *Server) forget() {
	s.mode = Mode{Mode: "up"}
	s.invoices = map[string]int{}
	s.calls = map[string]int{}
	s.byKey = map[string]string{}
	s.issued = 0
}

// Invoices returns a copy of the invoices issued per orderId.
func (s *Server) Invoices() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.invoices)
}

// Calls returns a copy of the accepted invoice calls per orderId (equal to
// Invoices unless Dedupe absorbed repeated keys).
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// SetMode changes the behaviour; it returns an error for an unknown mode.
func (s *Server) SetMode(m Mode) error {
	switch {
	case m.Mode != "up" && m.Mode != "down" && m.Mode != "flaky":
		return fmt.Errorf("mode %q: want up, down or flaky", m.Mode)
	case m.ErrorRate < 0 || m.ErrorRate > 1:
		return fmt.Errorf("errorRate %v: want 0..1", m.ErrorRate)
	case m.LatencyMs < 0 || m.LatencyMs > 60_000:
		return fmt.Errorf("latencyMs %d: want 0..60000", m.LatencyMs)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
	return nil
}

func (s *Server) current() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// serving waits for the configured latency and reports whether this call
// is served (false: answer 503).
func (s *Server) serving(r *http.Request) bool {
	m := s.current()
	if m.LatencyMs > 0 {
		select {
		case <-time.After(time.Duration(m.LatencyMs) * time.Millisecond):
		case <-r.Context().Done():
			return false
		}
	}
	switch m.Mode {
	case "down":
		return false
	case "flaky":
		return rand.Float64() >= m.ErrorRate
	}
	return true
}

func (s *Server) issue(w http.ResponseWriter, r *http.Request) {
	if !s.serving(r) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "tax service unavailable"})
		return
	}
	var req tax.InvoiceRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil || req.OrderID == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "want a JSON invoice request with orderId"})
		return
	}
	if strings.Contains(req.OrderID, "DOWN") {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "tax service unavailable for " + req.OrderID})
		return
	}
	if strings.Contains(req.OrderID, "REJECT") {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "order " + req.OrderID + " cannot be invoiced: customer blocked"})
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		key = req.OrderID
	}
	s.mu.Lock()
	s.calls[req.OrderID]++
	number, seen := s.byKey[key]
	if !seen || !s.mode.Dedupe {
		s.issued++
		s.invoices[req.OrderID]++
		number = fmt.Sprintf("INV-%06d", s.issued)
		s.byKey[key] = number
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, tax.Invoice{Number: number})
}

// lookup answers whether an Idempotency-Key was applied: 200 with its (last)
// invoice, 404 when never, 503 while not serving.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	if !s.serving(r) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "tax service unavailable"})
		return
	}
	s.mu.Lock()
	number, ok := s.byKey[r.PathValue("key")]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "no invoice for this Idempotency-Key"})
		return
	}
	writeJSON(w, http.StatusOK, tax.Invoice{Number: number})
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if s.current().Mode == "down" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "down"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) setMode(w http.ResponseWriter, r *http.Request) {
	var m Mode
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&m); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "want {\"mode\":\"up|down|flaky\"}"})
		return
	}
	if err := s.SetMode(m); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) listInvoices(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Invoices())
}

func (s *Server) listCalls(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Calls())
}

func (s *Server) reset(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.forget()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"status": "reset"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
