package order

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/homingdlq/homing/internal/settings"
)

// EventType is the only eventType Parse accepts.
const EventType = "order.created"

// Version is the only version of the order.created contract Parse accepts.
const Version = 1

// DefaultMaxBytes is the body size limit Parse applies when given maxBytes <= 0:
// the consumer's MAX_PAYLOAD_BYTES default as package settings declares it
// (256 KiB, the smallest SQS payload limit in use).
const DefaultMaxBytes = settings.DefaultMaxPayloadBytes

// Order is a validated order.created event.
type Order struct {
	// EventType is always "order.created".
	EventType string
	// Version is always 1.
	Version int
	// OrderID is the orderId with surrounding white space removed; it always
	// satisfies CheckOrderID.
	OrderID string
	// CreatedAt is the createdAt timestamp with its UTC offset, or the zero
	// time when the field is absent.
	CreatedAt time.Time
	Customer  Customer
	// Items has at least one element.
	Items []Item
	// Total is the sum of Quantity × UnitPrice over Items, with the
	// currency's minor digits.
	Total Money
	// Currency is one of the codes CurrencyDigits supports.
	Currency string
}

// Customer is the buyer of an Order.
type Customer struct {
	Name string
	// TaxID is the CPF or CNPJ exactly as sent (punctuation kept); it always
	// satisfies ValidTaxID.
	TaxID string
	Email string
}

// Item is one line of an Order.
type Item struct {
	SKU string
	// Quantity is at least 1.
	Quantity int
	// UnitPrice is non-negative, with the currency's minor digits.
	UnitPrice Money
}

// Parse decodes and validates one order.created body (see the package
// documentation for the rules and the order in which they are checked).
// maxBytes <= 0 means DefaultMaxBytes.
//
// Every failure is an *InvalidError (check it with errors.As) whose Reason is
// in Reasons and whose Detail says what is wrong, naming the field when there
// is one (for example "items[0].quantity: want a number, got a string"), and
// never repeating more than a few dozen bytes of the payload; the first failed
// rule wins, so the same body always gives the same error. Parse never panics
// on any input and is safe for concurrent use.
func Parse(body []byte, maxBytes int) (Order, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if len(body) > maxBytes {
		return Order{}, Invalid(ReasonPayloadTooLarge,
			fmt.Sprintf("payload is %d bytes, limit is %d", len(body), maxBytes))
	}
	top, err := decodeBody(body)
	if err != nil {
		return Order{}, err
	}
	w, err := readWire(top)
	if err != nil {
		return Order{}, err
	}
	return w.validate()
}

// object is a decoded JSON object whose values are left undecoded.
type object = map[string]json.RawMessage

// moneyField is a money value as sent: a string (the usual case) or a number
// (always invalid, reported in the money step rather than the type step).
type moneyField struct {
	text     string // the string, or the number literal when isNumber
	present  bool
	isNumber bool
}

// wire is a body that passed the type checks, before the semantic checks.
type wire struct {
	eventType string
	version   string // number literal; "" when absent
	orderID   string
	// orderIDUTF8 is false when the orderId's JSON text is not valid UTF-8:
	// decoding would have replaced the bad bytes with U+FFFD.
	orderIDUTF8 bool
	createdAt   time.Time
	hasCustomer bool
	customer    Customer
	items       []wireItem
	total       moneyField
	currency    string
}

type wireItem struct {
	sku       string
	quantity  string // number literal; "" when absent
	unitPrice moneyField
}

// decodeBody checks that body is one JSON object and decodes its top level.
func decodeBody(body []byte) (object, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, Invalid(ReasonMalformedJSON, "body is empty")
	}
	if trimmed[0] != '{' {
		if json.Valid(trimmed) {
			return nil, Invalid(ReasonMalformedJSON, "want a JSON object, got "+kindName(trimmed))
		}
		return nil, Invalid(ReasonMalformedJSON, "not valid JSON")
	}
	var top object
	if err := json.Unmarshal(body, &top); err != nil {
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			return nil, Invalid(ReasonMalformedJSON, fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, se.Error()))
		}
		return nil, Invalid(ReasonMalformedJSON, "not valid JSON: "+err.Error())
	}
	return top, nil
}

// readWire applies the type checks, field by field in a fixed order.
func readWire(top object) (*wire, error) {
	w := &wire{}
	var err error
	if w.eventType, err = stringField(top, "eventType", "eventType"); err != nil {
		return nil, err
	}
	if w.version, err = numberField(top, "version", "version"); err != nil {
		return nil, err
	}
	if w.orderID, err = stringField(top, "orderId", "orderId"); err != nil {
		return nil, err
	}
	// Checked on the raw bytes: the decoder turns invalid UTF-8 into U+FFFD,
	// so two different ids would collapse into one.
	raw, _ := field(top, "orderId")
	w.orderIDUTF8 = utf8.Valid(raw)
	createdAt, err := stringField(top, "createdAt", "createdAt")
	if err != nil {
		return nil, err
	}
	if createdAt != "" {
		if w.createdAt, err = time.Parse(time.RFC3339, createdAt); err != nil {
			return nil, Invalid(ReasonInvalidField,
				"createdAt: want an RFC 3339 timestamp such as \"2026-11-29T10:00:00Z\", got "+quote(createdAt))
		}
	}
	if raw, ok := field(top, "customer"); ok {
		cust, err := objectValue(raw, "customer")
		if err != nil {
			return nil, err
		}
		w.hasCustomer = true
		if w.customer.Name, err = stringField(cust, "name", "customer.name"); err != nil {
			return nil, err
		}
		if w.customer.TaxID, err = stringField(cust, "taxId", "customer.taxId"); err != nil {
			return nil, err
		}
		if w.customer.Email, err = stringField(cust, "email", "customer.email"); err != nil {
			return nil, err
		}
	}
	if raw, ok := field(top, "items"); ok {
		if kind(raw) != '[' {
			return nil, wrongType("items", "an array", raw)
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, Invalid(ReasonInvalidField, "items: "+err.Error())
		}
		w.items = make([]wireItem, len(elems))
		for i, elem := range elems {
			path := "items[" + strconv.Itoa(i) + "]"
			it, err := objectValue(elem, path)
			if err != nil {
				return nil, err
			}
			if w.items[i].sku, err = stringField(it, "sku", path+".sku"); err != nil {
				return nil, err
			}
			if w.items[i].quantity, err = numberField(it, "quantity", path+".quantity"); err != nil {
				return nil, err
			}
			if w.items[i].unitPrice, err = moneyValue(it, "unitPrice", path+".unitPrice"); err != nil {
				return nil, err
			}
		}
	}
	if w.total, err = moneyValue(top, "total", "total"); err != nil {
		return nil, err
	}
	if w.currency, err = stringField(top, "currency", "currency"); err != nil {
		return nil, err
	}
	return w, nil
}

// validate applies the semantic checks, in the documented order.
func (w *wire) validate() (Order, error) {
	if w.eventType != EventType {
		if w.eventType == "" {
			return Order{}, Invalid(ReasonUnknownEventType, "eventType is missing, want \""+EventType+"\"")
		}
		return Order{}, Invalid(ReasonUnknownEventType,
			fmt.Sprintf("eventType %s is not supported, want %q", quote(w.eventType), EventType))
	}
	if w.version != strconv.Itoa(Version) {
		if w.version == "" {
			return Order{}, Invalid(ReasonUnknownVersion, fmt.Sprintf("version is missing, want %d", Version))
		}
		return Order{}, Invalid(ReasonUnknownVersion,
			fmt.Sprintf("version %s is not supported, want %d", trunc(w.version), Version))
	}
	orderID := strings.TrimSpace(w.orderID)
	if orderID == "" {
		return Order{}, Invalid(ReasonMissingOrderID, "orderId is missing or blank")
	}
	if !w.orderIDUTF8 {
		return Order{}, Invalid(ReasonInvalidOrderID, "orderId is not valid UTF-8")
	}
	if detail := CheckOrderID(orderID); detail != "" {
		return Order{}, Invalid(ReasonInvalidOrderID, detail)
	}
	if !w.hasCustomer {
		return Order{}, Invalid(ReasonMissingTaxID, "customer is missing, so is customer.taxId")
	}
	if strings.TrimSpace(w.customer.TaxID) == "" {
		return Order{}, Invalid(ReasonMissingTaxID, "customer.taxId is missing or blank")
	}
	if !ValidTaxID(w.customer.TaxID) {
		// The tax id is personal data: the detail does not echo it.
		return Order{}, Invalid(ReasonInvalidTaxID, "customer.taxId is neither a valid CPF nor a valid CNPJ")
	}
	if len(w.items) == 0 {
		return Order{}, Invalid(ReasonNoItems, "items is missing or empty")
	}
	items := make([]Item, len(w.items))
	for i, it := range w.items {
		q, err := quantity(it.quantity, "items["+strconv.Itoa(i)+"].quantity")
		if err != nil {
			return Order{}, err
		}
		items[i] = Item{SKU: it.sku, Quantity: q}
	}
	digits, known := CurrencyDigits(w.currency)
	for i, it := range w.items {
		price, err := money(it.unitPrice, "items["+strconv.Itoa(i)+"].unitPrice", digits, known)
		if err != nil {
			return Order{}, err
		}
		items[i].UnitPrice = price
	}
	total, err := money(w.total, "total", digits, known)
	if err != nil {
		return Order{}, err
	}
	if !known {
		if w.currency == "" {
			return Order{}, Invalid(ReasonUnknownCurrency, "currency is missing")
		}
		return Order{}, Invalid(ReasonUnknownCurrency, fmt.Sprintf("currency %s is not supported", quote(w.currency)))
	}
	sum := Money{Digits: digits}
	for i, it := range items {
		line, ok := it.UnitPrice.Mul(int64(it.Quantity))
		if !ok {
			return Order{}, Invalid(ReasonInvalidMoney, fmt.Sprintf("items[%d]: quantity × unitPrice is too large", i))
		}
		if sum, ok = sum.Add(line); !ok {
			return Order{}, Invalid(ReasonInvalidMoney, "the sum of the items is too large")
		}
	}
	if total != sum {
		return Order{}, Invalid(ReasonTotalMismatch,
			fmt.Sprintf("total %s is not the sum of the items %s", total, sum))
	}
	return Order{
		EventType: w.eventType,
		Version:   Version,
		OrderID:   orderID,
		CreatedAt: w.createdAt,
		Customer:  w.customer,
		Items:     items,
		Total:     total,
		Currency:  w.currency,
	}, nil
}

// quantity parses a quantity number literal ("" when absent).
func quantity(lit, path string) (int, error) {
	if lit == "" {
		return 0, Invalid(ReasonInvalidQuantity, path+" is missing")
	}
	if strings.ContainsAny(lit, ".eE") {
		return 0, Invalid(ReasonInvalidQuantity, fmt.Sprintf("%s must be a whole number, got %s", path, trunc(lit)))
	}
	q, err := strconv.Atoi(lit)
	if err != nil {
		if lit[0] == '-' {
			return 0, Invalid(ReasonInvalidQuantity, fmt.Sprintf("%s must be at least 1, got %s", path, trunc(lit)))
		}
		return 0, Invalid(ReasonInvalidQuantity, fmt.Sprintf("%s is too large: %s", path, trunc(lit)))
	}
	if q < 1 {
		return 0, Invalid(ReasonInvalidQuantity, fmt.Sprintf("%s must be at least 1, got %s", path, lit))
	}
	return q, nil
}

// money parses a money field with the currency's digits. When the currency is
// not known, it checks only the syntax (the currency check comes next).
func money(f moneyField, path string, digits int, known bool) (Money, error) {
	switch {
	case !f.present:
		return Money{}, Invalid(ReasonInvalidMoney, path+" is missing")
	case f.isNumber:
		return Money{}, Invalid(ReasonInvalidMoney,
			fmt.Sprintf("%s: money must be a decimal string such as \"49.90\", got the JSON number %s", path, trunc(f.text)))
	case !known:
		if _, _, detail := splitDecimal(f.text); detail != "" {
			return Money{}, Invalid(ReasonInvalidMoney, path+": "+detail)
		}
		return Money{}, nil
	}
	m, detail := parseMoney(f.text, digits)
	if detail != "" {
		return Money{}, Invalid(ReasonInvalidMoney, path+": "+detail)
	}
	return m, nil
}

// field returns obj[key], with absent and null both reported as absent.
func field(obj object, key string) (json.RawMessage, bool) {
	raw, ok := obj[key]
	if !ok || kind(raw) == 'n' {
		return nil, false
	}
	return raw, true
}

// stringField returns the string at obj[key], "" when absent or null.
func stringField(obj object, key, path string) (string, error) {
	raw, ok := field(obj, key)
	if !ok {
		return "", nil
	}
	if kind(raw) != '"' {
		return "", wrongType(path, "a string", raw)
	}
	if raw = bytes.TrimSpace(raw); len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		// Already validated JSON without escapes: the text between the quotes is the value.
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", Invalid(ReasonInvalidField, path+": "+err.Error())
	}
	return s, nil
}

// numberField returns the number literal at obj[key], "" when absent or null.
func numberField(obj object, key, path string) (string, error) {
	raw, ok := field(obj, key)
	if !ok {
		return "", nil
	}
	if kind(raw) != '0' {
		return "", wrongType(path, "a number", raw)
	}
	return string(bytes.TrimSpace(raw)), nil
}

// moneyValue returns the money field at obj[key]: a string, or a number to be
// rejected in the money step. Any other type is an invalid field.
func moneyValue(obj object, key, path string) (moneyField, error) {
	raw, ok := field(obj, key)
	if !ok {
		return moneyField{}, nil
	}
	switch kind(raw) {
	case '0':
		return moneyField{text: string(bytes.TrimSpace(raw)), present: true, isNumber: true}, nil
	case '"':
		s, err := stringField(obj, key, path)
		return moneyField{text: s, present: true}, err
	}
	return moneyField{}, wrongType(path, "a decimal string", raw)
}

// objectValue decodes raw as a JSON object.
func objectValue(raw json.RawMessage, path string) (object, error) {
	if kind(raw) != '{' {
		return nil, wrongType(path, "an object", raw)
	}
	var obj object
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, Invalid(ReasonInvalidField, path+": "+err.Error())
	}
	return obj, nil
}

func wrongType(path, want string, raw json.RawMessage) *InvalidError {
	return Invalid(ReasonInvalidField, path+": want "+want+", got "+kindName(raw))
}

// kind classifies a JSON value by its first byte: '{', '[', '"', 't', 'f',
// 'n', or '0' for a number; 0 when empty.
func kind(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return '0'
	default:
		return c
	}
}

func kindName(raw []byte) string {
	switch kind(raw) {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '0':
		return "a number"
	}
	return "nothing"
}

// maxQuoted is the longest value, in bytes, that a detail repeats.
const maxQuoted = 40

// trunc shortens s to at most maxQuoted bytes, on a rune boundary, marking the cut.
func trunc(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// quote is strconv.Quote of a value, shortened to at most maxQuoted bytes.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	t := trunc(s)
	return strconv.Quote(t[:len(t)-3]) + "..."
}

// hashDomain starts the canonical encoding, so the hash of an order can never
// collide with the hash of another kind of record.
const hashDomain = "homing/order.created/v1\x00"

// Hash returns the hex SHA-256 of a canonical encoding of the order: every
// field in a fixed order, strings length-prefixed, money as minor units and
// digits, CreatedAt as its UTC instant. Two bodies that differ only in white
// space, key order, unknown fields, number or string escaping, or the UTC
// offset of createdAt hash the same; any other change to a validated field
// (including the tax id's punctuation, which is kept as sent) changes it.
// It is meant for orders returned by Parse, and is safe for concurrent use.
func (o Order) Hash() string {
	b := make([]byte, 0, 256)
	b = append(b, hashDomain...)
	b = appendString(b, o.EventType)
	b = binary.AppendVarint(b, int64(o.Version))
	b = appendString(b, o.OrderID)
	if o.CreatedAt.IsZero() {
		b = appendString(b, "")
	} else {
		b = appendString(b, o.CreatedAt.UTC().Format(time.RFC3339Nano))
	}
	b = appendString(b, o.Customer.Name)
	b = appendString(b, o.Customer.TaxID)
	b = appendString(b, o.Customer.Email)
	b = binary.AppendUvarint(b, uint64(len(o.Items)))
	for _, it := range o.Items {
		b = appendString(b, it.SKU)
		b = binary.AppendVarint(b, int64(it.Quantity))
		b = appendMoney(b, it.UnitPrice)
	}
	b = appendMoney(b, o.Total)
	b = appendString(b, o.Currency)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendMoney(b []byte, m Money) []byte {
	b = binary.AppendVarint(b, m.Minor)
	return binary.AppendVarint(b, int64(m.Digits))
}
