package tax_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/sample/tax"
)

// fakeClock is the injected time: Sleep records the delay and advances Now
// instead of waiting.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func fixedRand(v float64) func() float64 { return func() float64 { return v } }

// newClient builds a client on baseURL with the default *http.Client, a fake
// clock and a fixed jitter of 0.5 unless opts says otherwise.
func newClient(t *testing.T, baseURL string, opts tax.Options) (*tax.Client, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = clock.Sleep
	}
	if opts.Rand == nil {
		opts.Rand = fixedRand(0.5)
	}
	c, err := tax.New(baseURL, nil, opts)
	if err != nil {
		t.Fatalf("New(%q): %v", baseURL, err)
	}
	return c, clock
}

func sampleRequest() tax.InvoiceRequest {
	return tax.InvoiceRequest{
		OrderID:  "ORD-2026-000123",
		TaxID:    "123.456.789-09",
		Currency: "BRL",
		Total:    "99.80",
		Items:    []tax.Item{{SKU: "SKU-1", Quantity: 2, UnitPrice: "49.90"}},
	}
}

// reply is one scripted answer of a fake service.
type reply struct {
	status int
	body   string
	header map[string]string
}

// scripted serves replies in order, repeating the last one, and counts hits.
func scripted(t *testing.T, replies ...reply) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(hits.Add(1))
		_, _ = io.Copy(io.Discard, r.Body)
		rp := replies[min(n, len(replies))-1]
		for k, v := range rp.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rp.status)
		_, _ = io.WriteString(w, rp.body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestIssueInvoiceSendsContract(t *testing.T) {
	const wantBody = `{"orderId":"ORD-2026-000123","taxId":"123.456.789-09","currency":"BRL","total":"99.80",` +
		`"items":[{"sku":"SKU-1","quantity":2,"unitPrice":"49.90"}]}`
	noItems := sampleRequest()
	noItems.Items = nil

	tests := []struct {
		name     string
		basePath string
		req      tax.InvoiceRequest
		wantPath string
		wantBody string
	}{
		{"root base URL", "", sampleRequest(), "/invoices", wantBody},
		{"base URL with path", "/api/v1", sampleRequest(), "/api/v1/invoices", wantBody},
		{"base URL with trailing slash", "/api/", sampleRequest(), "/api/invoices", wantBody},
		{"nil items sent as empty array", "", noItems, "/invoices",
			`{"orderId":"ORD-2026-000123","taxId":"123.456.789-09","currency":"BRL","total":"99.80","items":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type seen struct {
				method, path, contentType, key, body string
			}
			got := make(chan seen, 10)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), string(b)}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, `{"invoiceNumber":"INV-1","issuedAt":"2026-11-29T10:00:01Z","taxes":[{"kind":"ICMS"}]}`)
			}))
			defer srv.Close()
			c, clock := newClient(t, srv.URL+tt.basePath, tax.Options{})

			inv, err := c.IssueInvoice(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("IssueInvoice: %v", err)
			}
			if inv.Number != "INV-1" {
				t.Errorf("invoice number = %q, want INV-1", inv.Number)
			}
			if len(got) != 1 {
				t.Fatalf("service saw %d requests, want 1", len(got))
			}
			s := <-got
			want := seen{http.MethodPost, tt.wantPath, "application/json", tt.req.OrderID, tt.wantBody}
			if s != want {
				t.Errorf("request =\n %+v\nwant\n %+v", s, want)
			}
			if sl := clock.Sleeps(); len(sl) != 0 {
				t.Errorf("slept %v, want no sleep", sl)
			}
		})
	}
}

func TestIssueInvoiceClassifiesAnswers(t *testing.T) {
	ok := reply{status: http.StatusCreated, body: `{"invoiceNumber":"INV-9"}`}
	bigBody := `{"invoiceNumber":"INV-9","pad":"` + strings.Repeat("x", 100<<10) + `"}`

	tests := []struct {
		name         string
		opts         tax.Options
		replies      []reply
		wantAttempts int32
		wantSleeps   []time.Duration // nil: not checked
		wantErr      []string        // substrings of the error; nil: success
		wantRejected *tax.RejectedError
	}{
		{
			name:         "503 then 201 succeeds on the second attempt",
			replies:      []reply{{status: 503}, ok},
			wantAttempts: 2,
			wantSleeps:   []time.Duration{50 * time.Millisecond},
		},
		{
			name:         "200 is success too",
			replies:      []reply{{status: 200, body: `{"invoiceNumber":"INV-9"}`}},
			wantAttempts: 1,
			wantSleeps:   []time.Duration{},
		},
		{
			name:         "429 honours Retry-After seconds",
			replies:      []reply{{status: 429, header: map[string]string{"Retry-After": "3"}}, ok},
			wantAttempts: 2,
			wantSleeps:   []time.Duration{3 * time.Second},
		},
		{
			name:         "503 honours Retry-After too",
			replies:      []reply{{status: 503, header: map[string]string{"Retry-After": "1"}}, ok},
			wantAttempts: 2,
			wantSleeps:   []time.Duration{time.Second},
		},
		{
			name: "429 with Retry-After as a date falls back to backoff",
			replies: []reply{
				{status: 429, header: map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}}, ok,
			},
			wantAttempts: 2,
			wantSleeps:   []time.Duration{50 * time.Millisecond},
		},
		{
			name:         "429 with Retry-After beyond the budget gives up at once",
			opts:         tax.Options{Budget: 10 * time.Second},
			replies:      []reply{{status: 429, header: map[string]string{"Retry-After": "30"}}, ok},
			wantAttempts: 1,
			wantSleeps:   []time.Duration{},
			wantErr:      []string{"1 attempt", "Retry-After 30s", "429"},
		},
		{
			name:         "408 is retried",
			replies:      []reply{{status: 408}, ok},
			wantAttempts: 2,
		},
		{
			name:         "always 500 gives up after MaxAttempts",
			opts:         tax.Options{MaxAttempts: 4},
			replies:      []reply{{status: 500, body: `{"message":"database down"}`}},
			wantAttempts: 4,
			wantSleeps:   []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond},
			wantErr:      []string{"ORD-2026-000123", "gave up after 4 attempts", "500 Internal Server Error", "database down"},
		},
		{
			name:         "422 with message is rejected after one attempt",
			replies:      []reply{{status: 422, body: `{"message":"tax id does not match customer"}`}, ok},
			wantAttempts: 1,
			wantSleeps:   []time.Duration{},
			wantErr:      []string{"ORD-2026-000123", "rejected", "tax id does not match customer"},
			wantRejected: &tax.RejectedError{Status: 422, Detail: "tax id does not match customer"},
		},
		{
			name:         "422 without body is rejected",
			replies:      []reply{{status: 422}, ok},
			wantAttempts: 1,
			wantErr:      []string{"rejected", "422"},
			wantRejected: &tax.RejectedError{Status: 422},
		},
		{
			name:         "422 with a plain text body keeps the text",
			replies:      []reply{{status: 422, body: "currency XYZ unsupported\n"}, ok},
			wantAttempts: 1,
			wantErr:      []string{"currency XYZ unsupported"},
			wantRejected: &tax.RejectedError{Status: 422, Detail: "currency XYZ unsupported"},
		},
		{
			name:         "400 is not retried and not rejected",
			replies:      []reply{{status: 400, body: `{"message":"missing field"}`}, ok},
			wantAttempts: 1,
			wantSleeps:   []time.Duration{},
			wantErr:      []string{"not retried", "1 attempt", "400 Bad Request", "missing field"},
		},
		{
			name:         "401 is not retried",
			replies:      []reply{{status: 401}, ok},
			wantAttempts: 1,
			wantErr:      []string{"not retried", "401"},
		},
		{
			name:         "404 is not retried",
			replies:      []reply{{status: 404}, ok},
			wantAttempts: 1,
			wantErr:      []string{"not retried", "404"},
		},
		{
			name:         "409 is not retried",
			replies:      []reply{{status: 409}, ok},
			wantAttempts: 1,
			wantErr:      []string{"not retried", "409"},
		},
		{
			name:         "redirect is not followed",
			replies:      []reply{{status: 307, header: map[string]string{"Location": "/elsewhere"}}, ok},
			wantAttempts: 1,
			wantErr:      []string{"not retried", "307"},
		},
		{
			name:         "empty invoiceNumber is transient and retried",
			replies:      []reply{{status: 201, body: `{"invoiceNumber":""}`}, ok},
			wantAttempts: 2,
		},
		{
			name:         "missing invoiceNumber is transient and retried",
			replies:      []reply{{status: 201, body: `{"id":"x"}`}, ok},
			wantAttempts: 2,
		},
		{
			name:         "always blank invoiceNumber gives up",
			opts:         tax.Options{MaxAttempts: 2},
			replies:      []reply{{status: 200, body: `{"invoiceNumber":"  "}`}},
			wantAttempts: 2,
			wantErr:      []string{"2 attempts", "without an invoiceNumber"},
		},
		{
			name:         "success body that is not JSON is transient",
			replies:      []reply{{status: 201, body: "<html>ok</html>"}, ok},
			wantAttempts: 2,
		},
		{
			name:         "success body over 64 KiB is not trusted",
			opts:         tax.Options{MaxAttempts: 2},
			replies:      []reply{{status: 201, body: bigBody}},
			wantAttempts: 2,
			wantErr:      []string{"2 attempts", "unreadable body"},
		},
		{
			name: "budget exhaustion stops before MaxAttempts",
			opts: tax.Options{
				MaxAttempts: 10, Budget: time.Second, BaseDelay: 400 * time.Millisecond,
				MaxDelay: 2 * time.Second, Rand: fixedRand(0.99),
			},
			replies:      []reply{{status: 503}},
			wantAttempts: 2, // waits 396ms, then 792ms would end past 1s
			wantSleeps:   []time.Duration{396 * time.Millisecond},
			wantErr:      []string{"gave up after 2 attempts", "retry budget of 1s exhausted", "503"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := scripted(t, tt.replies...)
			c, clock := newClient(t, srv.URL, tt.opts)

			inv, err := c.IssueInvoice(context.Background(), sampleRequest())

			if got := hits.Load(); got != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tt.wantAttempts)
			}
			if tt.wantSleeps != nil {
				if got := clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint(tt.wantSleeps) {
					t.Errorf("sleeps = %v, want %v", got, tt.wantSleeps)
				}
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("IssueInvoice: %v", err)
				}
				if inv.Number != "INV-9" {
					t.Errorf("invoice number = %q, want INV-9", inv.Number)
				}
				return
			}
			if err == nil {
				t.Fatalf("IssueInvoice = %+v, want an error", inv)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			var rejected *tax.RejectedError
			isRejected := errors.As(err, &rejected)
			switch {
			case tt.wantRejected == nil && isRejected:
				t.Errorf("error is a RejectedError (invalid lane), want transient: %v", err)
			case tt.wantRejected != nil && !isRejected:
				t.Errorf("error is not a RejectedError: %v", err)
			case tt.wantRejected != nil && *rejected != *tt.wantRejected:
				t.Errorf("RejectedError = %+v, want %+v", *rejected, *tt.wantRejected)
			}
		})
	}
}

// closedURL is the URL of a port nothing listens on: connections are refused.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

func TestIssueInvoiceTransportFailures(t *testing.T) {
	// slowThen hangs the first n requests until the client gives up, then answers 201.
	slowThen := func(t *testing.T, n int32) (string, *atomic.Int32) {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
			if hits.Add(1) <= n {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
				return
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"invoiceNumber":"INV-9"}`)
		}))
		t.Cleanup(srv.Close)
		return srv.URL, &hits
	}
	// resetting closes every connection without answering.
	resetting := func(t *testing.T) (string, *atomic.Int32) {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_ = conn.Close()
		}))
		t.Cleanup(srv.Close)
		return srv.URL, &hits
	}

	tests := []struct {
		name         string
		server       func(t *testing.T) (string, *atomic.Int32)
		opts         tax.Options
		wantAttempts int32 // -1: not counted by the server
		wantErr      []string
		wantIs       error
	}{
		{
			name:         "connection refused is transient and retried",
			server:       func(t *testing.T) (string, *atomic.Int32) { return closedURL(t), nil },
			opts:         tax.Options{MaxAttempts: 3},
			wantAttempts: -1,
			wantErr:      []string{"gave up after 3 attempts", "refused"},
			wantIs:       syscall.ECONNREFUSED,
		},
		{
			name:         "connection closed without answer is transient and retried",
			server:       resetting,
			opts:         tax.Options{MaxAttempts: 3},
			wantAttempts: 3,
			wantErr:      []string{"gave up after 3 attempts"},
		},
		{
			name:         "slow answer past AttemptTimeout is retried",
			server:       func(t *testing.T) (string, *atomic.Int32) { return slowThen(t, 1) },
			opts:         tax.Options{AttemptTimeout: 50 * time.Millisecond},
			wantAttempts: 2,
		},
		{
			name:         "always slow gives up with a timeout",
			server:       func(t *testing.T) (string, *atomic.Int32) { return slowThen(t, 100) },
			opts:         tax.Options{AttemptTimeout: 20 * time.Millisecond, MaxAttempts: 2},
			wantAttempts: 2,
			wantErr:      []string{"gave up after 2 attempts", "timed out after 20ms"},
			wantIs:       context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, hits := tt.server(t)
			c, _ := newClient(t, url, tt.opts)

			inv, err := c.IssueInvoice(context.Background(), sampleRequest())

			if tt.wantAttempts >= 0 {
				if got := hits.Load(); got != tt.wantAttempts {
					t.Errorf("attempts = %d, want %d", got, tt.wantAttempts)
				}
			}
			if tt.wantErr == nil {
				if err != nil || inv.Number != "INV-9" {
					t.Fatalf("IssueInvoice = %+v, %v; want INV-9", inv, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("IssueInvoice = %+v, want an error", inv)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tt.wantIs)
			}
			var rejected *tax.RejectedError
			if errors.As(err, &rejected) {
				t.Errorf("error is a RejectedError, want transient: %v", err)
			}
		})
	}
}

func TestIssueInvoiceContext(t *testing.T) {
	tests := []struct {
		name string
		// run calls IssueInvoice against a service that answers 503 and
		// calls onRequest on every request.
		run          func(t *testing.T, c func(tax.Options) *tax.Client, onRequest *atomic.Pointer[func()]) error
		wantAttempts int32
		wantIs       error
		wantErr      []string
	}{
		{
			name: "cancelled before the call makes no attempt",
			run: func(t *testing.T, c func(tax.Options) *tax.Client, _ *atomic.Pointer[func()]) error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, err := c(tax.Options{}).IssueInvoice(ctx, sampleRequest())
				return err
			},
			wantAttempts: 0,
			wantIs:       context.Canceled,
			wantErr:      []string{"not attempted"},
		},
		{
			name: "cancelled during an attempt stops at once",
			run: func(t *testing.T, c func(tax.Options) *tax.Client, onRequest *atomic.Pointer[func()]) error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				f := func() { cancel() }
				onRequest.Store(&f)
				_, err := c(tax.Options{}).IssueInvoice(ctx, sampleRequest())
				return err
			},
			wantAttempts: 1,
			wantIs:       context.Canceled,
			wantErr:      []string{"stopped after 1 attempt"},
		},
		{
			name: "cancelled while waiting to retry stops at once",
			run: func(t *testing.T, c func(tax.Options) *tax.Client, _ *atomic.Pointer[func()]) error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				sleep := func(ctx context.Context, d time.Duration) error {
					cancel()
					return ctx.Err()
				}
				_, err := c(tax.Options{Sleep: sleep}).IssueInvoice(ctx, sampleRequest())
				return err
			},
			wantAttempts: 1,
			wantIs:       context.Canceled,
			wantErr:      []string{"stopped after 1 attempt while waiting", "503"},
		},
		{
			name: "deadline inside the safety margin makes no attempt",
			run: func(t *testing.T, c func(tax.Options) *tax.Client, _ *atomic.Pointer[func()]) error {
				ctx, cancel := context.WithTimeout(context.Background(), tax.SafetyMargin-100*time.Millisecond)
				defer cancel()
				_, err := c(tax.Options{}).IssueInvoice(ctx, sampleRequest())
				return err
			},
			wantAttempts: 0,
			wantErr:      []string{"not attempted", "context deadline"},
		},
		{
			name: "context deadline cuts the budget",
			run: func(t *testing.T, c func(tax.Options) *tax.Client, _ *atomic.Pointer[func()]) error {
				// ~4.5s usable: waits 990ms and 1980ms fit, 3960ms does not.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				opts := tax.Options{
					MaxAttempts: 10, Budget: time.Minute, BaseDelay: time.Second,
					MaxDelay: 8 * time.Second, Rand: fixedRand(0.99),
				}
				_, err := c(opts).IssueInvoice(ctx, sampleRequest())
				return err
			},
			wantAttempts: 3,
			wantErr:      []string{"gave up after 3 attempts", "context deadline minus 500ms"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			var onRequest atomic.Pointer[func()]
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
				if f := onRequest.Load(); f != nil {
					(*f)()
					select {
					case <-r.Context().Done(): // the client hangs up
					case <-time.After(10 * time.Second):
					}
					return
				}
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			defer srv.Close()
			build := func(opts tax.Options) *tax.Client {
				c, _ := newClient(t, srv.URL, opts)
				return c
			}

			err := tt.run(t, build, &onRequest)

			if got := hits.Load(); got != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tt.wantAttempts)
			}
			if err == nil {
				t.Fatal("IssueInvoice succeeded, want an error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tt.wantIs)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestIssueInvoiceBackoff(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name        string
		maxAttempts int
		rand        float64
		want        []time.Duration // nil: only bounds and growth checked
	}{
		{"half jitter doubles up to the cap", 8, 0.5, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 500 * ms, 500 * ms, 500 * ms}},
		{"zero jitter never waits", 4, 0, []time.Duration{0, 0, 0}},
		{"jitter near 1 stays under MaxDelay", 8, 0.999, nil},
		{"jitter out of range is clamped", 8, 7, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}},
		{"many attempts never overflow", 70, 0.999, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := scripted(t, reply{status: 503})
			const maxDelay = time.Second
			c, clock := newClient(t, srv.URL, tax.Options{
				MaxAttempts: tt.maxAttempts, BaseDelay: 100 * ms, MaxDelay: maxDelay,
				Budget: time.Hour, Rand: fixedRand(tt.rand),
			})

			if _, err := c.IssueInvoice(context.Background(), sampleRequest()); err == nil {
				t.Fatal("IssueInvoice succeeded against an always-503 service")
			}

			got := clock.Sleeps()
			if len(got) != tt.maxAttempts-1 {
				t.Fatalf("slept %d times, want %d: %v", len(got), tt.maxAttempts-1, got)
			}
			for i, d := range got {
				if d < 0 || d > maxDelay {
					t.Errorf("delay %d = %v, outside [0, %v]", i, d, maxDelay)
				}
				if i > 0 && d < got[i-1] {
					t.Errorf("delay %d = %v shrank from %v", i, d, got[i-1])
				}
			}
			if tt.want != nil && fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("delays = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIssueInvoiceBadOrderID(t *testing.T) {
	tests := []struct {
		name    string
		orderID string
	}{
		{"empty", ""},
		{"newline", "ORD-1\nX-Evil: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := scripted(t, reply{status: 201, body: `{"invoiceNumber":"INV-9"}`})
			c, _ := newClient(t, srv.URL, tax.Options{})
			req := sampleRequest()
			req.OrderID = tt.orderID

			_, err := c.IssueInvoice(context.Background(), req)

			if err == nil || !strings.Contains(err.Error(), "order ID") {
				t.Errorf("error = %v, want one about the order ID", err)
			}
			if hits.Load() != 0 {
				t.Errorf("service saw %d requests, want 0", hits.Load())
			}
		})
	}
}

func TestIssueInvoiceBoundsErrorBody(t *testing.T) {
	srv, _ := scripted(t, reply{status: 400, body: strings.Repeat("y", 1<<20)})
	c, _ := newClient(t, srv.URL, tax.Options{})

	_, err := c.IssueInvoice(context.Background(), sampleRequest())

	if err == nil {
		t.Fatal("IssueInvoice succeeded, want an error")
	}
	if n := len(err.Error()); n > 2048 {
		t.Errorf("error message is %d bytes, want the body shortened", n)
	}
}

func TestIssueInvoiceReusesConnection(t *testing.T) {
	var conns, hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) < 4 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"message":"warming up"}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"invoiceNumber":"INV-9"}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, _ := newClient(t, srv.URL, tax.Options{})

	if _, err := c.IssueInvoice(context.Background(), sampleRequest()); err != nil {
		t.Fatalf("IssueInvoice: %v", err)
	}
	if _, err := c.IssueInvoice(context.Background(), sampleRequest()); err != nil {
		t.Fatalf("second IssueInvoice: %v", err)
	}

	if got := conns.Load(); got != 1 {
		t.Errorf("opened %d connections for %d requests, want 1 (bodies drained and closed)", got, hits.Load())
	}
}

func TestIssueInvoiceConcurrentUse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"invoiceNumber":"INV-%s"}`, r.Header.Get("Idempotency-Key"))
	}))
	defer srv.Close()
	c, _ := newClient(t, srv.URL, tax.Options{})

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			req := sampleRequest()
			req.OrderID = fmt.Sprintf("ORD-%d", i)
			inv, err := c.IssueInvoice(context.Background(), req)
			if err != nil {
				t.Errorf("IssueInvoice(%s): %v", req.OrderID, err)
				return
			}
			if want := "INV-" + req.OrderID; inv.Number != want {
				t.Errorf("invoice number = %q, want %q", inv.Number, want)
			}
		})
	}
	wg.Wait()
}

func TestHealthy(t *testing.T) {
	serve := func(status int) func(t *testing.T) string {
		return func(t *testing.T) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/base/health" {
					t.Errorf("probe = %s %s, want GET /base/health", r.Method, r.URL.Path)
				}
				w.WriteHeader(status)
			}))
			t.Cleanup(srv.Close)
			return srv.URL
		}
	}
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_ = ln.Close()
		return "http://" + ln.Addr().String()
	}
	cancelled := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}

	tests := []struct {
		name    string
		url     func(t *testing.T) string
		ctx     func() context.Context
		wantErr string // "": healthy
		wantIs  error
	}{
		{"200 is healthy", serve(200), context.Background, "", nil},
		{"204 is healthy", serve(204), context.Background, "", nil},
		{"503 is unhealthy", serve(503), context.Background, "503", nil},
		{"404 is unhealthy", serve(404), context.Background, "404", nil},
		{"refused is unhealthy", refused, context.Background, "refused", syscall.ECONNREFUSED},
		{"cancelled context", serve(200), cancelled, "canceled", context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newClient(t, tt.url(t)+"/base", tax.Options{})

			err := c.Healthy(tt.ctx())

			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Healthy: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Healthy = %v, want an error mentioning %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tt.wantIs)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		baseURL string
		opts    tax.Options
		wantErr string // "": valid
	}{
		{"http", "http://127.0.0.1:8080", tax.Options{}, ""},
		{"https with path", "https://tax.example/api/", tax.Options{}, ""},
		{"explicit options", "http://tax", tax.Options{MaxAttempts: 1, BaseDelay: time.Second, MaxDelay: time.Second, Budget: time.Second, AttemptTimeout: time.Second}, ""},
		{"empty URL", "", tax.Options{}, "scheme"},
		{"relative URL", "/invoices", tax.Options{}, "scheme"},
		{"host without scheme", "tax.example:8080", tax.Options{}, "scheme"},
		{"other scheme", "ftp://tax.example", tax.Options{}, "scheme"},
		{"no host", "http://", tax.Options{}, "host"},
		{"opaque", "http:tax.example", tax.Options{}, "host"},
		{"query", "http://tax.example?x=1", tax.Options{}, "query"},
		{"fragment", "http://tax.example#x", tax.Options{}, "fragment"},
		{"unparseable", "http://tax example/%zz", tax.Options{}, "base URL"},
		{"negative MaxAttempts", "http://tax", tax.Options{MaxAttempts: -1}, "MaxAttempts"},
		{"negative BaseDelay", "http://tax", tax.Options{BaseDelay: -time.Second}, "BaseDelay"},
		{"negative MaxDelay", "http://tax", tax.Options{MaxDelay: -time.Second}, "MaxDelay"},
		{"negative Budget", "http://tax", tax.Options{Budget: -time.Second}, "Budget"},
		{"negative AttemptTimeout", "http://tax", tax.Options{AttemptTimeout: -time.Second}, "AttemptTimeout"},
		{"BaseDelay over MaxDelay", "http://tax", tax.Options{BaseDelay: 3 * time.Second, MaxDelay: time.Second}, "exceeds MaxDelay"},
		{"BaseDelay over default MaxDelay", "http://tax", tax.Options{BaseDelay: 3 * time.Second}, "exceeds MaxDelay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tax.New(tt.baseURL, nil, tt.opts)
			if tt.wantErr == "" {
				if err != nil || c == nil {
					t.Errorf("New = %v, %v; want a client", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New error = %v, want one mentioning %q", err, tt.wantErr)
			}
			if c != nil {
				t.Errorf("New returned a client with an error")
			}
		})
	}

	t.Run("reports every problem", func(t *testing.T) {
		_, err := tax.New("ftp://x", nil, tax.Options{MaxAttempts: -1, Budget: -1})
		for _, s := range []string{"scheme", "MaxAttempts", "Budget"} {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Errorf("New error = %v, want one mentioning %q", err, s)
			}
		}
	})

	t.Run("uses the given http.Client", func(t *testing.T) {
		var used atomic.Bool
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			used.Store(true)
			return &http.Response{
				StatusCode: 201, Status: "201 Created", Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(`{"invoiceNumber":"INV-9"}`)), Request: r,
			}, nil
		})}
		c, err := tax.New("http://tax.invalid", hc, tax.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.IssueInvoice(context.Background(), sampleRequest()); err != nil || !used.Load() {
			t.Errorf("IssueInvoice = %v, transport used = %v", err, used.Load())
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TAX_SERVICE_URL with credentials: neither a refused URL nor a failed
// call repeats them in its error (the consumer logs it).
func TestCredentialsInTheBaseURLAreNeverRepeated(t *testing.T) {
	const password = "s3cret-Pw"
	for _, bad := range []string{"ftp://ops:" + password + "@tax.local", "http://ops:" + password + "%zz@tax.local", "http://ops:" + password + "@tax.local/?q=1"} {
		if _, err := tax.New(bad, nil, tax.Options{}); err == nil || strings.Contains(err.Error(), password) {
			t.Errorf("New(%q) = %v: want an error without the password", bad, err)
		}
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	c, err := tax.New(strings.Replace(closed.URL, "://", "://ops:"+password+"@", 1), nil, tax.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, callErr := c.IssueInvoice(context.Background(), sampleRequest())
	healthErr := c.Healthy(context.Background())
	for _, err := range []error{callErr, healthErr} {
		if err == nil || strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "ops") {
			t.Errorf("error %v: want a failure that names neither the user nor the password", err)
		}
	}
}
