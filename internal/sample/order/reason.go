package order

import "github.com/homingdlq/homing/invalid"

// Reason is a stable, machine-readable code for why a message is invalid.
// The values are part of the contract with operators, dashboards and the
// invalid queue: never rename one, only add new ones.
type Reason string

// The reason codes. Parse produces every code except ReasonConflictingDuplicate
// and ReasonRejectedByTaxService, which belong to other layers and are listed
// here so the catalogue is in one place.
const (
	// ReasonMalformedJSON: the body is not JSON, or not a JSON object; or,
	// from invoicing, not I-JSON (a duplicate member name, text that is not
	// valid UTF-8), which its payload hash (RFC 8785) refuses.
	ReasonMalformedJSON Reason = invalid.ReasonMalformedJSON
	// ReasonInvalidField: a known field has the wrong JSON type or an
	// unparsable value (for example createdAt not RFC 3339).
	ReasonInvalidField Reason = "invalid-field"
	// ReasonUnknownEventType: eventType is absent or not "order.created".
	ReasonUnknownEventType Reason = "unknown-event-type"
	// ReasonUnknownVersion: version is absent or not 1.
	ReasonUnknownVersion Reason = "unknown-version"
	// ReasonMissingOrderID: orderId is absent or blank.
	ReasonMissingOrderID Reason = "missing-order-id"
	// ReasonMissingTaxID: customer or customer.taxId is absent, or taxId is blank.
	ReasonMissingTaxID Reason = "missing-tax-id"
	// ReasonInvalidTaxID: customer.taxId is neither a valid CPF nor a valid CNPJ.
	ReasonInvalidTaxID Reason = "invalid-tax-id"
	// ReasonNoItems: items is absent or empty.
	ReasonNoItems Reason = "no-items"
	// ReasonInvalidQuantity: a quantity is absent, not a whole number, or < 1.
	ReasonInvalidQuantity Reason = "invalid-quantity"
	// ReasonInvalidMoney: a money value is absent, not a decimal string with at
	// most the currency's minor digits, negative, or too large to add up exactly.
	ReasonInvalidMoney Reason = "invalid-money"
	// ReasonTotalMismatch: total is not the sum of quantity × unitPrice.
	ReasonTotalMismatch Reason = "total-mismatch"
	// ReasonUnknownCurrency: currency is absent or not supported (see CurrencyDigits).
	ReasonUnknownCurrency Reason = "unknown-currency"
	// ReasonPayloadTooLarge: the body is longer than the size limit.
	ReasonPayloadTooLarge Reason = invalid.ReasonPayloadTooLarge
	// ReasonConflictingDuplicate: the same orderId was seen before with a
	// different payload (used by the idempotency layer).
	ReasonConflictingDuplicate Reason = invalid.ReasonConflictingDuplicate
	// ReasonRejectedByTaxService: the tax service refused the order as invalid
	// (used by the tax client layer).
	ReasonRejectedByTaxService Reason = "rejected-by-tax-service"
	// ReasonInvalidOrderID: orderId is present but outside the grammar of
	// CheckOrderID: too long, not valid UTF-8 (or a lone surrogate escape),
	// or with a character outside the allowed set.
	ReasonInvalidOrderID Reason = "invalid-order-id"
)

// Reasons returns every reason code, in a stable order (for docs, metrics and
// tests). The caller owns the returned slice.
func Reasons() []Reason {
	return []Reason{
		ReasonMalformedJSON,
		ReasonInvalidField,
		ReasonUnknownEventType,
		ReasonUnknownVersion,
		ReasonMissingOrderID,
		ReasonMissingTaxID,
		ReasonInvalidTaxID,
		ReasonNoItems,
		ReasonInvalidQuantity,
		ReasonInvalidMoney,
		ReasonTotalMismatch,
		ReasonUnknownCurrency,
		ReasonPayloadTooLarge,
		ReasonConflictingDuplicate,
		ReasonRejectedByTaxService,
		ReasonInvalidOrderID,
	}
}

// InvalidError says a message will never be valid, so retrying it is useless.
// Detail is a short human sentence that never contains the whole payload
// (quoted values are truncated).
type InvalidError struct {
	Reason Reason
	Detail string
}

// Invalid returns an *InvalidError with the given reason and detail.
func Invalid(reason Reason, detail string) *InvalidError {
	return &InvalidError{Reason: reason, Detail: detail}
}

// Error returns "<reason>: <detail>", or just the reason when Detail is empty.
func (e *InvalidError) Error() string {
	if e.Detail == "" {
		return string(e.Reason)
	}
	return string(e.Reason) + ": " + e.Detail
}

// Invalid returns the reason and detail as plain strings, so other packages
// can recognise an invalid message with errors.As through a small interface,
// without importing this package:
//
//	var inv interface{ Invalid() (reason, detail string) }
//	if errors.As(err, &inv) { ... }
func (e *InvalidError) Invalid() (reason, detail string) {
	return string(e.Reason), e.Detail
}
