package payment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// EventType and Version are the only event type and version of the contract.
const (
	EventType = "payment.captured"
	Version   = 1
)

// DefaultMaxBytes is the largest body accepted unless configured otherwise;
// a payment.captured event is a few hundred bytes.
const DefaultMaxBytes = 16 << 10

// MaxAmountMinor bounds an amount (in minor units): 12 integer digits.
const MaxAmountMinor = 999_999_999_999_99

// Currencies the ledger keeps, all with two minor digits.
var currencies = map[string]bool{"EUR": true, "USD": true, "GBP": true, "BRL": true, "CHF": true}

// Grammars of the ids: bounded, ASCII, no '#' (ids become key parts).
var (
	paymentIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)
	accountIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	amountPattern    = regexp.MustCompile(`^(0|[1-9][0-9]{0,11})(\.[0-9]{1,2})?$`)
)

// Captured is a validated payment.captured event.
type Captured struct {
	PaymentID   string
	AccountID   string
	CapturedAt  time.Time // UTC
	AmountMinor int64     // in minor units (cents), > 0
	Currency    string
	// PayloadHash identifies the payment's content, the payload hash its
	// idempotency record holds ([PayloadHash] of the body): two events of
	// one paymentId with the same hash are the same payment delivered
	// twice; with different hashes, a conflicting duplicate.
	PayloadHash string
}

// InvalidError rejects a message that will never be valid. Its Invalid
// method is the behaviour homing's batch processor routes on.
type InvalidError struct {
	Reason string // one of the Reason constants
	Detail string // one human sentence
}

func (e *InvalidError) Error() string { return "invalid payment: " + e.Reason + ": " + e.Detail }

// Invalid returns the reason code and the detail.
func (e *InvalidError) Invalid() (reason, detail string) { return e.Reason, e.Detail }

func reject(reason, format string, args ...any) *InvalidError {
	return &InvalidError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// field is one member of the body: absent, a string, or another JSON value.
type field struct {
	present bool
	isStr   bool
	str     string
	raw     string
}

// text is the field for a detail.
func (f field) text() string {
	switch {
	case !f.present:
		return "absent"
	case f.isStr:
		return clip(f.str)
	default:
		return clip(f.raw)
	}
}

func member(obj map[string]json.RawMessage, name string) field {
	r, ok := obj[name]
	if !ok {
		return field{}
	}
	f := field{present: true, raw: string(r)}
	f.isStr = json.Unmarshal(r, &f.str) == nil && bytes.HasPrefix(bytes.TrimSpace(r), []byte(`"`))
	return f
}

// Parse validates body. group is the record's MessageGroupId on a FIFO
// queue, "" on a standard one; when set it must equal the accountId.
// maxBytes bounds the body (DefaultMaxBytes when <= 0). Every rejection is
// an *InvalidError; Parse returns no other error. It is pure.
func Parse(body []byte, group string, maxBytes int) (Captured, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if len(body) > maxBytes {
		return Captured{}, reject(ReasonPayloadTooLarge, "body is %d bytes, the limit is %d", len(body), maxBytes)
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return Captured{}, reject(ReasonNotJSON, "the body is not one JSON object")
	}
	if f := member(obj, "eventType"); !f.isStr || f.str != EventType {
		return Captured{}, reject(ReasonUnknownEventType, "eventType %s: want %q", f.text(), EventType)
	}
	if f := member(obj, "version"); f.raw != strconv.Itoa(Version) {
		return Captured{}, reject(ReasonUnknownVersion, "version %s: want %d", f.text(), Version)
	}
	var c Captured
	switch f := member(obj, "paymentId"); {
	case !f.present || f.isStr && f.str == "":
		return Captured{}, reject(ReasonMissingPaymentID, "paymentId is required")
	case !f.isStr || !paymentIDPattern.MatchString(f.str):
		return Captured{}, reject(ReasonBadPaymentID, "paymentId %s: want a string of 1..64 of A-Z a-z 0-9 . _ : - starting with a letter or digit", f.text())
	default:
		c.PaymentID = f.str
	}
	switch f := member(obj, "accountId"); {
	case !f.present || f.isStr && f.str == "":
		return Captured{}, reject(ReasonMissingAccountID, "accountId is required")
	case !f.isStr || !accountIDPattern.MatchString(f.str):
		return Captured{}, reject(ReasonBadAccountID, "accountId %s: want a string of 1..64 of A-Z a-z 0-9 . _ - starting with a letter or digit", f.text())
	default:
		c.AccountID = f.str
	}
	if group != "" && group != c.AccountID {
		return Captured{}, reject(ReasonGroupNotAccount, "message group %s is not the account %q: entries of one account would lose their order", clip(group), c.AccountID)
	}
	f := member(obj, "capturedAt")
	at, err := time.Parse(time.RFC3339, f.str)
	if !f.isStr || err != nil {
		return Captured{}, reject(ReasonBadCapturedAt, "capturedAt %s: want an RFC 3339 time", f.text())
	}
	c.CapturedAt = at.UTC()
	f = member(obj, "amount")
	if !f.isStr {
		return Captured{}, reject(ReasonBadAmount, "amount %s: want a decimal string such as \"120.50\" (no numbers: money is never a float)", f.text())
	}
	if c.AmountMinor, err = minorUnits(f.str); err != nil {
		return Captured{}, reject(ReasonBadAmount, "amount %s: %v", f.text(), err)
	}
	if f = member(obj, "currency"); !f.isStr || !currencies[f.str] {
		return Captured{}, reject(ReasonUnknownCurrency, "currency %s: want one of BRL, CHF, EUR, GBP, USD", f.text())
	}
	c.Currency = f.str
	hash, err := PayloadHash(body)
	if err != nil {
		// Decoded above, yet not I-JSON: a duplicate member, text that is
		// not valid UTF-8. Its content is not one.
		return Captured{}, reject(ReasonNotJSON, "the body is not I-JSON (RFC 7493), which its payload hash needs: %v", err)
	}
	c.PayloadHash = hash
	return c, nil
}

// minorUnits parses a positive decimal string with at most two decimals.
func minorUnits(s string) (int64, error) {
	if !amountPattern.MatchString(s) {
		return 0, errors.New("want a decimal string of up to 12 digits and 2 decimals")
	}
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "00")[:2]
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse: %w", err)
	}
	if n <= 0 {
		return 0, errors.New("want more than zero")
	}
	return n, nil
}

// Amount formats the amount as the event writes it ("120.50").
func (c Captured) Amount() string {
	return fmt.Sprintf("%d.%02d", c.AmountMinor/100, c.AmountMinor%100)
}

// clip quotes s, cut to 64 bytes on a rune boundary, for a detail.
func clip(s string) string {
	if len(s) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strconv.Quote(s)
}
