package tax

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/homingdlq/homing/internal/clip"
	"github.com/homingdlq/homing/internal/redact"
	"github.com/homingdlq/homing/internal/wait"
)

// Defaults applied by [New] to zero-valued [Options] fields.
const (
	DefaultMaxAttempts    = 4
	DefaultBaseDelay      = 100 * time.Millisecond
	DefaultMaxDelay       = 2 * time.Second
	DefaultBudget         = 10 * time.Second
	DefaultAttemptTimeout = 3 * time.Second
)

// SafetyMargin is kept free before the deadline of the context passed to
// [Client.IssueInvoice]: no attempt or wait runs past ctx's deadline minus
// SafetyMargin, so the caller still has time to report its result.
const SafetyMargin = 500 * time.Millisecond

// maxBodyBytes bounds how much of any response body is read.
const maxBodyBytes = 64 << 10

// MaxDetailBytes bounds the service's text quoted in an error and in
// [RejectedError].Detail, whether it came from the JSON message or the raw
// body: a cut detail is at most MaxDetailBytes plus "..." and stays valid
// UTF-8. The invalid lane's metadata relies on this bound.
const MaxDetailBytes = 512

// Item is one line of an order, as sent to the service. UnitPrice is a decimal
// string ("49.90"), never a float.
type Item struct {
	SKU       string `json:"sku"`
	Quantity  int    `json:"quantity"`
	UnitPrice string `json:"unitPrice"`
}

// InvoiceRequest is the body of POST /invoices. OrderID is also sent as the
// Idempotency-Key header and must not be empty. Total and the unit prices are
// decimal strings; the client sends them as given and does not validate them
// (the consumer validates orders before calling).
type InvoiceRequest struct {
	OrderID  string `json:"orderId"`
	TaxID    string `json:"taxId"`
	Currency string `json:"currency"`
	Total    string `json:"total"`
	Items    []Item `json:"items"`
}

// Invoice is the invoice issued for an order. Number is never empty in an
// Invoice returned without error.
type Invoice struct {
	Number string `json:"invoiceNumber"`
}

// RejectedError reports that the service refused the order for good (HTTP
// 422). Retrying cannot help: the caller sends the message to the invalid
// lane. Detail is the service's message, or the raw body text when the body
// carries no message, or empty.
type RejectedError struct {
	Status int
	Detail string
}

// Error describes the rejection, including Status and Detail.
func (e *RejectedError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("tax service rejected the order (HTTP %d)", e.Status)
	}
	return fmt.Sprintf("tax service rejected the order (HTTP %d): %s", e.Status, e.Detail)
}

// NotApplied reports true: the service answered that it refused the order,
// so it did not apply it. On its own, that is; an error of
// [Client.IssueInvoice] that wraps a RejectedError says for the whole call
// (an earlier attempt's answer may have been lost), see there.
func (e *RejectedError) NotApplied() bool { return true }

// Options tunes retries and injects time. The zero value gives the defaults;
// negative values are invalid.
type Options struct {
	// MaxAttempts is the most HTTP attempts one IssueInvoice call makes.
	// Default DefaultMaxAttempts.
	MaxAttempts int
	// BaseDelay is the backoff ceiling before the second attempt; it doubles
	// for each further attempt (full jitter picks a delay below the ceiling).
	// Default DefaultBaseDelay; must not exceed MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps every backoff delay. Default DefaultMaxDelay.
	MaxDelay time.Duration
	// Budget is the total time for all attempts and waits of one call; it is
	// further cut to ctx's deadline minus SafetyMargin. Default DefaultBudget.
	Budget time.Duration
	// AttemptTimeout bounds one attempt (request and response body), clamped
	// to the remaining budget. Default DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// Rand returns the jitter in [0,1); values outside are clamped. Default
	// math/rand/v2.Float64. Must be safe for concurrent use if the Client is
	// shared.
	Rand func() float64
	// Sleep waits d or until ctx is done, returning ctx.Err() in that case.
	// Default a timer honouring ctx. Tests inject one that does not wait.
	// Must be safe for concurrent use if the Client is shared.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now tells the time used to account for the budget. Default time.Now.
	// Tests inject a fake clock that their Sleep advances. Must be safe for
	// concurrent use if the Client is shared.
	Now func() time.Time
}

// Client calls the tax and invoice service. Build it with [New]. A Client is
// immutable and safe for concurrent use by multiple goroutines (provided the
// injected Options functions and *http.Client are).
type Client struct {
	invoicesURL string
	healthURL   string
	hc          *http.Client
	opts        Options
}

// New returns a Client for the service at baseURL, which must be an absolute
// http or https URL with a host and no query or fragment. hc is used for every
// request; when nil, New uses a client with its own pooled transport that does
// not follow redirects (a redirected POST would change meaning) and has no
// overall timeout (each attempt has its own). New fills zero Options with the
// defaults and returns an error describing every invalid field or URL.
func New(baseURL string, hc *http.Client, opts Options) (*Client, error) {
	var problems []error
	u, err := redact.Parse(baseURL)
	switch {
	case err != nil:
		problems = append(problems, fmt.Errorf("base URL: %w", err))
	case u.Scheme != "http" && u.Scheme != "https":
		problems = append(problems, fmt.Errorf("base URL %q: scheme must be http or https", redact.URL(baseURL)))
	case u.Host == "" || u.Opaque != "":
		problems = append(problems, fmt.Errorf("base URL %q: must be absolute with a host", redact.URL(baseURL)))
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		problems = append(problems, fmt.Errorf("base URL %q: must not have a query or fragment", redact.URL(baseURL)))
	}

	opts, optProblems := opts.withDefaults()
	problems = append(problems, optProblems...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("new tax client: %w", errors.Join(problems...))
	}

	if hc == nil {
		hc = defaultHTTPClient()
	}
	return &Client{
		invoicesURL: u.JoinPath("invoices").String(),
		healthURL:   u.JoinPath("health").String(),
		hc:          hc,
		opts:        opts,
	}, nil
}

func (o Options) withDefaults() (Options, []error) {
	var problems []error
	negative := func(name string, bad bool) {
		if bad {
			problems = append(problems, fmt.Errorf("option %s must not be negative", name))
		}
	}
	negative("MaxAttempts", o.MaxAttempts < 0)
	negative("BaseDelay", o.BaseDelay < 0)
	negative("MaxDelay", o.MaxDelay < 0)
	negative("Budget", o.Budget < 0)
	negative("AttemptTimeout", o.AttemptTimeout < 0)

	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.BaseDelay == 0 {
		o.BaseDelay = DefaultBaseDelay
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Sleep == nil {
		o.Sleep = wait.Sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BaseDelay > o.MaxDelay && o.BaseDelay > 0 && o.MaxDelay > 0 {
		problems = append(problems, fmt.Errorf("option BaseDelay %s exceeds MaxDelay %s", o.BaseDelay, o.MaxDelay))
	}
	return o, problems
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 16
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// IssueInvoice asks the service to calculate taxes and issue the invoice of
// req, retrying transient failures within the budget (see the package doc).
//
// Errors:
//   - a wrapped *RejectedError when the service answers 422 (after exactly one
//     attempt for that answer); find it with errors.As;
//   - an error wrapping ctx.Err() when ctx is cancelled or expires;
//   - otherwise an error wrapping the last cause and saying how many attempts
//     were made, when attempts or budget run out, Retry-After exceeds the
//     budget, or the service answers a status retrying cannot fix now (400,
//     404...); also when req.OrderID is empty or not a valid header value.
//
// Every error but *RejectedError is transient for the caller.
//
// Every error also says whether the service may have applied the call: it
// has a NotApplied() bool method, found with errors.As (the idempotent
// receiver's behaviour interface). NotApplied is true only when no attempt
// can have applied the request: each one was answered with a status that
// refuses it (see [RejectedError.NotApplied] and the package doc), or never
// left (the connection could not be made, the call was not attempted). It
// is false, the call ambiguous, when any attempt's answer was lost (a
// timeout, a connection reset after the request may have been written, the
// context done during an attempt), or said nothing definite (502 and 504
// come from a gateway, 409 says the key is in flight, another 2xx than 200
// or 201, an unreadable 200 or 201): the service may have applied it, and
// only a lookup by the key can tell. IssueInvoice is safe for concurrent
// use.
func (c *Client) IssueInvoice(ctx context.Context, req InvoiceRequest) (Invoice, error) {
	if err := checkOrderID(req.OrderID); err != nil {
		return Invoice{}, &callError{err: fmt.Errorf("issue invoice for %q: %w", req.OrderID, err), notApplied: true}
	}
	if req.Items == nil {
		req.Items = []Item{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Invoice{}, &callError{err: fmt.Errorf("issue invoice for %s: encode request: %w", req.OrderID, err), notApplied: true}
	}
	id := req.OrderID
	var inv Invoice
	mayHaveApplied, err := c.retry(ctx, "issue invoice for "+id, func(ctx context.Context, timeout time.Duration) (time.Duration, error) {
		var retryAfter time.Duration
		var err error
		inv, retryAfter, err = c.attempt(ctx, timeout, id, body)
		return retryAfter, err
	})
	if err != nil {
		return Invoice{}, &callError{err: err, notApplied: !mayHaveApplied}
	}
	return inv, nil
}

// callError is an error of [Client.IssueInvoice]: its cause, and whether
// the service certainly did not apply the call (every attempt considered).
type callError struct {
	err        error
	notApplied bool
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

// NotApplied reports whether the service certainly did not apply the call;
// false means it may have (see [Client.IssueInvoice]).
func (e *callError) NotApplied() bool { return e.notApplied }

// refused reports whether the error of one attempt proves that attempt was
// not applied: the service answered with a status that refuses it
// (NotApplied), or the request never left (the connection could not be
// dialled). Any other failure may have happened after the request was
// written.
func refused(err error) bool {
	var na interface{ NotApplied() bool }
	if errors.As(err, &na) {
		return na.NotApplied()
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// retry runs attempt under the package's retry discipline (see the package
// doc): up to MaxAttempts attempts within the budget and ctx's deadline minus
// SafetyMargin, full-jitter backoff or the service's Retry-After between
// them, no retry of a *RejectedError or of a status retrying cannot fix.
// attempt returns the Retry-After the service asked for (-1: none). Errors
// start with what ("issue invoice for ORD-1"). mayHaveApplied is true when
// an attempt failed in a way that does not prove it was not applied (see
// refused): its request may have taken effect.
func (c *Client) retry(ctx context.Context, what string, attempt func(ctx context.Context, timeout time.Duration) (retryAfter time.Duration, err error)) (mayHaveApplied bool, _ error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%s: not attempted: %w", what, err)
	}

	end := c.opts.Now().Add(c.opts.Budget)
	budgetNote := fmt.Sprintf("retry budget of %s", c.opts.Budget)
	if dl, ok := ctx.Deadline(); ok {
		if ctxEnd := c.opts.Now().Add(time.Until(dl) - SafetyMargin); ctxEnd.Before(end) {
			end = ctxEnd
			budgetNote = fmt.Sprintf("time before the context deadline minus %s", SafetyMargin)
		}
	}

	var lastErr error
	for n := 1; ; n++ {
		remaining := end.Sub(c.opts.Now())
		if remaining <= 0 {
			if lastErr == nil {
				return false, fmt.Errorf("%s: not attempted: no %s left", what, budgetNote)
			}
			return mayHaveApplied, fmt.Errorf("%s: gave up after %s, %s exhausted: %w",
				what, attempts(n-1), budgetNote, lastErr)
		}

		retryAfter, err := attempt(ctx, min(c.opts.AttemptTimeout, remaining))
		if err == nil {
			return mayHaveApplied, nil
		}
		lastErr = err
		if !refused(err) {
			mayHaveApplied = true
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return mayHaveApplied, fmt.Errorf("%s: stopped after %s: %w (last error: %v)",
				what, attempts(n), ctxErr, lastErr)
		}
		var rejected *RejectedError
		if errors.As(err, &rejected) {
			return mayHaveApplied, fmt.Errorf("%s: %w", what, err)
		}
		var se *statusError
		if errors.As(err, &se) && !se.retryable() {
			return mayHaveApplied, fmt.Errorf("%s: not retried after %s, retrying will not help now: %w",
				what, attempts(n), err)
		}
		if n >= c.opts.MaxAttempts {
			return mayHaveApplied, fmt.Errorf("%s: gave up after %s: %w", what, attempts(n), err)
		}

		delay := c.backoff(n)
		if retryAfter >= 0 {
			delay = retryAfter
		}
		if left := end.Sub(c.opts.Now()); delay >= left {
			if retryAfter >= 0 {
				return mayHaveApplied, fmt.Errorf("%s: gave up after %s, Retry-After %s exceeds the %s left: %w",
					what, attempts(n), retryAfter, left.Round(time.Millisecond), err)
			}
			return mayHaveApplied, fmt.Errorf("%s: gave up after %s, %s exhausted: %w",
				what, attempts(n), budgetNote, err)
		}
		if err := c.opts.Sleep(ctx, delay); err != nil {
			return mayHaveApplied, fmt.Errorf("%s: stopped after %s while waiting to retry: %w (last error: %v)",
				what, attempts(n), err, lastErr)
		}
	}
}

func checkOrderID(id string) error {
	if id == "" {
		return errors.New("empty order ID")
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return errors.New("order ID has control characters and cannot be an Idempotency-Key")
		}
	}
	return nil
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// backoff returns the full-jitter delay after the given failed attempt
// (1-based): a random duration below min(MaxDelay, BaseDelay*2^(attempt-1)).
func (c *Client) backoff(attempt int) time.Duration {
	ceiling := c.opts.BaseDelay
	for i := 1; i < attempt && ceiling < c.opts.MaxDelay; i++ {
		if ceiling > c.opts.MaxDelay/2 {
			ceiling = c.opts.MaxDelay // doubling would pass MaxDelay (or overflow)
			break
		}
		ceiling *= 2
	}
	r := min(max(c.opts.Rand(), 0), 1)
	return time.Duration(r * float64(ceiling))
}

// attempt makes one POST /invoices. retryAfter is the delay the service asked
// for, or -1 when it did not ask.
func (c *Client) attempt(ctx context.Context, timeout time.Duration, id string, body []byte) (_ Invoice, retryAfter time.Duration, _ error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.invoicesURL, bytes.NewReader(body))
	if err != nil {
		return Invoice{}, -1, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", id)

	resp, data, err := c.do(req)
	if err != nil {
		if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return Invoice{}, -1, fmt.Errorf("attempt timed out after %s: %w", timeout, err)
		}
		return Invoice{}, -1, err
	}

	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated:
		inv, err := readInvoice(resp, data)
		return inv, -1, err
	case http.StatusUnprocessableEntity:
		return Invoice{}, -1, &RejectedError{Status: resp.StatusCode, Detail: detail(data)}
	}
	return Invoice{}, parseRetryAfter(resp.Header.Get("Retry-After")),
		&statusError{status: resp.StatusCode, text: resp.Status, detail: detail(data)}
}

// do sends req and returns the response with at most maxBodyBytes of its
// body read; the body is always closed.
func (c *Client) do(req *http.Request) (*http.Response, []byte, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL) // Go keeps the user name
		}
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read %s response body: %w", req.Method, redact.URL(req.URL.String()), resp.Status, err)
	}
	return resp, data, nil
}

// detail extracts the service's message from an error body, falling back to
// the (shortened) raw text.
func detail(data []byte) string {
	var m struct {
		Message string `json:"message"`
	}
	text := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &m) == nil && strings.TrimSpace(m.Message) != "" {
		text = strings.TrimSpace(m.Message)
	}
	return clip.String(text, MaxDetailBytes)
}

// parseRetryAfter reads a delta-seconds Retry-After value; -1 when absent or
// in another form.
func parseRetryAfter(v string) time.Duration {
	secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || secs < 0 {
		return -1
	}
	const maxSecs = int64(1<<63-1) / int64(time.Second)
	return time.Duration(min(secs, maxSecs)) * time.Second
}

// statusError is an HTTP answer that is neither success nor rejection.
type statusError struct {
	status int
	text   string // "503 Service Unavailable"
	detail string
}

func (e *statusError) Error() string {
	if e.detail == "" {
		return "tax service answered " + e.text
	}
	return "tax service answered " + e.text + ": " + e.detail
}

// FailureClass is "tax-service-<status>", the failure class a consumer
// records for the order (batch.Failure).
func (e *statusError) FailureClass() string { return "tax-service-" + strconv.Itoa(e.status) }

// NotApplied reports whether the answer proves the request was not applied:
// any status from 300 up, but 409 (under the Idempotency-Key convention, a
// request with the same key is still being processed: it may yet apply) and
// 502 and 504 (a gateway's answer: the service behind it may have applied
// the request and its answer been lost). Another 2xx than 200 or 201 (202
// Accepted...) may have been applied.
func (e *statusError) NotApplied() bool {
	switch e.status {
	case http.StatusConflict, http.StatusBadGateway, http.StatusGatewayTimeout:
		return false
	}
	return e.status >= 300
}

// retryable reports whether retrying in-process may help.
func (e *statusError) retryable() bool {
	return e.status >= 500 || e.status == http.StatusTooManyRequests || e.status == http.StatusRequestTimeout
}

// LookupInvoice asks the service whether it applied the Idempotency-Key key
// (the orderId IssueInvoice sends): GET {baseURL}/invoices/{key}, the key
// path-escaped. It returns the invoice and applied=true on 200 with an
// invoiceNumber, applied=false on 404 (never applied), and an error
// otherwise, with the retry discipline of IssueInvoice: 408, 429 and 5xx are
// retried within the budget and ctx's deadline minus SafetyMargin, any other
// status is not retried. Every error is transient for the caller: it must
// never read an error as "not applied". LookupInvoice is safe for
// concurrent use.
func (c *Client) LookupInvoice(ctx context.Context, key string) (inv Invoice, applied bool, err error) {
	what := "look up invoice " + key
	if err := checkOrderID(key); err != nil {
		return Invoice{}, false, fmt.Errorf("look up invoice %q: %w", key, err)
	}
	u := c.invoicesURL + "/" + url.PathEscape(key)
	_, err = c.retry(ctx, what, func(ctx context.Context, timeout time.Duration) (time.Duration, error) {
		var retryAfter time.Duration
		var err error
		inv, applied, retryAfter, err = c.lookupAttempt(ctx, timeout, u)
		return retryAfter, err
	})
	if err != nil {
		return Invoice{}, false, err
	}
	return inv, applied, nil
}

// lookupAttempt makes one GET of an invoice by key.
func (c *Client) lookupAttempt(ctx context.Context, timeout time.Duration, u string) (_ Invoice, applied bool, retryAfter time.Duration, _ error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, u, nil)
	if err != nil {
		return Invoice{}, false, -1, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, data, err := c.do(req)
	if err != nil {
		if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return Invoice{}, false, -1, fmt.Errorf("attempt timed out after %s: %w", timeout, err)
		}
		return Invoice{}, false, -1, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		inv, err := readInvoice(resp, data)
		return inv, err == nil, -1, err
	case http.StatusNotFound:
		return Invoice{}, false, -1, nil
	}
	return Invoice{}, false, parseRetryAfter(resp.Header.Get("Retry-After")),
		&statusError{status: resp.StatusCode, text: resp.Status, detail: detail(data)}
}

// readInvoice decodes a success body: a JSON object with a non-blank
// invoiceNumber, else a protocol error (transient).
func readInvoice(resp *http.Response, data []byte) (Invoice, error) {
	var inv Invoice
	if err := json.Unmarshal(data, &inv); err != nil {
		return Invoice{}, fmt.Errorf("tax service answered %s with an unreadable body: %w", resp.Status, err)
	}
	if strings.TrimSpace(inv.Number) == "" {
		return Invoice{}, fmt.Errorf("tax service answered %s without an invoiceNumber", resp.Status)
	}
	return inv, nil
}

// Healthy probes GET {baseURL}/health once, without retry, within
// Options.AttemptTimeout (and ctx). It returns nil for any 2xx answer, and
// otherwise an error naming the status or the transport failure (wrapping
// ctx.Err() when ctx is done). Healthy is safe for concurrent use.
func (c *Client) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.healthURL, nil)
	if err != nil {
		return fmt.Errorf("check tax service health: %w", err)
	}
	resp, data, err := c.do(req)
	if err != nil {
		return fmt.Errorf("check tax service health: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("check tax service health: %w", &statusError{status: resp.StatusCode, text: resp.Status, detail: detail(data)})
	}
	return nil
}
