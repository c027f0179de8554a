package payment

import "github.com/homingdlq/homing/invalid"

// Reason codes of a rejected payment message. They are stable: dashboards,
// alarms and the people who fix messages at the source match them. Never
// rename one; only add.
const (
	ReasonNotJSON              = "not-json"                         // the body is not a JSON object
	ReasonUnknownEventType     = "unknown-event-type"               // eventType is not payment.captured
	ReasonUnknownVersion       = "unknown-version"                  // version is not 1
	ReasonMissingPaymentID     = "missing-payment-id"               // paymentId is absent or empty
	ReasonBadPaymentID         = "payment-id-outside-grammar"       // paymentId breaks its grammar
	ReasonMissingAccountID     = "missing-account-id"               // accountId is absent or empty
	ReasonBadAccountID         = "account-id-outside-grammar"       // accountId breaks its grammar
	ReasonGroupNotAccount      = "group-not-account"                // FIFO: MessageGroupId differs from accountId
	ReasonBadAmount            = "invalid-amount"                   // amount is not a positive decimal string with at most 2 decimals
	ReasonUnknownCurrency      = "unknown-currency"                 // currency is not one the ledger keeps
	ReasonBadCapturedAt        = "invalid-captured-at"              // capturedAt is not an RFC 3339 time
	ReasonPayloadTooLarge      = invalid.ReasonPayloadTooLarge      // the body is over the configured size
	ReasonConflictingDuplicate = invalid.ReasonConflictingDuplicate // the paymentId was applied before with another payload
)
